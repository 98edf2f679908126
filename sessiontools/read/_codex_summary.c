/* sessiontools.read._native.codex_summary: what `inspect` reads of a Codex rollout, in one pass over
 * its bytes without a Python object per line (issue 28; the design of _claude.c's claude_summary).
 *
 * codex_summary(data, limit, high, total_high) -> None, or
 *   (meta, lines, roles, ids, compactions, billed, skipped, window, model, provider, events, schema)
 * where meta = (id, cwd, cli_version, model_provider, originator) or None; lines, roles (bytes of
 * R_* codes) and ids are the path's messages; compactions = [(index, line, manual, tokens_before,
 * tokens_after, provider_written, first_kept, timestamp)]; billed = [(line, model, timestamp, None,
 * None, input, cache_read, 0, output, 0)] (`transcript.model.BilledRows`' rows); skipped = the summarisation calls dropped; events = [(line,
 * timestamp)] of `context_compacted` events. It is `transcript.codex._Builder` and
 * `codex_billed.billed` over `read.codex.load`'s records, for the rollouts it is sure of:
 *
 * None (the ordinary reading then) for anything else: a line _codex_json.c is not sure of, a line
 * over `limit` bytes (0: any), a blank line, a NUL byte, a line without an object payload (a legacy
 * rollout), an `ordinal` on some lines but not on line 1 or the reverse, a line type other than session_meta, turn_context,
 * event_msg, response_item, token_usage_record, compacted, world_state, state; any field
 * `read.codex.checks.check_line` would drop (so no diagnostic is ever lost); an `error` event or a
 * task event carrying an error (overflows); a session_meta nesting `meta`, with an object `source`
 * (a spawned subagent's replay), or after another; a response item whose role is not a string or
 * null; a compacted line whose history holds an item that is no object or an encrypted one, or whose
 * summarisation call's reply is not an assistant message item; a text whose Unicode whitespace at
 * an end `str.strip` would see; no billed call (`Transcript.billed_requests` then reads the paths).
 * tests/read/test_codex_summary.py holds inspect's JSON equal both ways and counts the files taken. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "_codex_json.h"

enum { R_SYSTEM, R_USER, R_ASSISTANT, R_TOOL, R_SUMMARY, R_OTHER };
#define BAIL (-1)
#define NOMEM (-2)
#define TRY(x) do { int r_ = (x); if (r_ < 0) return r_; } while (0)

static const char SUMMARY_PREFIX[] = "Another language model started to solve this problem and produced a summary of "
                                     "its thinking process.";
static const char INJECTED_PREFIX[] = "Warning: apply_patch was requested via";
static const char *USAGE_KEYS[6] = {"input_tokens", "cached_input_tokens", "output_tokens",
                                    "reasoning_output_tokens", "total_tokens", "cache_write_input_tokens"};

typedef struct {
    int present;
    int64_t f[6];
} U;

typedef struct {
    int line, role, hist;  /* hist: its index in a compacted line's history, else -1 */
    size_t start, end;     /* its line's bytes */
    int is_message;        /* a `message` item (its text is its parts') */
} Msg;

typedef struct {
    const char *d;
    JToks ts;
    int64_t high, total_high;
    char *buf;
    size_t cap;
    Msg *msgs;
    int n_msgs, cap_msgs;
    PyObject *ids, *compactions, *billed, *events, *model, *provider, *meta;
    int *req_index;
    int64_t *req_total;
    int n_req, cap_req;
    int first_reply, reply_less, awaiting, skipped, metas, has_agent_total;
    int ordinal;      /* line 1 carries an `ordinal` (a current rollout; else a 2025 one) */
    int count_first;  /* -1 until the first request: a 2025 rollout whose counts come before their items */
    int pending;      /* count-first: a request waiting for its first reply message... */
    int64_t pending_total;  /* ...and its usage's total */
    int64_t agent_total, window;
    int has_window;
    U prev_total, billed_prev;
    char trigger_compact;  /* the turn's trigger names "compact" */
} S;

static int keyis(S *s, int k, const char *name) {
    const JTok *t = &s->ts.t[k];
    size_t len = strlen(name);
    return t->end - t->start == len && memcmp(s->d + t->start, name, len) == 0;
}

#define KIND(i) (s->ts.t[i].kind)
#define GET(obj, key) jget(s->d, &s->ts, obj, key)

