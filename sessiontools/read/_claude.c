/* sessiontools.read._native.claude_summary: what `inspect` reads of a Claude Code session (a
 * transcript file and its subagent files), computed in one C pass over the bytes (issue 28),
 * without a Python object per line.
 *
 * claude_summary(files: list of bytes, limit, high, total_high) -> None or a tuple (see `result`).
 * None means "not sure": the session goes the ordinary way (orjson, the checks, `claude_code`'s
 * transcript), which gives every diagnostic. This scanner gives none but the two notices of a
 * clean file (an unknown line type, a parent not in the file), so it says None at anything else:
 * a line over `limit` bytes (0: any), one the JSON scanner of _project.c is not sure of (it is
 * included, not copied), not an object, without a type, a conversation line without a uuid, a
 * user/assistant line without a message object, a duplicated uuid, an escaped key or string where
 * a value is compared, a duplicated key among those read, a checked field (`read.claude_code.
 * checks`) off its fast mark (`high`/`total_high`: the counts' limits), an attachment Claude Code
 * renders, a synthetic API error reply, a boundary whose logical parent is not in the file and has
 * no parent (`claude_paths._written_before`), a non-scalar entrypoint.
 * The rules are `transcript.claude_code`'s, `claude_paths`' and `claude_usage`'s, in their order;
 * tests/read/test_claude_summary.py holds the result equal to the ordinary way's. */
#define project_lines claude_base_project_lines
#define project_init claude_base_project_init
#define fast_ok claude_fast_ok
#include "_project.c"
#undef project_lines
#undef project_init
#undef fast_ok
#include <stdlib.h>

int claude_fast_ok(PyObject *fast, PyObject *v) { return 0; } /* (the scanner's fast marks: unused here) */

typedef struct {
    const unsigned char *s;
    Py_ssize_t n; /* -1: absent (or not a non-empty string where that is what counts) */
    int esc;      /* its bytes hold an escape (only a value given back, never compared: `shown`) */
} Str;

enum { T_USER = 1, T_ASSISTANT, T_SYSTEM, T_ATTACHMENT, T_APIREQ, T_META, T_UNKNOWN };
enum { R_USER, R_ASSISTANT, R_TOOL, R_SUMMARY, R_OTHER };

typedef struct {
    int line, type;
    unsigned char side, boundary, synthetic, tool, summary, meta, command, api_error;
    Str type_s, uuid, parent, logical, sid, ts, version, cwd, branch, mid, rid, model, stop;
    int entry; /* 0 absent/null, 1 a string (in `entry_s`), 2 true, 3 false */
    Str entry_s;
    long long u[4], hour; /* input, cache_read, cache_write, output; the 1h part */
    int has_usage, has_msg;
    Str trigger, kept_list, head, tail;
    long long pre, post;
    int has_pre, has_post;
    /* the session's bookkeeping */
    int resp, kid, kid_last, next_kid, stamp, pstamp, msg, onstamp;
    unsigned char rejected, compacted, rendered;
} Rec;

typedef struct {
    Rec *r;
    int n, cap;
} File;

/* -- a map of byte strings to ints (open addressing) ------------------------------------------ */
typedef struct {
    const unsigned char **k;
    Py_ssize_t *len;
    int *v, cap, n;
} Map;

