/* sessiontools.read._native.codex_records: a Codex rollout's projected lines made into their records
 * in C (issue 28), without a Python frame per line.
 *
 * codex_records(data, spec, limit, tree, check_tree, classes, lean) -> (records, todo, wrapped,
 * ordinal): the lines of `data` projected by `project_lines(data, spec, 2, limit)` (_project.c; line
 * 1 and every line it is not sure of go the ordinary way), each projection made into the record
 * `read.codex.load._record` makes of it. `records` holds them in file order; `todo` holds
 * (line, start, stop, position) for each line that goes the reader's ordinary way (the projection
 * is None, or a value the C does not take as it is: a usage count that is no int, a window that is no
 * int, an error message that is no str, a type other than the four projected ones, a response item
 * whose blocks fail `check_tree(fields, tree)`), its records to be put before `records[position]`.
 * `wrapped` and `ordinal` count the projected lines (all wrapped) and those with an `ordinal`.
 * `classes` is (class, its fields' member descriptors in order) of TokenUsage, TokenCount, Other,
 * CompactionEvent, TaskEvent, ErrorEvent, ResponseItem, UsageRecord, TurnContext (`read.codex.records`); `lean`, a dict or None, gets line -> (start,
 * stop) of each projected response item (`load._FullItems`). `load._read_native` is the Python
 * reference (the same records: tests/read/test_codex_records.py, C on against C off). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _project.c */

enum { C_USAGE, C_COUNT, C_OTHER, C_COMPACTION, C_TASK, C_ERROR, C_ITEM, C_RECORD, C_TURN, N_CLASSES };

static PyObject *s_timestamp, *s_type, *s_payload, *s_ordinal, *s_info, *s_window, *s_total, *s_last,
    *s_item, *s_error, *s_attribution, *s_message, *s_error_info, *s_turn_id, *s_trigger, *s_role,
    *s_response_id, *s_usage, *s_model, *s_cwd, *s_event_msg, *s_token_count, *s_started, *s_complete,
    *s_item_completed, *s_context_compacted, *s_empty;
static PyObject *usage_keys[6];
static const char *usage_names[6] = {"input_tokens", "cached_input_tokens", "output_tokens",
                                     "reasoning_output_tokens", "total_tokens", "cache_write_input_tokens"};

static int intern_all(void) {
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    I(s_timestamp, "timestamp"); I(s_type, "type"); I(s_payload, "payload"); I(s_ordinal, "ordinal");
    I(s_info, "info"); I(s_window, "model_context_window"); I(s_total, "total_token_usage");
    I(s_last, "last_token_usage"); I(s_item, "item"); I(s_error, "error");
    I(s_attribution, "turn_attribution"); I(s_message, "message"); I(s_error_info, "codex_error_info");
    I(s_turn_id, "turn_id"); I(s_trigger, "turn_trigger"); I(s_role, "role");
    I(s_response_id, "response_id"); I(s_usage, "usage"); I(s_model, "model"); I(s_cwd, "cwd");
    I(s_event_msg, "event_msg"); I(s_token_count, "token_count"); I(s_started, "started");
    I(s_complete, "complete"); I(s_item_completed, "item_completed");
    I(s_context_compacted, "context_compacted"); I(s_empty, "");
    for (int i = 0; i < 6; i++)
        I(usage_keys[i], usage_names[i]);
#undef I
    return 0;
}

/* d[key] (borrowed) or NULL when absent; never an error for a dict of str keys */
static PyObject *get(PyObject *d, PyObject *key) {
    return PyDict_GetItemWithError(d, key);
}

/* `_str`: the value when it is a str, else None (borrowed). */
static PyObject *str_or_none(PyObject *v) {
    return v != NULL && PyUnicode_CheckExact(v) ? v : Py_None;
}

static int is(PyObject *v, const char *text) {
    return v != NULL && PyUnicode_CheckExact(v) && PyUnicode_CompareWithASCIIString(v, text) == 0;
}