/* A Python str of string token i (a new reference), NULL with an error set. */
static PyObject *pystr(S *s, int i) {
    const JTok *t = &s->ts.t[i];
    if (!t->esc)
        return PyUnicode_DecodeUTF8(s->d + t->start, (Py_ssize_t)(t->end - t->start), "strict");
    ptrdiff_t n = junescape(s->d, t, &s->buf, &s->cap);
    if (n < 0)
        return PyErr_NoMemory();
    return PyUnicode_DecodeUTF8(s->buf, n, "strict");
}

/* `_str`: the string at `key` of obj, or None (new references). */
static PyObject *str_or_none(S *s, int obj, const char *key) {
    int v = GET(obj, key);
    if (v >= 0 && KIND(v) == T_STR)
        return pystr(s, v);
    Py_RETURN_NONE;
}

/* A usage object as `checks._usage` checks it (null: none; else every count present an int in
 * [0, limit]) and `load.token_usage` reads it (absent counts 0). */
static int usage(S *s, int tok, int64_t limit, U *u) {
    u->present = 0;
    if (tok < 0 || KIND(tok) == T_NULL)
        return 0;
    if (KIND(tok) != T_OBJ)
        return BAIL;
    for (int k = 0; k < 6; k++) {
        int v = GET(tok, USAGE_KEYS[k]);
        if (v < 0) {
            u->f[k] = 0;
            continue;
        }
        if (KIND(v) != T_NUM || !s->ts.t[v].is_int || s->ts.t[v].value > limit)
            return BAIL;
        u->f[k] = s->ts.t[v].value;
    }
    u->present = 1;
    return 0;
}

static int same(const U *a, const U *b) {
    return a->present == b->present && (!a->present || memcmp(a->f, b->f, sizeof a->f) == 0);
}

static int blocks_ok(S *s, int arr) {  /* `checks.BLOCK` on every block (objects only, here) */
    int i = arr + 1;
    for (int e = 0; e < s->ts.t[arr].size; e++, i = s->ts.t[i].skip) {
        if (KIND(i) != T_OBJ)
            return 0;
        int t = GET(i, "type"), x = GET(i, "text");
        if ((t >= 0 && KIND(t) != T_STR) || (x >= 0 && KIND(x) != T_STR))
            return 0;
    }
    return 1;
}

static int count_ok(S *s, int v, int64_t limit) {
    return KIND(v) == T_NUM && s->ts.t[v].is_int && s->ts.t[v].value <= limit;
}

/* `checks.check_line`'s checks of payload p: 0 when it would drop nothing, else BAIL. */
static int check_payload(S *s, int p) {
    int i = p + 1;
    for (int m = 0; m < s->ts.t[p].size; m++) {
        int k = i, v = i + 1, kind = KIND(v);
        i = s->ts.t[v].skip;
        if (keyis(s, k, "type") || keyis(s, k, "arguments") || keyis(s, k, "input") || keyis(s, k, "name") ||
            keyis(s, k, "call_id")) {
            if (kind != T_STR) return BAIL;
        } else if (keyis(s, k, "role") || keyis(s, k, "model") || keyis(s, k, "message") || keyis(s, k, "turn_id")) {
            if (kind != T_STR && kind != T_NULL) return BAIL;
        } else if (keyis(s, k, "content")) {
            if (kind != T_STR && kind != T_NULL && !(kind == T_ARR && blocks_ok(s, v))) return BAIL;
        } else if (keyis(s, k, "output")) {
            if (kind != T_STR && kind != T_OBJ && !(kind == T_ARR && blocks_ok(s, v))) return BAIL;
        } else if (keyis(s, k, "model_context_window")) {
            if (!count_ok(s, v, s->total_high)) return BAIL;
        } else if (keyis(s, k, "info")) {
            if (kind == T_NULL) continue;
            if (kind != T_OBJ) return BAIL;
            int w = GET(v, "model_context_window");
            U u;
            if (w >= 0 && !count_ok(s, w, s->total_high)) return BAIL;
            TRY(usage(s, GET(v, "total_token_usage"), s->total_high, &u));
            TRY(usage(s, GET(v, "last_token_usage"), s->high, &u));
        } else if (keyis(s, k, "usage")) {
            U u;
            TRY(usage(s, v, s->high, &u));
        } else if (keyis(s, k, "latest_token_usage_record")) {
            U u;
            if (kind == T_OBJ)
                TRY(usage(s, GET(v, "usage"), s->high, &u));
        }
    }
    return 0;
}

