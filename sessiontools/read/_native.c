/* sessiontools.read._native: the common case of `read.values.check_fields` in C (issue 28).
 *
 * `scan_fields(obj, checks)` is `read.values.scan_fields` (the pure-Python reference, used when
 * this extension is not built): for each field of the dict `obj` that `checks` names, the value is
 * kept as it is when its check's `fast` mark says so (`read.values.fast_pass`), else the check is
 * called; the result is None when every value is kept unchanged, else the list of
 * (key, kept, reason) of those that are not, in the object's order. tests/read/test_native.py holds
 * the two equal. `project_lines` (a file's lines validated as JSON, only declared fields built) is
 * in _project.c. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *fast_name, *type_name;

/* 1: `v` passes `fast` = (types, numbers, low, high) without its check; 0: not; -1: error. */
int fast_ok(PyObject *fast, PyObject *v) {
    if (!PyTuple_Check(fast) || PyTuple_GET_SIZE(fast) != 4) {
        PyErr_SetString(PyExc_TypeError, "a check's fast mark is (types, numbers, low, high)");
        return -1;
    }
    PyObject *t = (PyObject *)Py_TYPE(v);
    int r = PySequence_Contains(PyTuple_GET_ITEM(fast, 0), t);
    if (r != 0)
        return r;
    r = PySequence_Contains(PyTuple_GET_ITEM(fast, 1), t);
    if (r <= 0)
        return r;
    r = PyObject_RichCompareBool(PyTuple_GET_ITEM(fast, 2), v, Py_LE);
    if (r <= 0)
        return r;
    return PyObject_RichCompareBool(v, PyTuple_GET_ITEM(fast, 3), Py_LE);
}

static PyObject *scan_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "scan_fields(obj: dict, checks: dict)");
        return NULL;
    }
    PyObject *obj = args[0], *checks = args[1];
    PyObject *changes = NULL, *key, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(obj, &pos, &key, &v)) {
        PyObject *check = PyDict_GetItemWithError(checks, key);
        if (check == NULL) {
            if (PyErr_Occurred())
                goto error;
            continue;
        }
        Py_INCREF(key);
        Py_INCREF(v);
        Py_INCREF(check);
        PyObject *fast = PyObject_GetAttr(check, fast_name);
        int ok = 0;
        if (fast == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                goto error_held;
            PyErr_Clear();
        } else {
            ok = fast == Py_None ? 0 : fast_ok(fast, v);
            Py_DECREF(fast);
            if (ok < 0)
                goto error_held;
        }
        if (!ok) {
            PyObject *res = PyObject_CallOneArg(check, v);
            if (res == NULL)
                goto error_held;
            if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
                Py_DECREF(res);
                PyErr_SetString(PyExc_TypeError, "a check returns (kept, reason)");
                goto error_held;
            }
            PyObject *kept = PyTuple_GET_ITEM(res, 0), *why = PyTuple_GET_ITEM(res, 1);
            if (why != Py_None || kept != v) {
                if (changes == NULL && (changes = PyList_New(0)) == NULL) {
                    Py_DECREF(res);
                    goto error_held;
                }
                PyObject *item = PyTuple_Pack(3, key, kept, why);
                if (item == NULL || PyList_Append(changes, item) < 0) {
                    Py_XDECREF(item);
                    Py_DECREF(res);
                    goto error_held;
                }
                Py_DECREF(item);
            }
            Py_DECREF(res);
        }
        Py_DECREF(check);
        Py_DECREF(v);
        Py_DECREF(key);
        continue;
    error_held:
        Py_DECREF(check);
        Py_DECREF(v);
        Py_DECREF(key);
        goto error;
    }
    if (changes == NULL)
        Py_RETURN_NONE;
    return changes;
error:
    Py_XDECREF(changes);
    return NULL;
}

int pi_fast_ok(PyObject *fast, PyObject *v); /* _pi.c: `fast_ok` with the mark compiled once */

/* 1: the value `v` of a field passes its spec's `rule` (see `tree_ok`); 0: not; -1: error. */
static int field_ok(PyObject *v, PyObject *rule, int depth);

/* 1: every field `spec` names in the dict `obj` passes its fast mark, and so on down its nested
 * specs; 0: one does not (the reader's Python check then runs); -1: error. A spec maps a key to a
 * fast mark (types, numbers, low, high), or to (mark or None, sub) where sub is a spec applied to
 * the value when it is a dict, or [spec] applied to each dict in the value when it is a list.
 * The fields both name are found from the keys of the smaller of the two dicts (the same fields
 * either way): an object holds a few of the fields its spec names (a message ~8 of 21, a content
 * block 2-4 of 7), and a key looked up and missed costs as much as one found. */