/* A record of class `kind` with its fields `args` (in the dataclass's order), made as its __init__
 * would (which only sets each field) without the Python frame: the instance from the type's
 * tp_new, each field set through its slot's member descriptor. `classes[kind]` is (class,
 * descriptors) (`load._CLASSES`; _codex_path.c's too). */
static PyObject *empty;
PyObject *codex_make(PyObject *entry, PyObject *const *args, size_t n) {
    PyObject *descrs = PyTuple_GET_ITEM(entry, 1);
    PyTypeObject *cls = (PyTypeObject *)PyTuple_GET_ITEM(entry, 0);
    if ((size_t)PyTuple_GET_SIZE(descrs) != n) {
        PyErr_SetString(PyExc_TypeError, "codex_records: a record class with other fields");
        return NULL;
    }
    if (empty == NULL && (empty = PyTuple_New(0)) == NULL)
        return NULL;
    PyObject *obj = cls->tp_new(cls, empty, NULL);
    for (size_t i = 0; obj != NULL && i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(descrs, i);
        if (Py_TYPE(d)->tp_descr_set(d, obj, args[i]) < 0)
            Py_CLEAR(obj);
    }
    return obj;
}
#define make(kind, args, n) codex_make(l->cls[kind], args, n)

typedef struct {
    PyObject *const *cls;
    PyObject *n, *ts; /* the line number, the timestamp or None */
} Line;

/* `load.token_usage` of `raw`: a new reference, Py_None (new) when it is no object, or NULL with
 * *ordinary set when a count is neither an int nor absent/null (`integer` would convert it). */
static PyObject *usage_of(const Line *l, PyObject *raw, int *ordinary) {
    if (raw == NULL || !PyDict_CheckExact(raw))
        Py_RETURN_NONE;
    PyObject *args[6];
    for (int i = 0; i < 6; i++) {
        PyObject *v = get(raw, usage_keys[i]);
        if (v == NULL || v == Py_None) {
            static PyObject *zero;
            if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
                return NULL;
            v = zero;
        } else if (!PyLong_CheckExact(v)) {
            *ordinary = 1;
            return NULL;
        }
        args[i] = v;
    }
    return make(C_USAGE, args, 6);
}

/* `integer(v, None)` where it is exact here: an int, or None when absent/null; NULL otherwise. */
static PyObject *window_of(PyObject *v) {
    if (v == NULL || v == Py_None)
        return Py_None;
    return PyLong_CheckExact(v) ? v : NULL;
}

static PyObject *other(const Line *l, PyObject *type, PyObject *sub) {
    PyObject *args[4] = {l->n, l->ts, type, sub};
    return make(C_OTHER, args, 4);
}

static PyObject *token_count(const Line *l, PyObject *p, int *ordinary) {
    PyObject *info = get(p, s_info);
    if (info == NULL || !PyDict_CheckExact(info))
        return other(l, s_event_msg, s_token_count); /* a rate-limit-only count */
    PyObject *window = window_of(get(info, s_window));
    if (window == NULL) {
        *ordinary = 1;
        return NULL;
    }
    PyObject *total = usage_of(l, get(info, s_total), ordinary), *last = NULL, *r = NULL;
    if (total != NULL && (last = usage_of(l, get(info, s_last), ordinary)) != NULL) {
        PyObject *args[5] = {l->n, l->ts, total, last, window};
        r = make(C_COUNT, args, 5);
    }
    Py_XDECREF(total);
    Py_XDECREF(last);
    return r;
}

/* `get(key)` of a payload member when it is an object, else NULL (`{}` in `_event`). */
static PyObject *member_object(PyObject *p, PyObject *key) {
    PyObject *v = get(p, key);
    return v != NULL && PyDict_CheckExact(v) ? v : NULL;
}