/* Whether string token i, unescaped, starts with `prefix`. */
static int starts(S *s, int i, const char *prefix) {
    size_t len = strlen(prefix);
    const JTok *t = &s->ts.t[i];
    if (!t->esc)
        return t->end - t->start >= len && memcmp(s->d + t->start, prefix, len) == 0;
    ptrdiff_t n = junescape(s->d, t, &s->buf, &s->cap);
    return n >= (ptrdiff_t)len && memcmp(s->buf, prefix, len) == 0;
}

/* Whether any text part of a message's content starts with `prefix` (`codex_items._text_parts`). */
static int any_part_starts(S *s, int item, const char *prefix) {
    int c = GET(item, "content");
    if (c < 0)
        return 0;
    if (KIND(c) == T_STR)
        return starts(s, c, prefix);
    if (KIND(c) != T_ARR)
        return 0;
    int i = c + 1;
    for (int e = 0; e < s->ts.t[c].size; e++, i = s->ts.t[i].skip) {
        int x = KIND(i) == T_OBJ ? GET(i, "text") : -1;
        if (x >= 0 && KIND(x) == T_STR && starts(s, x, prefix))
            return 1;
    }
    return 0;
}

static const char *ROLE_NAMES[4] = {"user", "assistant", "developer", "system"};
static const int ROLE_CODES[4] = {R_USER, R_ASSISTANT, R_SYSTEM, R_SYSTEM};

static int in_set(S *s, int tok, const char *const *names) {
    for (; *names; names++)
        if (keyis(s, tok, *names))
            return 1;
    return 0;
}

static const char *TOOL_ITEMS[] = {"function_call_output", "custom_tool_call_output", "tool_search_output", NULL};
static const char *CALLS[] = {"function_call", "custom_tool_call", "local_shell_call", NULL};
static const char *ASSISTANT_ITEMS[] = {"function_call", "custom_tool_call", "local_shell_call", "reasoning",
                                        "web_search_call", "image_generation_call", "tool_search_call", NULL};

static int flush_pending(S *s);

/* A message (its id stolen) at the end of the path; its index. */
static int push_msg(S *s, PyObject *id, int line, int role, int hist, size_t start, size_t end, int is_message) {
    int bad = PyList_Append(s->ids, id);
    Py_DECREF(id);
    if (bad)
        return NOMEM;
    if (s->n_msgs == s->cap_msgs) {
        int cap = s->cap_msgs ? s->cap_msgs * 2 : 256;
        Msg *m = PyMem_Realloc(s->msgs, (size_t)cap * sizeof(Msg));
        if (m == NULL) {
            PyErr_NoMemory();
            return NOMEM;
        }
        s->msgs = m, s->cap_msgs = cap;
    }
    s->msgs[s->n_msgs] = (Msg){line, role, hist, start, end, is_message};
    int n = s->n_msgs++;
    if (role == R_ASSISTANT && s->first_reply < 0) {
        s->first_reply = n;
        TRY(flush_pending(s));
    }
    return n;
}

/* A response item as `codex_items.item_message` makes it: its role and id (into s->ids). */
static int add(S *s, int item, int line, int hist, size_t start, size_t end) {
    int t = GET(item, "type");
    if (t < 0 || KIND(t) != T_STR || s->ts.t[t].esc)
        return BAIL;
    int role, id_key = 0, is_message = 0; /* id_key: 0 none, 1 id, 2 call_id else id */
    if (in_set(s, t, TOOL_ITEMS)) {
        role = R_TOOL, id_key = 2;
    } else if (in_set(s, t, CALLS)) {
        role = R_ASSISTANT, id_key = 2;
    } else if (keyis(s, t, "compaction") || keyis(s, t, "compaction_summary")) {
        role = R_SUMMARY;
    } else if (keyis(s, t, "message")) {
        int r = GET(item, "role");
        is_message = 1;
        role = R_OTHER, id_key = 1;
        if (r >= 0 && KIND(r) == T_STR) {
            for (int k = 0; k < 4; k++)
                if (keyis(s, r, ROLE_NAMES[k]))
                    role = ROLE_CODES[k];
        } else if (r >= 0 && KIND(r) != T_NULL) {
            return BAIL;
        }
        if (role == R_USER && any_part_starts(s, item, SUMMARY_PREFIX))
            role = R_SUMMARY, id_key = 0;
        else if (role == R_USER && any_part_starts(s, item, INJECTED_PREFIX))
            role = R_OTHER;
    } else {
        role = in_set(s, t, ASSISTANT_ITEMS) ? R_ASSISTANT : R_OTHER, id_key = 1;
    }
    PyObject *id = NULL;
    if (id_key == 2) {
        int c = GET(item, "call_id");
        if (c >= 0 && KIND(c) == T_STR)
            id = pystr(s, c);
    }
    if (id == NULL && !PyErr_Occurred() && id_key) {
        int c = GET(item, "id");
        if (c >= 0 && KIND(c) == T_STR)
            id = pystr(s, c);
    }
    if (PyErr_Occurred())
        return NOMEM;
    if (id == NULL)
        id = Py_NewRef(Py_None);
    return push_msg(s, id, line, role, hist, start, end, is_message);
}