static int tree_ok(PyObject *obj, PyObject *spec, int depth) {
    PyObject *key, *x;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(spec) || depth > 32) {
        PyErr_SetString(PyExc_TypeError, "a check spec is a dict (nested at most 32 deep)");
        return -1;
    }
    int by_obj = PyDict_GET_SIZE(obj) < PyDict_GET_SIZE(spec);
    PyObject *small = by_obj ? obj : spec, *big = by_obj ? spec : obj;
    while (PyDict_Next(small, &pos, &key, &x)) {
        PyObject *y = PyDict_GetItemWithError(big, key);
        if (y == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        int r = by_obj ? field_ok(x, y, depth) : field_ok(y, x, depth);
        if (r != 1)
            return r;
    }
    return 1;
}

static int field_ok(PyObject *v, PyObject *rule, int depth) {
    if (!PyTuple_Check(rule) || (PyTuple_GET_SIZE(rule) != 2 && PyTuple_GET_SIZE(rule) != 4)) {
        PyErr_SetString(PyExc_TypeError, "a check spec's rule is a fast mark or (mark, sub)");
        return -1;
    }
    PyObject *mark = PyTuple_GET_SIZE(rule) == 4 ? rule : PyTuple_GET_ITEM(rule, 0);
    int r = mark == Py_None ? 1 : pi_fast_ok(mark, v);
    if (r != 1 || PyTuple_GET_SIZE(rule) == 4)
        return r;
    PyObject *sub = PyTuple_GET_ITEM(rule, 1);
    if (PyDict_Check(sub))
        return PyDict_CheckExact(v) ? tree_ok(v, sub, depth + 1) : 1;
    if (PyList_Check(sub) && PyList_GET_SIZE(sub) == 1) {
        if (!PyList_CheckExact(v))
            return 1;
        PyObject *each = PyList_GET_ITEM(sub, 0);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            PyObject *item = PyList_GET_ITEM(v, i);
            if (PyDict_CheckExact(item) && (r = tree_ok(item, each, depth + 1)) != 1)
                return r;
        }
        return 1;
    }
    PyErr_SetString(PyExc_TypeError, "a check spec's sub is a spec or [a spec]");
    return -1;
}

/* check_tree(obj, spec) -> bool: `tree_ok` of one dict. */
static PyObject *check_tree(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "check_tree(obj: dict, spec: dict)");
        return NULL;
    }
    int r = tree_ok(args[0], args[1], 0);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

/* check_trees(objects, by_type, other) -> list of the indexes of the dicts in `objects` that do not
 * pass `tree_ok` with the spec `by_type[obj["type"]]` (`other` for a type not in it, or not a str). */
static PyObject *check_trees(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "check_trees(objects: list, by_type: dict, other: dict)");
        return NULL;
    }
    PyObject *objects = args[0], *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(objects); i++) {
        PyObject *obj = PyList_GET_ITEM(objects, i), *spec = args[2];
        int r = 0;
        if (PyDict_Check(obj)) {
            PyObject *t = PyDict_GetItemWithError(obj, type_name);
            if (t != NULL && PyUnicode_CheckExact(t)) {
                PyObject *s = PyDict_GetItemWithError(args[1], t);
                spec = s != NULL ? s : spec;
            }
            r = PyErr_Occurred() ? -1 : tree_ok(obj, spec, 0);
        }
        if (r < 0)
            Py_CLEAR(out);
        else if (r == 0) {
            PyObject *k = PyLong_FromSsize_t(i);
            if (k == NULL || PyList_Append(out, k) < 0)
                Py_CLEAR(out);
            Py_XDECREF(k);
        }
    }
    return out;
}