static uint64_t hash(const unsigned char *s, Py_ssize_t n, uint64_t h) {
    h ^= 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static int map_init(Map *m, int want) {
    int cap = 16;
    while (cap < want * 2)
        cap <<= 1;
    m->cap = cap;
    m->n = 0;
    m->k = calloc(cap, sizeof *m->k);
    m->len = calloc(cap, sizeof *m->len);
    m->v = calloc(cap, sizeof *m->v);
    return m->k && m->len && m->v ? 0 : -1;
}

static void map_free(Map *m) {
    free(m->k);
    free(m->len);
    free(m->v);
}

/* The slot of key (s, n) with salt `salt` (a second component folded into the hash and the length). */
static int map_slot(const Map *m, const unsigned char *s, Py_ssize_t n) {
    uint64_t h = hash(s, n, 0);
    int i = (int)(h & (m->cap - 1));
    while (m->k[i] != NULL && !(m->len[i] == n && memcmp(m->k[i], s, n) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int map_get(const Map *m, Str key, int missing) {
    if (key.n < 0)
        return missing;
    int i = map_slot(m, key.s, key.n);
    return m->k[i] != NULL ? m->v[i] : missing;
}

/* Put (only when absent: the first wins); 1 when it was present. The map never fills: sized for all. */
static int map_put(Map *m, Str key, int v) {
    int i = map_slot(m, key.s, key.n);
    if (m->k[i] != NULL)
        return 1;
    m->k[i] = key.s ? key.s : (const unsigned char *)"";
    m->len[i] = key.n;
    m->v[i] = v;
    m->n++;
    return 0;
}

static int is_lit(Str a, const char *lit) {
    Py_ssize_t n = (Py_ssize_t)strlen(lit);
    return a.n == n && memcmp(a.s, lit, n) == 0;
}

/* -- reading one line -------------------------------------------------------------------------- */
typedef struct {
    long long high, total_high;
} Limits;

/* A string value (c->p at '"') as raw bytes: NO when it holds an escape (its bytes are not its value). */
static int raw_string(Cursor *c, Str *out) {
    const unsigned char *s = c->p + 1;
    int esc = 0;
    int r = string_of(c, NULL, &esc, 0);
    if (r != OK)
        return r;
    if (esc)
        return NO;
    out->s = s;
    out->n = c->p - 1 - s;
    return OK;
}

/* A string value given back and never compared (a timestamp, a cwd, ...): escapes allowed. */
static int shown(Cursor *c, Str *out) {
    const unsigned char *s = c->p + 1;
    int esc = 0;
    if (*c->p != '"')
        return NO;
    int r = string_of(c, NULL, &esc, 0);
    if (r != OK)
        return r;
    out->s = s;
    out->n = c->p - 1 - s;
    out->esc = esc;
    return OK;
}

/* A non-empty string, else absent (any other value validated): parse_record's reading of an id. */
static int id_value(Cursor *c, Str *out) {
    out->n = -1;
    if (*c->p != '"')
        return value(c, 0, NULL, NULL);
    Str s;
    int r = raw_string(c, &s);
    if (r == OK && s.n > 0)
        *out = s;
    return r;
}

/* A checked `text` field: a string (escapes allowed when `need` is 0: then only validated). */
static int text_value(Cursor *c, Str *out, int need) {
    if (*c->p != '"')
        return NO;
    if (need)
        return raw_string(c, out);
    return string_of(c, NULL, NULL, 0);
}

/* A count passing its fast mark: a whole non-negative number of at most 18 digits, <= high. */
static int count_value(Cursor *c, long long high, long long *out) {
    const unsigned char *s = c->p;
    if (s >= c->end || *s < '0' || *s > '9')
        return NO;
    int r = number(c, NULL);
    if (r != OK)
        return r;
    long long x = 0;
    for (const unsigned char *q = s; q < c->p; q++) {
        if (*q < '0' || *q > '9')
            return NO; /* a fraction or an exponent: a float */
        x = x * 10 + (*q - '0');
    }
    if (x > high)
        return NO;
    *out = x;
    return OK;
}

/* true / false / null / absent: a flag's truthiness; anything else NO. */
static int flag_value(Cursor *c, unsigned char *out) {
    if (*c->p == 't') {
        *out = 1;
        return literal(c, "true", 4, Py_True, NULL);
    }
    *out = 0;
    if (*c->p == 'f')
        return literal(c, "false", 5, Py_False, NULL);
    if (*c->p == 'n')
        return literal(c, "null", 4, Py_None, NULL);
    return NO;
}

/* Iterate an object's members: calls `each(c, key, ctx)` with the cursor at the value. Escaped
 * keys: NO (one may name a field read here). `seen`: a mask of the keys read, to refuse duplicates. */
typedef int (*Member)(Cursor *c, Str key, void *ctx, unsigned *seen);

static int members(Cursor *c, Member each, void *ctx) {
    unsigned seen = 0;
    if (*c->p != '{')
        return NO;
    if (++c->depth > MAX_DEPTH)
        return NO;
    c->p++;
    skip_ws(c);
    int r = OK;
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        c->depth--;
        return OK;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '"')
            return NO;
        Str k;
        if ((r = raw_string(c, &k)) != OK)
            return r;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            return NO;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end)
            return NO;
        if ((r = each(c, k, ctx, &seen)) != OK)
            return r;
        if ((r = next_item(c, '}')) == MORE)
            continue;
        if (r == OK)
            break;
        return r;
    }
    c->depth--;
    return OK;
}

/* Mark key number `bit` seen: NO when it was already (orjson keeps the last of duplicates). */
#define ONCE(bit)                                                                                     \
    do {                                                                                              \
        if (*seen & (1u << (bit)))                                                                    \
            return NO;                                                                                \
        *seen |= 1u << (bit);                                                                         \
    } while (0)

/* The start of a user message's text (`content_text(...).lstrip()`), enough to test its prefixes. */
#define PREFIX 72
typedef struct {
    unsigned char b[PREFIX];
    int n, started, texts; /* texts: text blocks joined so far */
} Prefix;

static int py_space(unsigned cp) {
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

static void prefix_cp(Prefix *p, unsigned cp) {
    if (!p->started && py_space(cp))
        return;
    p->started = 1;
    if (p->n + 4 <= PREFIX)
        p->n += (int)put_utf8((char *)p->b + p->n, cp);
    else
        p->n = PREFIX; /* (full: enough for every prefix tested) */
}

/* Feed the string at c->p (validated again, decoded) to the prefix. */
static int prefix_string(Cursor *c, Prefix *p) {
    const unsigned char *s = c->p + 1;
    int r = string_of(c, NULL, NULL, 0);
    if (r != OK)
        return r;
    Cursor t = {s, c->p - 1, 0};
    while (t.p < t.end && p->n < PREFIX) {
        unsigned cp = *t.p;
        if (cp == '\\') {
            t.p++;
            escape(&t, &cp);
        } else if (cp < 0x80) {
            t.p++;
        } else {
            int n = utf8_len(t.p, t.end);
            if (n == 2)
                cp = ((t.p[0] & 0x1F) << 6) | (t.p[1] & 0x3F);
            else if (n == 3)
                cp = ((t.p[0] & 0x0F) << 12) | ((t.p[1] & 0x3F) << 6) | (t.p[2] & 0x3F);
            else
                cp = ((t.p[0] & 0x07) << 18) | ((t.p[1] & 0x3F) << 12) | ((t.p[2] & 0x3F) << 6) | (t.p[3] & 0x3F);
            t.p += n;
        }
        prefix_cp(p, cp);
    }
    return OK;
}

static int starts(const Prefix *p, const char *lit) {
    int n = (int)strlen(lit);
    return p->n >= n && memcmp(p->b, lit, n) == 0;
}

typedef struct {
    Rec *r;
    Limits *lim;
    Prefix *prefix;
    int user;
} Ctx;

/* A content block: its checked fields, whether it is a text or a tool result. */
typedef struct {
    Ctx *x;
    Str type;
    int text_at; /* 1: a text field seen (fed to the prefix later) */
    const unsigned char *text_p;
} Block;

static int block_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Block *b = ctx;
    if (is_lit(k, "type")) {
        ONCE(0);
        return text_value(c, &b->type, 1);
    }
    if (is_lit(k, "text")) {
        ONCE(1);
        b->text_at = 1;
        b->text_p = c->p;
        return text_value(c, NULL, 0);
    }
    if (is_lit(k, "thinking") || is_lit(k, "name") || is_lit(k, "id") || is_lit(k, "tool_use_id"))
        return text_value(c, NULL, 0); /* (a duplicate of one: orjson's last, checked all the same) */
    if (is_lit(k, "content") && *c->p != '"' && *c->p != '[')
        return NO;
    return value(c, 0, NULL, NULL);
}

static int content_value(Cursor *c, Ctx *x) {
    Rec *r = x->r;
    if (*c->p == '"')
        return x->user ? prefix_string(c, x->prefix) : string_of(c, NULL, NULL, 0);
    if (*c->p != '[')
        return NO;
    if (++c->depth > MAX_DEPTH)
        return NO;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        c->depth--;
        return OK;
    }
    for (;;) {
        int rc;
        if (c->p >= c->end)
            return NO;
        if (*c->p == '{') {
            Block b = {x, {NULL, -1}, 0, NULL};
            if ((rc = members(c, block_member, &b)) != OK)
                return rc;
            if (is_lit(b.type, "tool_result"))
                r->tool = 1;
            if (x->user && is_lit(b.type, "text")) { /* "\n".join(b.get("text") or "" ...) */
                if (x->prefix->texts++)
                    prefix_cp(x->prefix, '\n');
                if (b.text_at) {
                    Cursor t = {b.text_p, c->end, 0};
                    if ((rc = prefix_string(&t, x->prefix)) != OK)
                        return rc;
                }
            }
        } else if ((rc = value(c, 0, NULL, NULL)) != OK) {
            return rc;
        }
        if ((rc = next_item(c, ']')) == MORE)
            continue;
        if (rc == OK)
            break;
        return rc;
    }
    c->depth--;
    return OK;
}

static int creation_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    if (is_lit(k, "ephemeral_1h_input_tokens")) {
        ONCE(0);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        if (*c->p == '-') { /* a negative count reads as none */
            const unsigned char *s = c->p;
            int r = number(c, NULL);
            for (const unsigned char *q = s + 1; r == OK && q < c->p; q++)
                if (*q < '0' || *q > '9')
                    return NO;
            return r;
        }
        return count_value(c, (long long)1 << 62, &x->r->hour);
    }
    return value(c, 0, NULL, NULL);
}