static PyObject *task(const Line *l, PyObject *p, PyObject *kind, int *ordinary) {
    PyObject *err = member_object(p, s_error), *attribution = member_object(p, s_attribution);
    PyObject *window = window_of(get(p, s_window));
    if (window == NULL) {
        *ordinary = 1;
        return NULL;
    }
    PyObject *args[8] = {l->n, l->ts, is(kind, "task_started") ? s_started : s_complete,
                         str_or_none(get(p, s_turn_id)), window,
                         err ? str_or_none(get(err, s_message)) : Py_None,
                         err ? str_or_none(get(err, s_error_info)) : Py_None,
                         attribution ? str_or_none(get(attribution, s_trigger)) : Py_None};
    return make(C_TASK, args, 8);
}

/* `load._event`: an event_msg line's record. */
static PyObject *event(const Line *l, PyObject *p, int *ordinary) {
    PyObject *kind = get(p, s_type);
    if (is(kind, "token_count"))
        return token_count(l, p, ordinary);
    if (is(kind, "item_completed")) {
        PyObject *item = member_object(p, s_item);
        if (item != NULL && is(get(item, s_type), "ContextCompaction")) {
            PyObject *args[3] = {l->n, l->ts, s_item_completed};
            return make(C_COMPACTION, args, 3);
        }
        return other(l, s_event_msg, kind);
    }
    if (is(kind, "task_started") || is(kind, "task_complete") || is(kind, "turn_aborted"))
        return task(l, p, kind, ordinary);
    if (is(kind, "error")) {
        PyObject *message = get(p, s_message), *info = get(p, s_error_info);
        if (message == NULL)
            message = s_empty;
        else if (!PyUnicode_CheckExact(message)) { /* (`str(...)` of another value: the Python way) */
            *ordinary = 1;
            return NULL;
        }
        PyObject *args[4] = {l->n, l->ts, message, str_or_none(info)};
        return make(C_ERROR, args, 4);
    }
    if (is(kind, "context_compacted")) {
        PyObject *args[3] = {l->n, l->ts, s_context_compacted};
        return make(C_COMPACTION, args, 3);
    }
    return other(l, s_event_msg, str_or_none(kind));
}

/* `load._record` of a projected line (`fields`, its payload `p` an object): a new record, or NULL
 * with *ordinary set (the line goes the ordinary way) or without it (an error). */
static PyObject *record(const Line *l, PyObject *p, PyObject *kind, int *ordinary) {
    if (kind == s_event_msg || is(kind, "event_msg"))
        return event(l, p, ordinary);
    if (is(kind, "response_item")) {
        PyObject *item_type = get(p, s_type);
        if (item_type == NULL || !PyUnicode_CheckExact(item_type)) {
            *ordinary = 1; /* (a Diagnostic the ordinary way) */
            return NULL;
        }
        PyObject *args[5] = {l->n, l->ts, item_type, str_or_none(get(p, s_role)), p};
        return make(C_ITEM, args, 5);
    }
    if (is(kind, "token_usage_record")) {
        PyObject *u = usage_of(l, get(p, s_usage), ordinary), *r = NULL;
        if (u != NULL) {
            PyObject *args[4] = {l->n, l->ts, str_or_none(get(p, s_response_id)), u};
            r = make(C_RECORD, args, 4);
            Py_DECREF(u);
        }
        return r;
    }
    if (is(kind, "turn_context")) {
        PyObject *args[5] = {l->n, l->ts, str_or_none(get(p, s_turn_id)), str_or_none(get(p, s_model)),
                             str_or_none(get(p, s_cwd))};
        return make(C_TURN, args, 5);
    }
    *ordinary = 1; /* (no type, or another one: the ordinary way says what it is) */
    return NULL;
}