PyObject *project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _project.c */
void project_init(void);
PyObject *pi_project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi.c */
PyObject *codex_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _codex.c */
PyObject *codex_feed(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _codex_path.c */
PyObject *pi_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_entries.c */
PyObject *pi_reply_sums(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_entries.c */
PyObject *pi_usage(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_entries.c */
PyObject *pi_units(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_units.c */
PyObject *pi_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs);  /* _pi_units.c */
PyObject *pi_path_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_path.c */
PyObject *pi_message_measure(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _pi_measure.c */
void pi_init(void);
PyObject *claude_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _claude.c */
void claude_init(void);
PyObject *codex_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _codex_summary.c */
PyObject *price_sums(PyObject *self, PyObject *const *args, Py_ssize_t nargs);    /* _price.c */
PyObject *point_sources(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _price.c */
PyObject *walk_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _walk_span.c */

static PyMethodDef methods[] = {
    {"scan_fields", (PyCFunction)(void (*)(void))scan_fields, METH_FASTCALL,
     "scan_fields(obj, checks) -> list of (key, kept, reason) or None (see read.values.scan_fields)"},
    {"check_tree", (PyCFunction)(void (*)(void))check_tree, METH_FASTCALL,
     "check_tree(obj, spec) -> whether every field the spec names passes its fast mark (see tree_ok)"},
    {"check_trees", (PyCFunction)(void (*)(void))check_trees, METH_FASTCALL,
     "check_trees(objects, by_type, other) -> indexes of the objects that do not pass (see tree_ok)"},
    {"project_lines", (PyCFunction)(void (*)(void))project_lines, METH_FASTCALL,
     "project_lines(data, spec, first, limit) -> list of (start, stop, fields or None) (see _project.c)"},
    {"codex_records", (PyCFunction)(void (*)(void))codex_records, METH_FASTCALL,
     "codex_records(data, spec, limit, tree, check_tree, classes, lean) -> a rollout's projected records (see _codex.c)"},
    {"codex_feed", (PyCFunction)(void (*)(void))codex_feed, METH_FASTCALL,
     "codex_feed(builder, records, start, kinds) -> the first record it does not take (see _codex_path.c)"},
    {"pi_project_lines", (PyCFunction)(void (*)(void))pi_project_lines, METH_FASTCALL,
     "pi_project_lines(data, spec, first, limit) -> project_lines with check-only fields (see _pi.c)"},
    {"pi_entries", (PyCFunction)(void (*)(void))pi_entries, METH_FASTCALL,
     "pi_entries(cls, objects, lines) -> tuple of entries: read.pi.migrate.make_entries (see _pi.c)"},
    {"pi_reply_sums", (PyCFunction)(void (*)(void))pi_reply_sums, METH_FASTCALL,
     "pi_reply_sums(messages, harness) -> analysis.inspect._count's sums (see _pi_entries.c)"},
    {"pi_usage", (PyCFunction)(void (*)(void))pi_usage, METH_FASTCALL,
     "pi_usage(usage_cls, cost_cls, raw) -> transcript.pi.usage.usage_record(raw) or None (see _pi_entries.c)"},
    {"pi_units", (PyCFunction)(void (*)(void))pi_units, METH_FASTCALL,
     "pi_units(raw, images, system) -> (texts, images, utf16, utf8) of tokens.units.units_of or None (see _pi_units.c)"},
    {"pi_json", (PyCFunction)(void (*)(void))pi_json, METH_FASTCALL,
     "pi_json(value) -> jsvalues.json_stringify(value) or None (see _pi_units.c)"},
    {"pi_path_messages", (PyCFunction)(void (*)(void))pi_path_messages, METH_FASTCALL,
     "pi_path_messages(...) -> the first entry position it did not take (see _pi_path.c)"},
    {"pi_message_measure", (PyCFunction)(void (*)(void))pi_message_measure, METH_FASTCALL,
     "pi_message_measure(message, version) -> (serialized_length, file_ops dicts or None) or None (see _pi_measure.c)"},
    {"claude_summary", (PyCFunction)(void (*)(void))claude_summary, METH_FASTCALL,
     "claude_summary(files, limit, high, total_high) -> what inspect reads of a Claude Code session or None (see _claude.c)"},
    {"codex_summary", (PyCFunction)(void (*)(void))codex_summary, METH_FASTCALL,
     "codex_summary(data, limit, high, total_high) -> what inspect reads of a Codex rollout or None (see _codex_summary.c)"},
    {"price_sums", (PyCFunction)(void (*)(void))price_sums, METH_FASTCALL,
     "price_sums(requests, compactions, ...) -> replay.cost._price_loop's sums or None (see _price.c)"},
    {"point_sources", (PyCFunction)(void (*)(void))point_sources, METH_FASTCALL,
     "point_sources(requests, point_type, members) -> each member's count of the truth sources or None (see _price.c)"},
    {"walk_span", (PyCFunction)(void (*)(void))walk_span, METH_FASTCALL,
     "walk_span(cols, n, ...) -> a span of plain requests walked, or None (see _walk_span.c, replay.walk_span)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    fast_name = PyUnicode_InternFromString("fast");
    type_name = PyUnicode_InternFromString("type");
    if (fast_name == NULL || type_name == NULL)
        return NULL;
    project_init();
    pi_init();
    claude_init();
    return PyModule_Create(&module);
}