static int usage_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    static const char *names[4] = {"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                   "output_tokens"};
    for (int i = 0; i < 4; i++)
        if (is_lit(k, names[i])) {
            ONCE(i);
            return count_value(c, x->lim->high, &x->r->u[i]);
        }
    if (is_lit(k, "cache_creation")) {
        ONCE(4);
        return *c->p == '{' ? members(c, creation_member, x) : value(c, 0, NULL, NULL);
    }
    return value(c, 0, NULL, NULL);
}

static int message_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    if (is_lit(k, "role"))
        return text_value(c, NULL, 0);
    if (is_lit(k, "model")) {
        ONCE(0);
        return text_value(c, &r->model, 1);
    }
    if (is_lit(k, "id")) {
        ONCE(1);
        return text_value(c, &r->mid, 1);
    }
    if (is_lit(k, "stop_reason")) {
        ONCE(2);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        return shown(c, &r->stop);
    }
    if (is_lit(k, "content")) {
        ONCE(3);
        return content_value(c, x);
    }
    if (is_lit(k, "usage")) {
        ONCE(4);
        r->has_usage = 1;
        return members(c, usage_member, x);
    }
    return value(c, 0, NULL, NULL);
}

static int segment_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Rec *r = ((Ctx *)ctx)->r;
    if (is_lit(k, "headUuid")) {
        ONCE(0);
        return text_value(c, &r->head, 1);
    }
    if (is_lit(k, "tailUuid")) {
        ONCE(1);
        return text_value(c, &r->tail, 1);
    }
    if (is_lit(k, "anchorUuid"))
        return text_value(c, NULL, 0);
    return value(c, 0, NULL, NULL);
}

/* An array (c->p at '['): validated; its bytes and whether it has an element. */
static int list_value(Cursor *c, Str *out) {
    const unsigned char *s = c->p;
    if (*s != '[')
        return NO;
    int r = value(c, 0, NULL, NULL);
    if (r != OK)
        return r;
    const unsigned char *q = s + 1;
    while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
        q++;
    out->s = s;
    out->n = *q == ']' ? -1 : c->p - s; /* (an empty list is falsy: `uuids or allUuids`) */
    return OK;
}

typedef struct {
    Str uuids, all;
} Preserved;

static int preserved_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Preserved *p = ctx;
    if (is_lit(k, "uuids")) {
        ONCE(0);
        return list_value(c, &p->uuids);
    }
    if (is_lit(k, "allUuids")) {
        ONCE(1);
        return list_value(c, &p->all);
    }
    return value(c, 0, NULL, NULL);
}

static int compact_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    if (is_lit(k, "trigger")) {
        ONCE(0);
        return text_value(c, &r->trigger, 1);
    }
    if (is_lit(k, "preTokens")) {
        ONCE(1);
        r->has_pre = 1;
        return count_value(c, x->lim->total_high, &r->pre);
    }
    if (is_lit(k, "postTokens")) {
        ONCE(2);
        r->has_post = 1;
        return count_value(c, x->lim->total_high, &r->post);
    }
    if (is_lit(k, "preservedMessages")) {
        ONCE(3);
        Preserved p = {{NULL, -1}, {NULL, -1}};
        int rc = members(c, preserved_member, &p);
        r->kept_list = p.uuids.n >= 0 ? p.uuids : p.all;
        return rc;
    }
    if (is_lit(k, "preservedSegment")) {
        ONCE(4);
        return members(c, segment_member, x);
    }
    return value(c, 0, NULL, NULL);
}

/* What `claude_attachments.attachment_text` reads of an attachment: whether it renders text. */
typedef struct {
    Str type;
    int filename, snippet, prompt, human, task; /* (human: origin kind None or "human") */
} Attachment;

static int origin_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Attachment *a = ctx;
    if (is_lit(k, "kind")) {
        ONCE(0);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        if (*c->p != '"') {
            a->human = 0;
            return value(c, 0, NULL, NULL);
        }
        Str t = {NULL, -1, 0};
        int rc = raw_string(c, &t);
        a->human = is_lit(t, "human");
        return rc;
    }
    return value(c, 0, NULL, NULL);
}

static int attachment_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Attachment *a = ctx;
    if (is_lit(k, "type")) {
        ONCE(0);
        return *c->p == '"' ? raw_string(c, &a->type) : value(c, 0, NULL, NULL);
    }
    if (is_lit(k, "filename") || is_lit(k, "snippet") || is_lit(k, "prompt")) {
        int bit = k.s[0] == 'f' ? 1 : k.s[0] == 's' ? 2 : 3;
        ONCE(bit);
        int *flag = bit == 1 ? &a->filename : bit == 2 ? &a->snippet : &a->prompt;
        *flag = *c->p == '"' || (bit == 3 && *c->p == '[');
        return value(c, 0, NULL, NULL);
    }
    if (is_lit(k, "origin")) {
        ONCE(4);
        if (*c->p != '{')
            return value(c, 0, NULL, NULL);
        return members(c, origin_member, a);
    }
    if (is_lit(k, "commandMode")) {
        ONCE(5);
        if (*c->p != '"')
            return value(c, 0, NULL, NULL);
        Str t = {NULL, -1, 0};
        int rc = raw_string(c, &t);
        a->task = is_lit(t, "task-notification");
        return rc;
    }
    return value(c, 0, NULL, NULL);
}

/* An attachment object: r->rendered when it renders text (`attachment_text` not None). */
static int attachment_value(Cursor *c, Rec *r) {
    Attachment a = {{NULL, -1, 0}, 0, 0, 0, 1, 0};
    if (*c->p != '{')
        return value(c, 0, NULL, NULL);
    int rc = members(c, attachment_member, &a);
    if (is_lit(a.type, "edited_text_file"))
        r->rendered = a.filename && a.snippet;
    else if (is_lit(a.type, "queued_command"))
        r->rendered = a.human && !a.task && a.prompt;
    return rc;
}

