/* sessiontools.read._native.codex_feed: the common records of a lean Codex reading fed to the
 * transcript's builder in C (issue 28), without a Python frame per record.
 *
 * codex_feed(builder, records, start, kinds) -> the index of the first record from `start` on that
 * it does not take (len(records) when it takes them all). `builder` is `transcript.codex._Builder`
 * of a lean reading; each record taken changes it exactly as `_Builder.feed` does (tested against
 * it: tests/transcript/test_codex_feed.py). It takes:
 *   Other, CompactionEvent  nothing to do;
 *   UsageRecord             the last usage record;
 *   TurnContext             the model, when it names one;
 *   TaskEvent               the window, the trigger of a started turn (not an overflow to record);
 *   ResponseItem            a message without units (`lean_item_message`), but not a user message
 *                           (its texts decide its role), an item whose type or role is no str, or
 *                           one while a count waits for its reply (count-first rollouts);
 *   TokenCount              a new request or none (`on_agent_count`) once the builder knows the
 *                           rollout is not count-first, but not the zero count after a compaction
 *                           (its tokens_after) nor counts beyond 63 bits;
 * and stops at anything else (a session meta, a compacted line, an error event, ...), which the
 * caller feeds to `_Builder.feed` before calling again. The builder's fields are read at the start
 * and written back at the end. `kinds` is `transcript.codex._KINDS` (the classes, roles and sets
 * named below, in that order). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *codex_make(PyObject *entry, PyObject *const *args, size_t n); /* _codex.c */

enum { K_OTHER, K_ITEM, K_COUNT, K_RECORD, K_TURN, K_TASK, K_COMPACTION, K_MESSAGE, K_REQUEST, K_USAGE,
       K_ROLES, K_TOOL, K_ASSISTANT, K_SUMMARY, K_ROLE_OTHER, K_TOOL_ITEMS, K_CALLS, K_ASSISTANT_ITEMS,
       K_OVERFLOW, N_KINDS };

/* the builder's fields, in this order (State's members) */
static const char *names[] = {"first_reply", "prev_total", "last_usage_record", "last_agent_total",
                              "awaiting_after", "model", "window", "turn_trigger", "pending", "count_first",
                              "reply_less", "turn_overflowed", "provider", "system", "window_start",
                              "messages", "requests"};
#define N_STATE 17
enum { F_FIRST_REPLY, F_PREV_TOTAL, F_LAST_RECORD, F_LAST_TOTAL, F_AWAITING, F_MODEL, F_WINDOW, F_TRIGGER,
       F_PENDING, F_COUNT_FIRST, F_REPLY_LESS, F_OVERFLOWED, F_PROVIDER, F_SYSTEM, F_WINDOW_START,
       F_MESSAGES, F_REQUESTS };
static PyObject *state_names[N_STATE];
static PyObject *a_payload, *a_type, *a_role, *a_id, *a_call_id, *a_model, *a_response_id, *a_usage, *a_total,
    *a_last, *a_context_window, *a_line, *a_timestamp, *a_kind, *a_error_info, *a_trigger, *a_message,
    *a_user, *a_started, *a_compaction, *a_compaction_summary, *u_fields[6], *empty, *zero;