static int push_request(S *s, int index, int64_t total) {
    if (s->n_req == s->cap_req) {
        int cap = s->cap_req ? s->cap_req * 2 : 256;
        int *ix = PyMem_Realloc(s->req_index, (size_t)cap * sizeof(int));
        if (ix == NULL) goto nomem;
        s->req_index = ix;
        int64_t *tt = PyMem_Realloc(s->req_total, (size_t)cap * sizeof(int64_t));
        if (tt == NULL) goto nomem;
        s->req_total = tt;
        s->cap_req = cap;
    }
    s->req_index[s->n_req] = index;
    s->req_total[s->n_req++] = total;
    return 0;
nomem:
    PyErr_NoMemory();
    return NOMEM;
}

/* `_Builder.append_request` (its index and total: what inspect reads of a path's requests). */
static int append_request(S *s, int64_t total) {
    int index = s->first_reply >= 0 ? s->first_reply : (s->n_msgs > 0 ? s->n_msgs - 1 : 0);
    s->reply_less = s->first_reply < 0 && s->count_first != 1;
    TRY(push_request(s, index, total));
    s->agent_total = total, s->has_agent_total = 1;
    if (s->count_first != 1)
        s->first_reply = -1;
    return 0;
}

/* `_Builder.flush_pending`: count-first, the waiting count becomes a request. */
static int flush_pending(S *s) {
    if (!s->pending)
        return 0;
    s->pending = 0;
    return append_request(s, s->pending_total);
}

static PyObject *ts_of(S *s, int ts) {
    if (ts < 0)
        Py_RETURN_NONE;
    return pystr(s, ts);
}

/* An `event_msg` token_count (`_Builder.on_agent_count`, then `codex_billed.billed`'s step). */
static int on_count(S *s, int line, int ts, int p) {
    int info = GET(p, "info");
    if (info < 0 || KIND(info) != T_OBJ)
        return 0;  /* a rate-limit-only count */
    U total, last;
    TRY(usage(s, GET(info, "total_token_usage"), s->total_high, &total));
    TRY(usage(s, GET(info, "last_token_usage"), s->high, &last));
    int w = GET(info, "model_context_window");
    if (w >= 0 && s->ts.t[w].value)
        s->window = s->ts.t[w].value, s->has_window = 1;
    int zero = last.present && last.f[0] == 0 && last.f[2] == 0;
    if (zero && s->awaiting >= 0) {
        PyObject *c = PyList_GET_ITEM(s->compactions, s->awaiting), *after = PyLong_FromLongLong(last.f[4]);
        if (after == NULL)
            return NOMEM;
        PyList_SetItem(c, 4, after);
        s->awaiting = -1;
    }
    if (!(total.present && same(&total, &s->prev_total))) {
        s->prev_total = total;
        if (last.present && !zero) {
            s->awaiting = -1;
            if (s->count_first < 0)
                s->count_first = !s->ordinal && s->first_reply < 0;
            if (s->count_first) {
                TRY(flush_pending(s));
                s->pending = 1, s->pending_total = last.f[0] + last.f[2], s->first_reply = -1;
            } else {
                TRY(append_request(s, last.f[0] + last.f[2]));
            }
        }
    }
    if (!total.present && !last.present)
        return 0;
    if (total.present && same(&total, &s->billed_prev))
        return 0;
    U use = last;
    if (!last.present) {
        use = total;
        if (s->billed_prev.present)
            for (int k = 0; k < 6; k++)
                use.f[k] = total.f[k] > s->billed_prev.f[k] ? total.f[k] - s->billed_prev.f[k] : 0;
    }
    if (total.present)
        s->billed_prev = total;
    int64_t cached = use.f[1] < use.f[0] ? use.f[1] : use.f[0];
    if (use.f[0] + use.f[2] <= 0)
        return 0;
    PyObject *t = ts_of(s, ts);
    if (t == NULL)
        return NOMEM;
    /* (`transcript.model.BilledRows`' row: no response id, stop reason or cache write) */
    PyObject *row = Py_BuildValue("(iONOOLLiLi)", line, s->model ? s->model : Py_None, t, Py_None, Py_None,
                                  use.f[0] - cached, cached, 0, use.f[2], 0);
    if (row == NULL || PyList_Append(s->billed, row) < 0) {
        Py_XDECREF(row);
        return NOMEM;
    }
    Py_DECREF(row);
    return 0;
}