static int line_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    switch (k.n > 0 ? k.s[0] : 0) {
    case 't':
        if (is_lit(k, "type")) {
            ONCE(0);
            return text_value(c, &r->type_s, 1);
        }
        if (is_lit(k, "timestamp")) {
            ONCE(1);
            return shown(c, &r->ts);
        }
        break;
    case 'u':
        if (is_lit(k, "uuid")) {
            ONCE(2);
            return id_value(c, &r->uuid);
        }
        break;
    case 'p':
        if (is_lit(k, "parentUuid")) {
            ONCE(3);
            return id_value(c, &r->parent);
        }
        break;
    case 'l':
        if (is_lit(k, "logicalParentUuid")) {
            ONCE(4);
            return id_value(c, &r->logical);
        }
        break;
    case 's':
        if (is_lit(k, "subtype")) {
            ONCE(5);
            Str s = {NULL, -1, 0};
            int rc = id_value(c, &s);
            r->boundary = is_lit(s, "compact_boundary");
            return rc;
        }
        if (is_lit(k, "sessionId")) {
            ONCE(6);
            return id_value(c, &r->sid);
        }
        break;
    case 'i':
        if (is_lit(k, "isSidechain")) {
            ONCE(7);
            if (*c->p == 't') {
                r->side = 1;
                return literal(c, "true", 4, Py_True, NULL);
            }
            return value(c, 0, NULL, NULL);
        }
        if (is_lit(k, "isCompactSummary")) {
            ONCE(8);
            return flag_value(c, &r->summary);
        }
        if (is_lit(k, "isMeta")) {
            ONCE(9);
            return flag_value(c, &r->meta);
        }
        if (is_lit(k, "isApiErrorMessage")) {
            ONCE(10);
            return flag_value(c, &r->api_error);
        }
        break;
    case 'v':
        if (is_lit(k, "version")) {
            ONCE(11);
            return shown(c, &r->version);
        }
        break;
    case 'c':
        if (is_lit(k, "cwd")) {
            ONCE(12);
            return shown(c, &r->cwd);
        }
        if (is_lit(k, "compactMetadata")) {
            ONCE(13);
            return members(c, compact_member, x);
        }
        break;
    case 'g':
        if (is_lit(k, "gitBranch")) {
            ONCE(14);
            return shown(c, &r->branch);
        }
        break;
    case 'e':
        if (is_lit(k, "entrypoint")) {
            ONCE(15);
            if (*c->p == '"') {
                r->entry = 1;
                return shown(c, &r->entry_s);
            }
            if (*c->p == 'n')
                return literal(c, "null", 4, Py_None, NULL);
            return NO;
        }
        break;
    case 'r':
        if (is_lit(k, "requestId")) {
            ONCE(16);
            return text_value(c, &r->rid, 1);
        }
        break;
    case 'm':
        if (is_lit(k, "message")) {
            ONCE(17);
            r->has_msg = 1;
            return members(c, message_member, x);
        }
        break;
    case 'a':
        if (is_lit(k, "attachment")) {
            ONCE(18);
            return attachment_value(c, r);
        }
        break;
    }
    return value(c, 0, NULL, NULL);
}

static const char *KNOWN[] = {"user", "assistant", "system", "attachment", "summary", "api-request",
                              "api-request-shape", "api-request-blob", "tools-used", "cost-state",
                              "queue-operation", "last-prompt", "mode", "atis-latch", "file-history-snapshot",
                              "custom-title", "tag", "agent-name", "pr-link", "worktree-state", "progress",
                              "permission-mode", NULL};

static int type_code(Str t) {
    if (is_lit(t, "user"))
        return T_USER;
    if (is_lit(t, "assistant"))
        return T_ASSISTANT;
    if (is_lit(t, "system"))
        return T_SYSTEM;
    if (is_lit(t, "attachment"))
        return T_ATTACHMENT;
    if (is_lit(t, "api-request"))
        return T_APIREQ;
    for (int i = 4; KNOWN[i]; i++)
        if (is_lit(t, KNOWN[i]))
            return T_META;
    return T_UNKNOWN;
}

/* Whether a synthetic API error line may say "prompt is too long" (`claude_code._TOO_LONG`): its
 * bytes hold "long" in any case, or an escape that may spell it. */
static int may_overflow(const unsigned char *s, const unsigned char *e) {
    for (const unsigned char *p = s; p + 4 <= e; p++) {
        if (p[0] == '\\' && p[1] == 'u')
            return 1;
        if ((p[0] | 0x20) == 'l' && (p[1] | 0x20) == 'o' && (p[2] | 0x20) == 'n' && (p[3] | 0x20) == 'g')
            return 1;
    }
    return 0;
}

/* One line into `r`: OK, NO (not sure: the ordinary way), ERR. Blank lines: r->type 0. */
static int read_line(const unsigned char *s, const unsigned char *e, Rec *r, Limits *lim) {
    const unsigned char *q = s;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n' || *q == '\x0b' || *q == '\x0c'))
        q++;
    if (q == e)
        return OK; /* a blank line (bytes.strip's whitespace): nothing to read */
    Prefix prefix = {{0}, 0, 0, 0};
    Ctx x = {r, lim, &prefix, 1}; /* (every line's prefix: only a user line's is read) */
    Cursor c = {s, e, 0};
    skip_ws(&c);
    int rc = members(&c, line_member, &x);
    if (rc != OK)
        return rc;
    skip_ws(&c);
    if (c.p != c.end || r->type_s.n <= 0)
        return NO;
    r->type = type_code(r->type_s);
    int conv = r->type >= T_USER && r->type <= T_ATTACHMENT;
    if (conv && r->uuid.n < 0)
        return NO;
    r->rendered = r->rendered && r->type == T_ATTACHMENT; /* (a message of its own, role other) */
    if ((r->type == T_USER || r->type == T_ASSISTANT) && !r->has_msg)
        return NO;
    r->synthetic = r->type == T_ASSISTANT && is_lit(r->model, "<synthetic>");
    if (r->synthetic && r->api_error && may_overflow(s, e))
        return NO; /* (a "prompt is too long" reply is an overflow: the ordinary way) */
    if (r->type == T_USER) {
        r->summary = r->summary || starts(&prefix, "This session is being continued from a previous conversation");
        static const char *commands[] = {"<command-name>", "<command-message>", "<command-args>",
                                         "<local-command-stdout>", "<local-command-stderr>",
                                         "<local-command-caveat>", NULL};
        for (int i = 0; commands[i] && !r->command; i++)
            r->command = starts(&prefix, commands[i]);
    }
    return OK;
}

/* -- a file's lines ------------------------------------------------------------------------------ */
static int read_file(const unsigned char *data, Py_ssize_t len, Py_ssize_t limit, Limits *lim, File *f) {
    const unsigned char *p = data, *end = data + len;
    for (int n = 1; p < end; n++) {
        const unsigned char *nl = memchr(p, '\n', end - p), *stop = nl ? nl : end;
        if (limit > 0 && stop - p > limit)
            return NO;
        if (f->n == f->cap) {
            int cap = f->cap ? f->cap * 2 : 256;
            Rec *r = realloc(f->r, cap * sizeof *r);
            if (r == NULL)
                return ERR;
            f->r = r;
            f->cap = cap;
        }
        Rec *r = &f->r[f->n];
        memset(r, 0, sizeof *r);
        Str none = {NULL, -1, 0};
        r->type_s = r->uuid = r->parent = r->logical = r->sid = r->ts = r->version = r->cwd = r->branch = none;
        r->mid = r->rid = r->model = r->stop = r->entry_s = r->trigger = r->kept_list = r->head = r->tail = none;
        r->line = n;
        int rc = read_line(p, stop, r, lim);
        if (rc != OK)
            return rc;
        if (r->type)
            f->n++;
        p = stop + 1;
    }
    return OK;
}