static int intern_names(void) {
    for (int i = 0; i < N_STATE; i++)
        if ((state_names[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    static const char *u[6] = {"input_tokens", "cached_input_tokens", "output_tokens",
                               "reasoning_output_tokens", "total_tokens", "cache_write_input_tokens"};
    for (int i = 0; i < 6; i++)
        if ((u_fields[i] = PyUnicode_InternFromString(u[i])) == NULL)
            return -1;
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    I(a_payload, "payload"); I(a_type, "type"); I(a_role, "role"); I(a_id, "id"); I(a_call_id, "call_id");
    I(a_model, "model"); I(a_response_id, "response_id"); I(a_usage, "usage"); I(a_total, "total");
    I(a_last, "last"); I(a_context_window, "context_window"); I(a_line, "line"); I(a_timestamp, "timestamp");
    I(a_kind, "kind"); I(a_error_info, "error_info"); I(a_trigger, "trigger"); I(a_message, "message");
    I(a_user, "user"); I(a_started, "started"); I(a_compaction, "compaction");
    I(a_compaction_summary, "compaction_summary");
#undef I
    if ((empty = PyTuple_New(0)) == NULL || (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    return 0;
}

typedef struct {
    PyObject *f[N_STATE]; /* new references */
    PyObject *const *k;   /* kinds */
} State;

/* An attribute of a record as a new reference. */
static PyObject *attr(PyObject *r, PyObject *name) {
    return PyObject_GetAttr(r, name);
}

static void set(State *s, int field, PyObject *v) { /* (steals v) */
    Py_SETREF(s->f[field], v);
}

static void set_borrowed(State *s, int field, PyObject *v) {
    Py_INCREF(v);
    Py_SETREF(s->f[field], v);
}

/* A TokenUsage's six counts as long longs; 0 when one is no int within 63 bits. */
static int counts(PyObject *u, long long out[6]) {
    for (int i = 0; i < 6; i++) {
        PyObject *v = attr(u, u_fields[i]);
        if (v == NULL)
            return -1;
        int overflow = 0;
        out[i] = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
        int ok = PyLong_CheckExact(v) && !overflow && !(out[i] == -1 && PyErr_Occurred());
        Py_DECREF(v);
        if (!ok) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* `a == b` of two TokenUsage (or None): 1, 0, -1 error. */
static int same_usage(PyObject *a, PyObject *b) {
    if (a == Py_None || b == Py_None)
        return 0; /* (a dataclass is never equal to None) */
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static int truthy(PyObject *v) {
    return v != Py_None && PyObject_IsTrue(v) == 1;
}

/* `_Builder.context(end)`: the system message (when before the history) and the history so far. */
static PyObject *context(State *s, Py_ssize_t end) {
    PyObject *sys = s->f[F_SYSTEM];
    Py_ssize_t start = PyLong_AsSsize_t(s->f[F_WINDOW_START]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t a = -1, b = -1;
    if (sys != Py_None) {
        Py_ssize_t i = PyLong_AsSsize_t(sys);
        if (i == -1 && PyErr_Occurred())
            return NULL;
        if (i < start)
            a = i, b = i + 1;
    }
    if (end > start) {
        if (a >= 0 && b == start)
            b = end; /* (touching: joined, as `merge_ranges` does) */
        else if (a >= 0)
            return Py_BuildValue("((nn)(nn))", a, b, start, end);
        else
            return Py_BuildValue("((nn))", start, end);
    }
    return a >= 0 ? Py_BuildValue("((nn))", a, b) : (Py_INCREF(empty), empty);
}

/* A token count: 1 taken, 0 not (the Python way), -1 error. */
static int count(State *s, PyObject *r) {
    if (s->f[F_COUNT_FIRST] != Py_False)
        return 0;
    PyObject *last = attr(r, a_last), *total = attr(r, a_total), *window = attr(r, a_context_window);
    int out = -1;
    long long c[6];
    int zero_last = 0, has_last = last != NULL && last != Py_None;
    if (last == NULL || total == NULL || window == NULL)
        goto done;
    if (has_last) {
        int ok = counts(last, c);
        if (ok <= 0) {
            out = ok;
            goto done;
        }
        zero_last = c[0] == 0 && c[2] == 0;
        if (zero_last && s->f[F_AWAITING] != Py_None) {
            out = 0; /* (Codex's estimate after a compaction: `on_count` records it) */
            goto done;
        }
    }
    if (truthy(window))
        set_borrowed(s, F_WINDOW, window);
    int repeat = total != Py_None ? same_usage(total, s->f[F_PREV_TOTAL]) : 0;
    if (repeat < 0)
        goto done;
    out = 1;
    if (repeat)
        goto done; /* Codex repeats an unchanged count */
    set_borrowed(s, F_PREV_TOTAL, total);
    if (!has_last || zero_last)
        goto done;
    set_borrowed(s, F_AWAITING, Py_None);
    out = -1;
    Py_ssize_t n = PyList_GET_SIZE(s->f[F_MESSAGES]);
    PyObject *first = s->f[F_FIRST_REPLY];
    Py_ssize_t index = first != Py_None ? PyLong_AsSsize_t(first) : (n > 1 ? n - 1 : 0);
    if (index == -1 && PyErr_Occurred())
        goto done;
    set_borrowed(s, F_REPLY_LESS, first == Py_None ? Py_True : Py_False);
    PyObject *rec = s->f[F_LAST_RECORD], *rid = Py_None;
    PyObject *rec_usage = rec != Py_None ? attr(rec, a_usage) : NULL;
    int match = rec_usage != NULL ? same_usage(rec_usage, last) : 0;
    PyObject *rec_id = match == 1 ? attr(rec, a_response_id) : NULL;
    Py_XDECREF(rec_usage);
    if (match < 0 || (match == 1 && rec_id == NULL))
        goto done;
    if (rec_id != NULL)
        rid = rec_id;
    long long cached = c[1] < c[0] ? c[1] : c[0];
    PyObject *u_args[6] = {PyLong_FromLongLong(c[0] - cached), PyLong_FromLongLong(cached), zero,
                           PyLong_FromLongLong(c[2]), Py_None, zero};
    PyObject *usage = u_args[0] && u_args[1] && u_args[3] ? codex_make(s->k[K_USAGE], u_args, 6) : NULL;
    PyObject *ctx = usage != NULL ? context(s, index) : NULL, *line = attr(r, a_line), *ts = attr(r, a_timestamp);
    PyObject *idx = PyLong_FromSsize_t(index), *agent_total = PyLong_FromLongLong(c[0] + c[2]);
    PyObject *request = NULL;
    if (ctx != NULL && line != NULL && ts != NULL && idx != NULL && agent_total != NULL) {
        PyObject *q_args[10] = {idx, line, usage, ctx, s->f[F_PROVIDER], s->f[F_MODEL], ts, rid, Py_None, window};
        request = codex_make(s->k[K_REQUEST], q_args, 10);
    }
    if (request != NULL && PyList_Append(s->f[F_REQUESTS], request) == 0) {
        set(s, F_LAST_TOTAL, agent_total);
        agent_total = NULL;
        set_borrowed(s, F_FIRST_REPLY, Py_None);
        set_borrowed(s, F_LAST_RECORD, Py_None);
        out = 1;
    }
    for (int i = 0; i < 4; i++)
        if (i != 2)
            Py_XDECREF(u_args[i]);
    Py_XDECREF(usage); Py_XDECREF(ctx); Py_XDECREF(line); Py_XDECREF(ts); Py_XDECREF(idx);
    Py_XDECREF(agent_total); Py_XDECREF(request); Py_XDECREF(rec_id);
done:
    Py_XDECREF(last);
    Py_XDECREF(total);
    Py_XDECREF(window);
    return out;
}

/* `_id` / `_call_id` of an item (borrowed). */
static PyObject *id_of(PyObject *item, int call) {
    PyObject *v = call ? PyDict_GetItemWithError(item, a_call_id) : NULL;
    if (v != NULL && PyUnicode_CheckExact(v))
        return v;
    v = PyDict_GetItemWithError(item, a_id);
    return v != NULL && PyUnicode_CheckExact(v) ? v : Py_None;
}

static int contains(PyObject *set, PyObject *v) {
    return PySet_Contains(set, v);
}

/* A response item: 1 taken (its message appended), 0 not, -1 error. */
static int item(State *s, PyObject *r) {
    PyObject *const *k = s->k;
    if (s->f[F_PENDING] != Py_None)
        return 0;
    PyObject *payload = attr(r, a_payload), *role = NULL, *id = Py_None;
    int out = 0, call = 0;
    if (payload == NULL)
        return -1;
    PyObject *kind = PyDict_CheckExact(payload) ? PyDict_GetItemWithError(payload, a_type) : NULL;
    if (kind == NULL || !PyUnicode_CheckExact(kind))
        goto done;
    int tool = contains(k[K_TOOL_ITEMS], kind), calls = tool == 0 ? contains(k[K_CALLS], kind) : 0;
    if (tool < 0 || calls < 0)
        goto error;
    if (tool || calls) {
        role = tool ? k[K_TOOL] : k[K_ASSISTANT];
        call = 1;
    } else if (PyUnicode_CompareWithASCIIString(kind, "message") == 0) {
        PyObject *who = PyDict_GetItemWithError(payload, a_role);
        if (who == NULL || !PyUnicode_CheckExact(who) || PyUnicode_Compare(who, a_user) == 0)
            goto done; /* (a user message's texts decide its role; a role that is no str: `str(role)`) */
        role = PyDict_GetItemWithError(k[K_ROLES], who);
        if (role == NULL && PyErr_Occurred())
            goto error;
        role = role != NULL ? role : k[K_ROLE_OTHER];
    } else if (PyUnicode_Compare(kind, a_compaction) == 0 || PyUnicode_Compare(kind, a_compaction_summary) == 0) {
        role = k[K_SUMMARY];
        id = NULL;
    } else {
        int a = contains(k[K_ASSISTANT_ITEMS], kind);
        if (a < 0)
            goto error;
        role = a ? k[K_ASSISTANT] : k[K_ROLE_OTHER];
    }
    if (id != NULL)
        id = id_of(payload, call);
    else
        id = Py_None;
    if (PyErr_Occurred())
        goto error;
    PyObject *messages = s->f[F_MESSAGES], *line = attr(r, a_line), *ts = attr(r, a_timestamp);
    PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(messages)), *m = NULL;
    if (line != NULL && ts != NULL && index != NULL) {
        PyObject *m_args[7] = {index, id, line, role, empty, ts, payload};
        m = codex_make(k[K_MESSAGE], m_args, 7);
    }
    out = m != NULL && PyList_Append(messages, m) == 0 ? 1 : -1;
    if (out == 1 && role == k[K_ASSISTANT] && s->f[F_FIRST_REPLY] == Py_None)
        set_borrowed(s, F_FIRST_REPLY, index);
    Py_XDECREF(line); Py_XDECREF(ts); Py_XDECREF(index); Py_XDECREF(m);
done:
    Py_DECREF(payload);
    return out;
error:
    Py_DECREF(payload);
    return -1;
}

/* A task event: 1 taken, 0 not (an overflow to record), -1 error. */
static int task(State *s, PyObject *r) {
    PyObject *kind = attr(r, a_kind), *info = attr(r, a_error_info), *window = attr(r, a_context_window);
    PyObject *trigger = attr(r, a_trigger);
    int out = -1;
    if (kind == NULL || info == NULL || window == NULL || trigger == NULL)
        goto done;
    int started = PyUnicode_CheckExact(kind) && PyUnicode_Compare(kind, a_started) == 0;
    int overflow = PyUnicode_CheckExact(info) && PyUnicode_Compare(info, s->k[K_OVERFLOW]) == 0;
    if (!started && overflow && s->f[F_OVERFLOWED] == Py_False) {
        out = 0;
        goto done;
    }
    if (truthy(window))
        set_borrowed(s, F_WINDOW, window);
    if (started)
        set_borrowed(s, F_TRIGGER, trigger);
    set_borrowed(s, F_OVERFLOWED, Py_False);
    out = 1;
done:
    Py_XDECREF(kind); Py_XDECREF(info); Py_XDECREF(window); Py_XDECREF(trigger);
    return out;
}

/* One record: 1 taken, 0 not, -1 error. */
static int feed(State *s, PyObject *r) {
    PyObject *const *k = s->k;
    PyObject *t = (PyObject *)Py_TYPE(r);
    if (t == k[K_OTHER] || t == k[K_COMPACTION])
        return 1;
    if (t == k[K_ITEM])
        return item(s, r);
    if (t == k[K_COUNT])
        return count(s, r);
    if (t == k[K_RECORD]) {
        set_borrowed(s, F_LAST_RECORD, r);
        return 1;
    }
    if (t == k[K_TURN]) {
        PyObject *model = attr(r, a_model);
        if (model == NULL)
            return -1;
        if (truthy(model))
            set_borrowed(s, F_MODEL, model);
        Py_DECREF(model);
        return 1;
    }
    if (t == k[K_TASK])
        return task(s, r);
    return 0;
}

PyObject *codex_feed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t start;
    if (nargs != 4 || (!PyList_CheckExact(args[1]) && !PyTuple_CheckExact(args[1])) ||
        !PyTuple_CheckExact(args[3]) || PyTuple_GET_SIZE(args[3]) != N_KINDS) {
        PyErr_SetString(PyExc_TypeError, "codex_feed(builder, records, start, kinds)");
        return NULL;
    }
    if ((start = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if (empty == NULL && intern_names() < 0)
        return NULL;
    State s = {{NULL}, ((PyTupleObject *)args[3])->ob_item};
    int ok = 1;
    for (int i = 0; i < N_STATE && ok; i++)
        ok = (s.f[i] = PyObject_GetAttr(args[0], state_names[i])) != NULL;
    if (ok && (!PyList_CheckExact(s.f[F_MESSAGES]) || !PyList_CheckExact(s.f[F_REQUESTS]))) {
        PyErr_SetString(PyExc_TypeError, "codex_feed: the builder's messages and requests are lists");
        ok = 0;
    }
    PyObject *seq = args[1];
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), i = start;
    for (; ok && i < n; i++) {
        int r = feed(&s, PySequence_Fast_ITEMS(seq)[i]);
        if (r < 0)
            ok = 0;
        else if (r == 0)
            break;
    }
    for (int j = 0; j < N_STATE; j++) {
        if (ok && j < F_MESSAGES && PyObject_SetAttr(args[0], state_names[j], s.f[j]) < 0)
            ok = 0;
        Py_XDECREF(s.f[j]);
    }
    return ok ? PyLong_FromSsize_t(i) : NULL;
}