static int on_event(S *s, int line, int ts, int p) {
    int t = GET(p, "type");
    if (t < 0 || KIND(t) != T_STR)
        return 0;
    if (keyis(s, t, "token_count"))
        return on_count(s, line, ts, p);
    if (keyis(s, t, "task_started") || keyis(s, t, "task_complete") || keyis(s, t, "turn_aborted")) {
        int e = GET(p, "error"), w = GET(p, "model_context_window");
        if (e >= 0 && KIND(e) != T_NULL)
            return BAIL;  /* (an overflow, maybe: the ordinary way) */
        if (w >= 0 && s->ts.t[w].value)
            s->window = s->ts.t[w].value, s->has_window = 1;
        if (keyis(s, t, "task_started")) {
            int a = GET(p, "turn_attribution"), tr = a >= 0 && KIND(a) == T_OBJ ? GET(a, "turn_trigger") : -1;
            s->trigger_compact = 0;
            if (tr >= 0 && KIND(tr) == T_STR) {
                ptrdiff_t n = junescape(s->d, &s->ts.t[tr], &s->buf, &s->cap);
                if (n < 0)
                    return NOMEM;
                for (ptrdiff_t k = 0; k + 7 <= n; k++)
                    if (memcmp(s->buf + k, "compact", 7) == 0)
                        s->trigger_compact = 1;
            }
        }
        return 0;
    }
    if (keyis(s, t, "error"))
        return BAIL;
    if (keyis(s, t, "context_compacted")) {
        PyObject *stamp = ts_of(s, ts);
        if (stamp == NULL)
            return NOMEM;
        PyObject *row = Py_BuildValue("(iN)", line, stamp);
        if (row == NULL || PyList_Append(s->events, row) < 0) {
            Py_XDECREF(row);
            return NOMEM;
        }
        Py_DECREF(row);
    }
    return 0;
}

static int on_meta(S *s, int line, int p) {
    int m = GET(p, "meta"), src = GET(p, "source");
    if (++s->metas > 1 || (m >= 0 && KIND(m) == T_OBJ) || (src >= 0 && KIND(src) == T_OBJ))
        return BAIL;
    s->meta = Py_BuildValue("(NNNNN)", str_or_none(s, p, "id"), str_or_none(s, p, "cwd"),
                            str_or_none(s, p, "cli_version"), str_or_none(s, p, "model_provider"),
                            str_or_none(s, p, "originator"));
    if (s->meta == NULL)
        return NOMEM;
    s->provider = Py_NewRef(PyTuple_GET_ITEM(s->meta, 3));  /* (`provider or model_provider`: the only meta) */
    int bi = GET(p, "base_instructions");
    if (bi >= 0 && KIND(bi) == T_OBJ)
        bi = GET(bi, "text");
    if (bi >= 0 && KIND(bi) == T_STR && s->ts.t[bi].end > s->ts.t[bi].start)
        TRY(push_msg(s, Py_NewRef(Py_None), line, R_SYSTEM, -1, 0, 0, 0));
    return 0;
}

/* The length of the character `str.isspace` sees at text[a:] (0: none; U+0085, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 and the ASCII ones), forward. */
static int space_at(const unsigned char *t, size_t a, size_t b) {
    unsigned char c = t[a];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f))
        return 1;
    if (c == 0xC2 && a + 1 < b && (t[a + 1] == 0x85 || t[a + 1] == 0xA0))
        return 2;
    if (a + 2 < b && c == 0xE1 && t[a + 1] == 0x9A && t[a + 2] == 0x80)
        return 3;
    if (a + 2 < b && c == 0xE2 && t[a + 1] == 0x80 &&
        (t[a + 2] <= 0x8A || t[a + 2] == 0xA8 || t[a + 2] == 0xA9 || t[a + 2] == 0xAF))
        return 3;
    if (a + 2 < b && c == 0xE2 && t[a + 1] == 0x81 && t[a + 2] == 0x9F)
        return 3;
    if (a + 2 < b && c == 0xE3 && t[a + 1] == 0x80 && t[a + 2] == 0x80)
        return 3;
    return 0;
}