static int conv(const Rec *r) { return r->type >= T_USER && r->type <= T_ATTACHMENT; }
static int talk(const Rec *r) { return r->type == T_USER || r->type == T_ASSISTANT; }

/* -- billing (`claude_usage.billed_responses`), across the session's files ---------------------- */
typedef struct {
    int first_f, first_r, pick_f, pick_r;
    long long u[4], hour, total;
    int next_same; /* the next response of the same message id, -1 */
} Response;

static int usage_of(const Rec *r, long long u[4], long long *hour) {
    long long t = 0;
    for (int i = 0; i < 4; i++)
        t += u[i] = r->u[i];
    if (!r->has_usage || t <= 0)
        return 0;
    *hour = r->hour < r->u[2] ? r->hour : r->u[2];
    return 1;
}

/* The exact key (message id, request id or none) as bytes: id, a separator, then the request id. */
typedef struct {
    unsigned char *buf;
    Py_ssize_t n, cap;
} Bytes;

static Str key_of(Bytes *b, const Rec *r) {
    Py_ssize_t need = r->mid.n + 2 + (r->rid.n > 0 ? r->rid.n : 0);
    if (b->n + need > b->cap)
        return (Str){NULL, -2};
    unsigned char *o = b->buf + b->n;
    memcpy(o, r->mid.s, r->mid.n);
    o[r->mid.n] = 0;
    o[r->mid.n + 1] = r->rid.n >= 0 ? 1 : 0;
    if (r->rid.n > 0)
        memcpy(o + r->mid.n + 2, r->rid.s, r->rid.n);
    b->n += need;
    return (Str){o, need};
}

typedef struct {
    File *files;
    int nfiles;
    Response *resp;
    int nresp;
    int stamp; /* a fresh mark for `Rec.stamp` (walks, resolves) and `Rec.onstamp` */
} Session;

static int bill(Session *S, Map *exact, Map *by_message, Bytes *keys) {
    for (int fi = 0; fi < S->nfiles; fi++) {
        File *f = &S->files[fi];
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            r->resp = -1;
            if (r->type != T_ASSISTANT || r->synthetic)
                continue;
            long long u[4], hour = 0;
            int has = usage_of(r, u, &hour);
            int mid = r->mid.n > 0;
            Str key = {NULL, -1};
            if (mid && (key = key_of(keys, r)).n == -2)
                return ERR;
            if (!has) {
                continue; /* (a tokenless line: joined to its response below) */
            }
            int k = -1;
            if (mid) {
                k = map_get(exact, key, -1);
                if (k < 0)
                    for (int j = map_get(by_message, r->mid, -1); j >= 0; j = S->resp[j].next_same) {
                        Rec *pick = &S->files[S->resp[j].pick_f].r[S->resp[j].pick_r];
                        if (r->side || pick->side) {
                            k = j;
                            break;
                        }
                    }
            }
            long long total = u[0] + u[1] + u[2] + u[3];
            if (k < 0) {
                k = S->nresp++;
                Response *x = &S->resp[k];
                x->first_f = x->pick_f = fi;
                x->first_r = x->pick_r = i;
                memcpy(x->u, u, sizeof u);
                x->hour = hour;
                x->total = total;
                x->next_same = -1;
                if (mid) {
                    map_put(exact, key, k);
                    int head = map_get(by_message, r->mid, -1);
                    if (head < 0)
                        map_put(by_message, r->mid, k);
                    else {
                        while (S->resp[head].next_same >= 0)
                            head = S->resp[head].next_same;
                        S->resp[head].next_same = k;
                    }
                }
            } else {
                Response *x = &S->resp[k];
                Rec *pick = &S->files[x->pick_f].r[x->pick_r];
                int replaces = r->side != pick->side ? pick->side : total > x->total;
                if (replaces) {
                    x->pick_f = fi;
                    x->pick_r = i;
                    memcpy(x->u, u, sizeof u);
                    x->hour = hour;
                    x->total = total;
                    if (mid)
                        map_put(exact, key, k); /* (setdefault) */
                }
            }
            r->resp = k;
        }
    }
    keys->n = 0; /* the tokenless lines, with the keys made again in the same order */
    for (int fi = 0; fi < S->nfiles; fi++) {
        File *f = &S->files[fi];
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            if (r->type != T_ASSISTANT || r->synthetic || r->mid.n <= 0)
                continue;
            long long u[4], hour;
            Str key = key_of(keys, r);
            if (!usage_of(r, u, &hour))
                r->resp = map_get(exact, key, -1);
        }
    }
    return OK;
}

/* -- one file's paths (`claude_paths.record_paths`) and their messages (`claude_code._Builder`) -- */
typedef struct {
    int *v, n, cap;
} Ints;