/* One projected row (start, stop, fields) into `records` (1) or not (0: the ordinary way); -1 error. */
static int take(PyObject *const *args, PyObject *row, Py_ssize_t n, PyObject *records, PyObject *lean,
                Py_ssize_t *ordinal) {
    PyObject *fields = PyTuple_GET_ITEM(row, 2);
    if (fields == Py_None || !PyDict_CheckExact(fields))
        return 0;
    PyObject *p = get(fields, s_payload), *kind = get(fields, s_type);
    if (p == NULL || !PyDict_CheckExact(p))
        return 0;
    int item = is(kind, "response_item");
    if (item) {
        PyObject *tree_args[2] = {fields, args[3]};
        PyObject *ok = PyObject_Vectorcall(args[4], tree_args, 2, NULL);
        if (ok == NULL)
            return -1;
        Py_DECREF(ok);
        if (ok != Py_True)
            return 0;
    }
    PyObject *number = PyLong_FromSsize_t(n);
    if (number == NULL)
        return -1;
    Line l = {((PyTupleObject *)args[5])->ob_item, number, str_or_none(get(fields, s_timestamp))};
    int ordinary = 0;
    PyObject *rec = record(&l, p, kind, &ordinary);
    int r = rec != NULL ? 1 : ordinary ? 0 : -1;
    if (rec != NULL) {
        r = PyList_Append(records, rec) < 0 ? -1 : 1;
        Py_DECREF(rec);
        *ordinal += get(fields, s_ordinal) != NULL;
        if (r == 1 && item && lean != Py_None) {
            PyObject *where = PyTuple_GetSlice(row, 0, 2);
            r = where == NULL || PyDict_SetItem(lean, number, where) < 0 ? -1 : 1;
            Py_XDECREF(where);
        }
    }
    Py_DECREF(number);
    return r;
}

PyObject *codex_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyTuple_CheckExact(args[5]) || PyTuple_GET_SIZE(args[5]) != N_CLASSES ||
        (args[6] != Py_None && !PyDict_CheckExact(args[6]))) {
        PyErr_SetString(PyExc_TypeError,
                        "codex_records(data, spec, limit, tree, check_tree, classes: tuple of 9, lean: dict or None)");
        return NULL;
    }
    for (int i = 0; i < N_CLASSES; i++) {
        PyObject *e = PyTuple_GET_ITEM(args[5], i);
        int ok = PyTuple_CheckExact(e) && PyTuple_GET_SIZE(e) == 2 && PyType_Check(PyTuple_GET_ITEM(e, 0)) &&
                 PyTuple_CheckExact(PyTuple_GET_ITEM(e, 1));
        for (Py_ssize_t j = 0; ok && j < PyTuple_GET_SIZE(PyTuple_GET_ITEM(e, 1)); j++)
            ok = Py_TYPE(PyTuple_GET_ITEM(PyTuple_GET_ITEM(e, 1), j))->tp_descr_set != NULL;
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "codex_records: classes are (class, field descriptors) pairs");
            return NULL;
        }
    }
    if (s_timestamp == NULL && intern_all() < 0)
        return NULL;
    PyObject *first = PyLong_FromLong(2);
    if (first == NULL)
        return NULL;
    PyObject *pargs[4] = {args[0], args[1], first, args[2]};
    PyObject *rows = project_lines(self, pargs, 4);
    Py_DECREF(first);
    if (rows == NULL)
        return NULL;
    PyObject *records = PyList_New(0), *todo = PyList_New(0), *out = NULL;
    Py_ssize_t wrapped = 0, ordinal = 0, count = PyList_GET_SIZE(rows);
    if (records == NULL || todo == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        int r = take(args, row, i + 1, records, args[6], &ordinal);
        if (r < 0)
            goto done;
        if (r == 1) {
            wrapped++;
            continue;
        }
        PyObject *t = Py_BuildValue("(nOOn)", i + 1, PyTuple_GET_ITEM(row, 0), PyTuple_GET_ITEM(row, 1),
                                    PyList_GET_SIZE(records));
        if (t == NULL || PyList_Append(todo, t) < 0) {
            Py_XDECREF(t);
            goto done;
        }
        Py_DECREF(t);
    }
    out = Py_BuildValue("(OOnn)", records, todo, wrapped, ordinal);
done:
    Py_DECREF(rows);
    Py_XDECREF(records);
    Py_XDECREF(todo);
    return out;
}