/* text[*a:*b] (valid UTF-8) without what `str.strip` strips at its ends. */
static int strip(const char *text, size_t *a, size_t *b) {
    const unsigned char *t = (const unsigned char *)text;
    int k;
    while (*a < *b && (k = space_at(t, *a, *b)) > 0)
        *a += (size_t)k;
    while (*b > *a) {
        size_t c = *b - 1;
        while (c > *a && (t[c] & 0xC0) == 0x80)
            c--;  /* (the start of the last character) */
        if (space_at(t, c, *b) != (int)(*b - c))
            break;
        *b = c;
    }
    return 0;
}

/* The text of message `m` (`Message.text` of a `message` item: its non-empty parts joined by
 * newlines) into s->buf from `n` on, read again from its line; its end, or BAIL. */
static ptrdiff_t message_text(S *s, const Msg *m) {
    JToks saved = s->ts;
    s->ts = (JToks){NULL, 0, 0};
    ptrdiff_t n = BAIL;
    int r = jtokenize(s->d, m->start, m->end, &s->ts);
    if (r < 0) {
        n = r;
        goto done;
    }
    int item = GET(0, "payload");
    if (m->hist >= 0) {
        int h = GET(item, "replacement_history");
        item = h + 1;
        for (int k = 0; k < m->hist; k++)
            item = s->ts.t[item].skip;
    }
    int c = GET(item, "content");
    char *out = NULL;
    size_t len = 0, cap = 0;
    int parts = c < 0 ? 0 : KIND(c) == T_STR ? 1 : KIND(c) == T_ARR ? s->ts.t[c].size : 0;
    int i = c >= 0 && KIND(c) == T_ARR ? c + 1 : c;
    for (int e = 0; e < parts; e++, i = s->ts.t[i].skip) {
        int x = i == c ? c : KIND(i) == T_OBJ ? GET(i, "text") : -1;  /* (a list's other values: no part) */
        if (x < 0 || KIND(x) != T_STR || s->ts.t[x].end == s->ts.t[x].start)
            continue;
        ptrdiff_t k = junescape(s->d, &s->ts.t[x], &s->buf, &s->cap);
        size_t need = len + (size_t)k + 1;
        if (k < 0 || (need > cap && (out = PyMem_Realloc(out, cap = need * 2)) == NULL)) {
            PyErr_NoMemory();
            n = NOMEM;
            goto done;
        }
        if (len)
            out[len++] = '\n';
        memcpy(out + len, s->buf, (size_t)k);
        len += (size_t)k;
    }
    if (len > s->cap) {
        char *b = PyMem_Realloc(s->buf, len);
        if (b == NULL) {
            PyMem_Free(out);
            PyErr_NoMemory();
            n = NOMEM;
            goto done;
        }
        s->buf = b, s->cap = len;
    }
    if (len)
        memcpy(s->buf, out, len);
    PyMem_Free(out);
    n = (ptrdiff_t)len;
done:
    PyMem_Free(s->ts.t);
    s->ts = saved;
    return n;
}