static int push(Ints *a, int x) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 64;
        int *v = realloc(a->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

typedef struct {
    Session *S;
    File *f;
    Map nodes, through;
    long long largest;
    PyObject *paths; /* list of (leaf, side, messages, compactions, synthetic, no usage) */
} FileWork;

static PyObject *str_of(Str s) {
    if (s.n < 0)
        Py_RETURN_NONE;
    if (s.esc) { /* (its opening quote is the byte before it) */
        Cursor c = {s.s - 1, s.s + s.n + 1, 0};
        PyObject *out = NULL;
        return string_of(&c, &out, NULL, 0) == OK ? out : NULL;
    }
    return PyUnicode_DecodeUTF8((const char *)s.s, s.n, NULL);
}

static PyObject *count_or_none(int has, long long v) {
    if (!has)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

enum { TR_THRESHOLD, TR_MANUAL, TR_OVERFLOW, TR_UNKNOWN };

static int trigger_of(const Rec *b) {
    if (is_lit(b->trigger, "manual"))
        return TR_MANUAL;
    if (is_lit(b->trigger, "auto"))
        return b->rejected ? TR_OVERFLOW : TR_THRESHOLD;
    return TR_UNKNOWN;
}

/* The message index of uuid `u` on the path being built (`by_uuid`), -1. */
static int by_uuid(FileWork *w, Str u, int pstamp) {
    int i = map_get(&w->nodes, u, -1);
    if (i < 0)
        return -1;
    Rec *r = &w->f->r[i];
    return r->pstamp == pstamp ? r->msg : -1;
}

/* `_Builder._kept`: the kept messages' indices (sorted, none unsent) as a list. */
static PyObject *kept_of(FileWork *w, const Rec *b, int pstamp, const unsigned char *unsent) {
    Ints idx = {NULL, 0, 0};
    PyObject *out = NULL;
    if (b->kept_list.n > 0) {
        Cursor c = {b->kept_list.s + 1, b->kept_list.s + b->kept_list.n, 0};
        for (;;) {
            skip_ws(&c);
            if (*c.p == ']')
                break;
            if (*c.p == '"') {
                Str u;
                if (raw_string(&c, &u) != OK)
                    goto bail; /* (an escaped uuid) */
                int j = by_uuid(w, u, pstamp);
                if (j >= 0 && push(&idx, j) < 0)
                    goto nomem;
            } else if (value(&c, 0, NULL, NULL) != OK) {
                goto bail;
            }
            skip_ws(&c);
            if (*c.p == ',')
                c.p++;
        }
    }
    if (idx.n == 0) {
        Str empty = {(const unsigned char *)"", 0};
        int a = by_uuid(w, b->head.n > 0 ? b->head : empty, pstamp);
        int z = by_uuid(w, b->tail.n > 0 ? b->tail : empty, pstamp);
        if (a >= 0 && z >= 0)
            for (int j = a; j <= z; j++)
                if (push(&idx, j) < 0)
                    goto nomem;
    }
    qsort(idx.v, idx.n, sizeof(int), cmp_int);
    if ((out = PyList_New(0)) == NULL)
        goto done;
    for (int i = 0; i < idx.n; i++) {
        if ((i > 0 && idx.v[i] == idx.v[i - 1]) || unsent[idx.v[i]])
            continue;
        PyObject *x = PyLong_FromLong(idx.v[i]);
        if (x == NULL || PyList_Append(out, x) < 0) {
            Py_XDECREF(x);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(x);
    }
    goto done;
nomem:
    PyErr_NoMemory();
    goto done;
bail:
    out = Py_None;
    Py_INCREF(out);
done:
    free(idx.v);
    return out;
}

/* One compaction as (index, line, trigger, pre, post, kept, id, timestamp); Py_None: not sure. */
static PyObject *compaction(FileWork *w, Rec *b, int index, int pstamp, const unsigned char *unsent, int legacy) {
    if (legacy)
        return Py_BuildValue("(iiiOONNN)", index, b->line, TR_UNKNOWN, Py_None, Py_None, PyList_New(0),
                             str_of(b->uuid), str_of(b->ts));
    b->compacted = 1;
    PyObject *kept = kept_of(w, b, pstamp, unsent);
    if (kept == NULL || kept == Py_None)
        return kept;
    return Py_BuildValue("(iiiNNNNN)", index, b->line, trigger_of(b), count_or_none(b->has_pre, b->pre),
                         count_or_none(b->has_post, b->post), kept, str_of(b->uuid), str_of(b->ts));
}

/* Append a new reference to `list` (stolen); -1 on error (NULL `x` included). */
static int append_new(PyObject *list, PyObject *x) {
    if (x == NULL)
        return -1;
    int r = PyList_Append(list, x);
    Py_DECREF(x);
    return r;
}

/* `_Builder` over one path's records (indices into the file, in order): appends its tuple to
 * w->paths. NO: not sure. */
static int build_path(FileWork *w, Ints *chain, int side, int pstamp) {
    File *f = w->f;
    int n = chain->n, nmsg = 0, synthetic = 0, no_usage = 0, pending = -1, ncomp = 0, rc = ERR;
    unsigned char *unsent = calloc(n + 1, 1);
    Map seen = {0};
    PyObject *lines = PyList_New(0), *uuids = PyList_New(0), *roles = PyList_New(0), *comps = PyList_New(0), *t = NULL;
    if (unsent == NULL || lines == NULL || uuids == NULL || roles == NULL || comps == NULL || map_init(&seen, n + 1) < 0)
        goto done;
    for (int ci = 0; ci < n; ci++) {
        Rec *r = &f->r[chain->v[ci]];
        int role, index = nmsg;
        if (r->type == T_ASSISTANT) {
            role = R_ASSISTANT;
        } else if (r->type == T_USER) {
            role = r->summary ? R_SUMMARY : (r->meta || r->command) ? R_OTHER : r->tool ? R_TOOL : R_USER;
        } else if (r->rendered) {
            role = R_OTHER;
        } else {
            if (r->type == T_SYSTEM && r->boundary) {
                if (pending >= 0) {
                    if ((t = compaction(w, &f->r[pending], nmsg, pstamp, unsent, 0)) == NULL || t == Py_None)
                        goto bail;
                    if (PyList_Append(comps, t) < 0)
                        goto done;
                    Py_CLEAR(t);
                    ncomp++;
                }
                pending = chain->v[ci];
            }
            continue; /* (an attachment here is one not rendered: no message) */
        }
        if (append_new(lines, PyLong_FromLong(r->line)) < 0 || append_new(uuids, str_of(r->uuid)) < 0 ||
            append_new(roles, PyLong_FromLong(role)) < 0)
            goto done;
        r->pstamp = pstamp;
        r->msg = index;
        nmsg++;
        if (role == R_ASSISTANT) {
            if (r->synthetic) {
                unsent[index] = 1;
                synthetic++;
                continue;
            }
            Str key = r->mid.n > 0 ? r->mid : r->rid.n > 0 ? r->rid : r->uuid;
            if (map_put(&seen, key, 1))
                continue;
            long long u[4], hour;
            if (r->resp >= 0) {
                memcpy(u, w->S->resp[r->resp].u, sizeof u);
            } else if (!usage_of(r, u, &hour)) {
                no_usage++;
                continue;
            }
            long long prompt = u[0] + u[1] + u[2];
            if (prompt > w->largest)
                w->largest = prompt;
        } else if (role == R_SUMMARY) {
            if (pending >= 0 || (ncomp == 0 && index == 0)) {
                t = pending >= 0 ? compaction(w, &f->r[pending], index, pstamp, unsent, 0)
                                 : compaction(w, r, index, pstamp, unsent, 1);
                if (t == NULL || t == Py_None)
                    goto bail;
                if (PyList_Append(comps, t) < 0)
                    goto done;
                Py_CLEAR(t);
                ncomp++;
                pending = -1;
            }
        }
    }
    if (pending >= 0) {
        if ((t = compaction(w, &f->r[pending], nmsg, pstamp, unsent, 0)) == NULL || t == Py_None)
            goto bail;
        if (PyList_Append(comps, t) < 0)
            goto done;
        Py_CLEAR(t);
    }
    Rec *leaf = n ? &f->r[chain->v[n - 1]] : NULL;
    t = Py_BuildValue("(NOOOOOii)", leaf ? str_of(leaf->uuid) : (Py_INCREF(Py_None), Py_None),
                      side ? Py_True : Py_False, lines, uuids, roles, comps, synthetic, no_usage);
    if (t == NULL || PyList_Append(w->paths, t) < 0)
        goto done;
    rc = OK;
    goto done;
bail:
    rc = t == NULL ? ERR : NO;
done:
    if (t == Py_None)
        Py_DECREF(t);
    else
        Py_XDECREF(t);
    Py_XDECREF(lines);
    Py_XDECREF(uuids);
    Py_XDECREF(roles);
    Py_XDECREF(comps);
    free(unsent);
    map_free(&seen);
    return rc;
}

/* `_walk` from the record at `leaf` into `chain` (root first). NO at `_written_before`'s case. */
static int walk(FileWork *w, int leaf, Ints *chain) {
    File *f = w->f;
    int stamp = ++w->S->stamp, side = f->r[leaf].side;
    chain->n = 0;
    int cur = leaf;
    while (cur >= 0 && f->r[cur].stamp != stamp && f->r[cur].side == side) {
        Rec *r = &f->r[cur];
        r->stamp = stamp;
        if (push(chain, cur) < 0)
            return ERR;
        int boundary = r->boundary && r->type == T_SYSTEM;
        Str nxt = r->parent.n > 0 ? r->parent : boundary ? r->logical : (Str){NULL, -1};
        cur = map_get(&w->nodes, nxt, -1);
        if (cur < 0 && boundary && nxt.n > 0 && r->parent.n < 0)
            return NO;
    }
    for (int i = 0, j = chain->n - 1; i < j; i++, j--) {
        int x = chain->v[i];
        chain->v[i] = chain->v[j];
        chain->v[j] = x;
    }
    return OK;
}

/* `_with_side_results`: the chain plus the parallel tool calls' lines hanging off it, in file order. */
static int side_results(FileWork *w, Ints *chain) {
    File *f = w->f;
    int stamp = ++w->S->stamp, n0 = chain->n;
    Ints todo = {NULL, 0, 0};
    for (int i = 0; i < chain->n; i++) {
        f->r[chain->v[i]].onstamp = stamp;
        if (push(&todo, chain->v[i]) < 0)
            return ERR;
    }
    while (todo.n) {
        Rec *r = &f->r[todo.v[--todo.n]];
        for (int k = r->kid; k >= 0; k = f->r[k].next_kid) {
            Rec *c = &f->r[k];
            if (c->onstamp == stamp || c->side != r->side)
                continue;
            int side_result = c->type == T_USER && c->tool && c->kid < 0;
            int sibling = c->type == T_ASSISTANT && c->mid.n >= 0 && r->type == T_ASSISTANT && r->mid.n >= 0 &&
                          c->mid.n == r->mid.n && memcmp(c->mid.s, r->mid.s, c->mid.n) == 0;
            if (side_result || sibling) {
                c->onstamp = stamp;
                if (push(chain, k) < 0 || push(&todo, k) < 0) {
                    free(todo.v);
                    return ERR;
                }
            }
        }
    }
    free(todo.v);
    if (chain->n > n0)
        qsort(chain->v, chain->n, sizeof(int), cmp_int);
    return OK;
}

static int cmp_diag(const void *a, const void *b) {
    return cmp_int(a, b); /* (an int[3] by its first: the line; lines are distinct) */
}

/* One file's tree: duplicated uuids (NO), `_relink`, nodes, children, `_rejected`; its notices
 * (line, kind 0 unknown type / 1 orphan, record) sorted by line into `diags` (int[3] triples). */
static int tree(FileWork *w, Ints *diags) {
    File *f = w->f;
    Map all = {0}, types = {0};
    int rc = ERR;
    if (map_init(&all, f->n + 1) < 0 || map_init(&w->nodes, f->n + 1) < 0 || map_init(&w->through, f->n + 1) < 0 ||
        map_init(&types, 64) < 0)
        goto done;
    int last = 0;
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        r->kid = r->kid_last = r->next_kid = -1;
        if (r->uuid.n > 0 && map_put(&all, r->uuid, i)) {
            rc = NO; /* a duplicated uuid: the ordinary way says which line is kept */
            goto done;
        }
        if (r->uuid.n > 0)
            map_put(conv(r) ? &w->nodes : &w->through, r->uuid, i);
        if (r->type == T_UNKNOWN && !map_put(&types, r->type_s, i)) {
            int d[3] = {r->line, 0, i};
            for (int k = 0; k < 3; k++)
                if (push(diags, d[k]) < 0)
                    goto done;
        }
        if (r->type == T_SYSTEM && r->boundary) {
            r->rejected = last == T_APIREQ && r->uuid.n > 0;
            last = T_SYSTEM;
        } else if (r->type == T_APIREQ || talk(r)) {
            last = r->type;
        }
    }
    if (w->through.n)
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            if (!conv(r))
                continue;
            Str *ids[2] = {&r->parent, &r->logical};
            for (int k = 0; k < 2; k++) { /* `resolve`: through the non-conversation lines */
                int stamp = ++w->S->stamp;
                for (int j; ids[k]->n > 0 && (j = map_get(&w->through, *ids[k], -1)) >= 0 && f->r[j].stamp != stamp;) {
                    f->r[j].stamp = stamp;
                    *ids[k] = f->r[j].parent;
                }
            }
        }
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (!conv(r) || r->parent.n <= 0)
            continue;
        int p = map_get(&w->nodes, r->parent, -1);
        if (p < 0) {
            int d[3] = {r->line, 1, i};
            for (int k = 0; k < 3; k++)
                if (push(diags, d[k]) < 0)
                    goto done;
            continue;
        }
        if (f->r[p].kid < 0)
            f->r[p].kid = i;
        else
            f->r[f->r[p].kid_last].next_kid = i;
        f->r[p].kid_last = i;
    }
    qsort(diags->v, diags->n / 3, 3 * sizeof(int), cmp_diag);
    rc = OK;
done:
    map_free(&all);
    map_free(&types);
    return rc;
}