/* A `compacted` line (`_Builder.feed`'s Compacted branch: `pop_summary_call`, `on_compacted`). */
static int on_compacted(S *s, int line, int ts, int p, size_t start, size_t end) {
    int msg = GET(p, "message"), hist = GET(p, "replacement_history");
    if (msg >= 0 && KIND(msg) != T_STR && KIND(msg) != T_NULL)
        return BAIL;
    int items = hist >= 0 && KIND(hist) == T_ARR ? s->ts.t[hist].size : -1;  /* (-1: older, not recorded) */
    int i = hist + 1;
    for (int k = 0; k < items; k++, i = s->ts.t[i].skip) {
        if (KIND(i) != T_OBJ)
            return BAIL;
        int t = GET(i, "type");
        if (t >= 0 && KIND(t) == T_STR && (keyis(s, t, "compaction") || keyis(s, t, "compaction_summary")) &&
            GET(i, "encrypted_content") >= 0)
            return BAIL;  /* (an encrypted summary) */
    }
    /* `Compacted.message` and `.summary`, in a buffer of their own */
    size_t mlen = 0, sa = 0, sb = 0;
    char *text = NULL;
    if (msg >= 0 && KIND(msg) == T_STR) {
        ptrdiff_t n = junescape(s->d, &s->ts.t[msg], &s->buf, &s->cap);
        if (n < 0 || (text = PyMem_Malloc((size_t)n + 1)) == NULL) {
            PyErr_NoMemory();
            return NOMEM;
        }
        memcpy(text, s->buf, (size_t)n);
        mlen = (size_t)n;
    }
    size_t ma = 0, mb = mlen;
    int r = strip(text, &ma, &mb);
    sb = mlen;
    if (r == 0 && mlen >= strlen(SUMMARY_PREFIX) && memcmp(text, SUMMARY_PREFIX, strlen(SUMMARY_PREFIX)) == 0) {
        const char *at = NULL;
        for (size_t k = 0; k + 10 <= mlen && at == NULL; k++)
            if (memcmp(text + k, "analysis:\n", 10) == 0)
                at = text + k;
        if (at != NULL) {
            sa = (size_t)(at - text) + 10;
        } else {
            const char *nl = memchr(text, '\n', mlen);
            sa = nl ? (size_t)(nl - text) + 1 : 0;
        }
    }
    if (r == 0)
        r = strip(text ? text : "", &sa, &sb);
    int encrypted = ma == mb && items >= 0, has_summary = sa < sb;  /* (`not message.strip()`; `summary` not None) */
    int saved_has = s->has_agent_total;
    int64_t saved_total = s->agent_total;
    if (r == 0 && s->pending) {  /* pop_summary_call: count-first, a count with no reply */
        s->pending = 0, s->skipped++;
    } else if (r == 0 && s->n_req > 0) {  /* pop_summary_call */
        if (s->reply_less) {
            s->n_req--, s->reply_less = 0, s->skipped++;
        } else {
            int idx = s->req_index[s->n_req - 1];
            if (has_summary && s->n_msgs - idx == 1 && s->msgs[idx].role == R_ASSISTANT) {
                ptrdiff_t n = s->msgs[idx].is_message ? message_text(s, &s->msgs[idx]) : BAIL;
                size_t ta = 0, tb = n > 0 ? (size_t)n : 0;
                if (n < 0 || strip(s->buf, &ta, &tb) < 0) {
                    r = n < 0 ? (int)n : BAIL;
                } else if (tb - ta == sb - sa && memcmp(s->buf + ta, text + sa, tb - ta) == 0) {
                    s->n_req--, s->n_msgs--, s->skipped++;
                    if (PyList_SetSlice(s->ids, s->n_msgs, s->n_msgs + 1, NULL) < 0)
                        r = NOMEM;
                }
            }
        }
    }
    PyMem_Free(text);
    if (r < 0)
        return r;
    s->first_reply = -1;
    int first = s->n_msgs, summary_index = -1;
    i = hist + 1;
    for (int k = 0; k < items; k++, i = s->ts.t[i].skip) {
        int m = add(s, i, line, k, start, end);
        if (m < 0)
            return m;
        if (s->msgs[m].role == R_SUMMARY)
            summary_index = m;
    }
    s->first_reply = -1;
    if (summary_index < 0)
        TRY(summary_index = push_msg(s, Py_NewRef(Py_None), line, R_SUMMARY, -1, 0, 0, 0));
    s->has_agent_total = s->n_req > 0 || saved_has;
    s->agent_total = s->n_req > 0 ? s->req_total[s->n_req - 1] : saved_total;
    PyObject *before = s->has_agent_total ? PyLong_FromLongLong(s->agent_total) : Py_NewRef(Py_None);
    PyObject *stamp = ts_of(s, ts);
    if (before == NULL || stamp == NULL) {
        Py_XDECREF(before);
        Py_XDECREF(stamp);
        return NOMEM;
    }
    PyObject *c = Py_BuildValue("[iiNNOiiiiN]", summary_index, line, PyBool_FromLong(s->trigger_compact), before,
                                Py_None, encrypted, items >= 0 ? first : summary_index, summary_index, s->n_msgs, stamp);
    if (c == NULL || PyList_Append(s->compactions, c) < 0) {
        Py_XDECREF(c);
        return NOMEM;
    }
    Py_DECREF(c);
    s->awaiting = (int)PyList_GET_SIZE(s->compactions) - 1;
    return 0;
}