/* `record_paths` and a `_Builder` per path. */
static int file_paths(FileWork *w) {
    File *f = w->f;
    Ints chain = {NULL, 0, 0};
    int rc = OK, main_leaf = -1;
    for (int i = 0; i < f->n; i++)
        if (talk(&f->r[i]) && !f->r[i].side)
            main_leaf = i;
    if (main_leaf >= 0) {
        if ((rc = walk(w, main_leaf, &chain)) != OK || (rc = side_results(w, &chain)) != OK ||
            (rc = build_path(w, &chain, 0, ++w->S->stamp)) != OK)
            goto done;
    }
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (!talk(r) || !r->side)
            continue;
        int leaf = 1, nkids = 0;
        for (int k = r->kid; k >= 0; k = f->r[k].next_kid)
            if (talk(&f->r[k]))
                leaf = 0;
        if (!leaf)
            continue;
        int p = r->parent.n > 0 ? map_get(&w->nodes, r->parent, -1) : -1;
        if (p >= 0)
            for (int k = f->r[p].kid; k >= 0; k = f->r[k].next_kid)
                nkids++;
        if (r->tool && nkids >= 2)
            continue; /* a parallel tool result: on its sibling's path */
        if ((rc = walk(w, i, &chain)) != OK || (rc = side_results(w, &chain)) != OK ||
            (rc = build_path(w, &chain, 1, ++w->S->stamp)) != OK)
            goto done;
    }