/* One line: 0, or BAIL / NOMEM. */
static int on_line(S *s, int line, size_t start, size_t end) {
    int r = jtokenize(s->d, start, end, &s->ts);
    if (r < 0)
        return r;
    if (KIND(0) != T_OBJ)
        return BAIL;
    int ts = GET(0, "timestamp"), type = GET(0, "type"), p = GET(0, "payload");
    int ordinal = GET(0, "ordinal") >= 0;
    if (line == 1)
        s->ordinal = ordinal;
    if ((ts >= 0 && KIND(ts) != T_STR) || type < 0 || KIND(type) != T_STR || p < 0 || KIND(p) != T_OBJ ||
        ordinal != s->ordinal)
        return BAIL;  /* (a line the checks change, a legacy line, one without an object payload, ordinals on some) */
    TRY(check_payload(s, p));
    if (keyis(s, type, "event_msg"))
        return on_event(s, line, ts, p);
    if (keyis(s, type, "response_item")) {
        r = add(s, p, line, -1, start, end);
        return r < 0 ? r : 0;
    }
    if (keyis(s, type, "token_usage_record") || keyis(s, type, "world_state") || keyis(s, type, "state"))
        return 0;
    if (keyis(s, type, "turn_context")) {
        int m = GET(p, "model");
        if (m >= 0 && KIND(m) == T_STR && s->ts.t[m].end > s->ts.t[m].start) {
            PyObject *model = pystr(s, m);
            if (model == NULL)
                return NOMEM;
            Py_XSETREF(s->model, model);
        }
        return 0;
    }
    if (keyis(s, type, "session_meta"))
        return on_meta(s, line, p);
    if (keyis(s, type, "compacted"))
        return on_compacted(s, line, ts, p, start, end);
    return BAIL;
}

static PyObject *result(S *s) {
    PyObject *roles = PyBytes_FromStringAndSize(NULL, s->n_msgs), *lines = PyList_New(s->n_msgs);
    if (roles == NULL || lines == NULL) {
        Py_XDECREF(roles);
        Py_XDECREF(lines);
        return NULL;
    }
    for (int k = 0; k < s->n_msgs; k++) {
        PyBytes_AS_STRING(roles)[k] = (char)s->msgs[k].role;
        PyObject *n = PyLong_FromLong(s->msgs[k].line);
        if (n == NULL) {
            Py_DECREF(roles);
            Py_DECREF(lines);
            return NULL;
        }
        PyList_SET_ITEM(lines, k, n);
    }
    PyObject *window = s->has_window ? PyLong_FromLongLong(s->window) : Py_NewRef(Py_None);
    return Py_BuildValue("(ONNOOOiNOOOs)", s->meta ? s->meta : Py_None, lines, roles, s->ids, s->compactions,
                         s->billed, s->skipped, window, s->model ? s->model : Py_None,
                         s->provider ? s->provider : Py_None, s->events, s->ordinal ? "current" : "2025");
}

PyObject *codex_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    long long limit, high, total_high;
    if (nargs != 4 || PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "codex_summary(data, limit, high, total_high)");
        return NULL;
    }
    limit = PyLong_AsLongLong(args[1]);
    high = PyLong_AsLongLong(args[2]);
    total_high = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred()) {
        PyBuffer_Release(&view);
        return NULL;
    }
    S s;
    memset(&s, 0, sizeof s);
    s.d = view.buf, s.high = high, s.total_high = total_high, s.first_reply = s.awaiting = s.count_first = -1;
    s.ids = PyList_New(0), s.compactions = PyList_New(0), s.billed = PyList_New(0), s.events = PyList_New(0);
    PyObject *out = NULL;
    int r = s.ids && s.compactions && s.billed && s.events ? 0 : NOMEM;
    if (r == 0 && !jutf8(s.d, (size_t)view.len))
        r = BAIL;  /* (invalid UTF-8 somewhere: its line's diagnostic, the ordinary way) */
    size_t at = 0, size = (size_t)view.len;
    int line = 0;
    while (r == 0 && at < size) {
        const char *nl = memchr(s.d + at, '\n', size - at);
        size_t stop = nl ? (size_t)(nl - s.d) : size;
        line++;
        if (stop == at || (limit > 0 && (long long)(stop - at) > limit))
            r = BAIL;  /* (a blank line, a line over the limit: their diagnostics, the ordinary way) */
        else
            r = on_line(&s, line, at, stop);
        at = stop + 1;
    }
    if (r == 0)
        r = flush_pending(&s);
    if (r == 0 && line > 0 && PyList_GET_SIZE(s.billed) > 0)
        out = result(&s);
    else if (r != NOMEM)
        out = Py_NewRef(Py_None);
    Py_XDECREF(s.ids);
    Py_XDECREF(s.compactions);
    Py_XDECREF(s.billed);
    Py_XDECREF(s.events);
    Py_XDECREF(s.meta);
    Py_XDECREF(s.model);
    Py_XDECREF(s.provider);
    PyMem_Free(s.ts.t);
    PyMem_Free(s.buf);
    PyMem_Free(s.msgs);
    PyMem_Free(s.req_index);
    PyMem_Free(s.req_total);
    PyBuffer_Release(&view);
    return out;
}