done:
    free(chain.v);
    return rc;
}

/* The main file's settings and its boundaries on no path:
 * (version, session id, cwd, git branch, entrypoint, boundaries, off-path compactions). */
static PyObject *file_facts(FileWork *w) {
    File *f = w->f;
    Rec *first = NULL;
    Str version = {NULL, -1}, sid = {NULL, -1};
    int boundaries = 0;
    PyObject *off = PyList_New(0);
    if (off == NULL)
        return NULL;
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (version.n < 0 && r->version.n > 0)
            version = r->version;
        if (sid.n < 0 && r->sid.n > 0)
            sid = r->sid;
        if (first == NULL && talk(r))
            first = r;
        if (r->type == T_SYSTEM && r->boundary) {
            boundaries++;
            if (!r->compacted) {
                PyObject *t = Py_BuildValue("(iiNNNN)", r->line, trigger_of(r), count_or_none(r->has_pre, r->pre),
                                            count_or_none(r->has_post, r->post), str_of(r->uuid), str_of(r->ts));
                if (t == NULL || PyList_Append(off, t) < 0) {
                    Py_XDECREF(t);
                    Py_DECREF(off);
                    return NULL;
                }
                Py_DECREF(t);
            }
        }
    }
    Str none = {NULL, -1, 0};
    return Py_BuildValue("(NNNNNiN)", str_of(version), str_of(sid), str_of(first ? first->cwd : none),
                         str_of(first ? first->branch : none), str_of(first && first->entry == 1 ? first->entry_s : none),
                         boundaries, off);
}

static PyObject *billed_list(Session *S) {
    PyObject *out = PyList_New(S->nresp);
    for (int k = 0; out != NULL && k < S->nresp; k++) {
        Response *x = &S->resp[k];
        Rec *first = &S->files[x->first_f].r[x->first_r], *pick = &S->files[x->pick_f].r[x->pick_r];
        Str id = pick->mid.n > 0 ? pick->mid : first->rid;
        PyObject *t = Py_BuildValue("(iNNNNLLLLL)", first->line, str_of(pick->model), str_of(first->ts), str_of(id),
                                    str_of(pick->stop), x->u[0], x->u[1], x->u[2], x->u[3], x->hour);
        if (t == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, t);
    }
    return out;
}

/* claude_summary(files, limit, high, total_high): None, or (files, billed) where files is a list
 * per file of (paths, notices, facts, largest answered prompt): paths a list of (leaf uuid, side,
 * the messages' lines, uuids and roles (three lists), compactions [(index, line, trigger, pre,
 * post, kept, uuid, ts)], synthetic, no usage); notices [(line, kind, text)] (kind 0: an unknown type, 1: an orphan's
 * parent); facts as `file_facts`; billed [(line, model, ts, id, stop, input, cache read, cache
 * write, output, 1h)]. Roles: R_*; triggers: TR_*. */
PyObject *claude_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t limit;
    Limits lim;
    if (nargs != 4 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "claude_summary(files: list, limit: int, high: int, total_high: int)");
        return NULL;
    }
    if ((limit = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if ((lim.high = PyLong_AsLongLong(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((lim.total_high = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t nf = PyList_GET_SIZE(args[0]);
    Py_buffer *bufs = calloc(nf + 1, sizeof *bufs);
    File *files = calloc(nf + 1, sizeof *files);
    FileWork *work = calloc(nf + 1, sizeof *work);
    Session S = {files, (int)nf, NULL, 0, 0};
    Map exact = {0}, by_message = {0};
    Bytes keys = {NULL, 0, 0};
    Ints *diags = calloc(nf + 1, sizeof *diags);
    PyObject *out = NULL, *list = NULL;
    int rc = ERR, got = 0, total = 0;
    if (bufs == NULL || files == NULL || work == NULL || diags == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < nf; got++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(args[0], got), &bufs[got], PyBUF_SIMPLE) < 0)
            goto done;
    for (int i = 0; i < nf; i++) {
        if ((rc = read_file(bufs[i].buf, bufs[i].len, limit, &lim, &files[i])) != OK)
            goto done;
        work[i].S = &S;
        work[i].f = &files[i];
        if ((rc = tree(&work[i], &diags[i])) != OK)
            goto done;
        total += files[i].n;
        keys.cap += bufs[i].len + 2 * (Py_ssize_t)files[i].n;
    }
    rc = ERR;
    if ((S.resp = calloc(total + 1, sizeof *S.resp)) == NULL || (keys.buf = malloc(keys.cap + 1)) == NULL ||
        map_init(&exact, total + 1) < 0 || map_init(&by_message, total + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if ((rc = bill(&S, &exact, &by_message, &keys)) != OK) {
        if (rc == ERR)
            PyErr_NoMemory();
        goto done;
    }
    if ((list = PyList_New(0)) == NULL)
        goto done;
    for (int i = 0; i < nf; i++) {
        FileWork *w = &work[i];
        if ((w->paths = PyList_New(0)) == NULL)
            goto done;
        if ((rc = file_paths(w)) != OK)
            goto done;
        rc = ERR;
        PyObject *notes = PyList_New(0), *facts = notes ? file_facts(w) : NULL;
        for (int k = 0; facts != NULL && k < diags[i].n; k += 3) {
            Rec *r = &files[i].r[diags[i].v[k + 2]];
            PyObject *t = Py_BuildValue("(iiN)", diags[i].v[k], diags[i].v[k + 1],
                                        str_of(diags[i].v[k + 1] ? r->parent : r->type_s));
            if (t == NULL || PyList_Append(notes, t) < 0)
                Py_CLEAR(facts);
            Py_XDECREF(t);
        }
        PyObject *t = facts ? Py_BuildValue("(ONNL)", w->paths, notes, facts, w->largest) : NULL;
        if (facts == NULL)
            Py_XDECREF(notes);
        if (t == NULL || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            goto done;
        }
        Py_DECREF(t);
    }
    PyObject *billed = billed_list(&S);
    if (billed != NULL)
        out = Py_BuildValue("(ON)", list, billed);
    rc = out == NULL ? ERR : OK;
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    for (int i = 0; work != NULL && i < nf; i++) {
        map_free(&work[i].nodes);
        map_free(&work[i].through);
        Py_XDECREF(work[i].paths);
        free(files[i].r);
        free(diags[i].v);
    }
    free(bufs);
    free(files);
    free(work);
    free(diags);
    free(S.resp);
    free(keys.buf);
    map_free(&exact);
    map_free(&by_message);
    Py_XDECREF(list);
    if (rc == NO) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (out == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    return out;
}

void claude_init(void) { claude_base_project_init(); }
