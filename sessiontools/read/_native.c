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

static PyObject *fast_name;

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

PyObject *project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs); /* _project.c */
void project_init(void);

static PyMethodDef methods[] = {
    {"scan_fields", (PyCFunction)(void (*)(void))scan_fields, METH_FASTCALL,
     "scan_fields(obj, checks) -> list of (key, kept, reason) or None (see read.values.scan_fields)"},
    {"project_lines", (PyCFunction)(void (*)(void))project_lines, METH_FASTCALL,
     "project_lines(data, spec, first, limit) -> list of (start, stop, fields or None) (see _project.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    fast_name = PyUnicode_InternFromString("fast");
    if (fast_name == NULL)
        return NULL;
    project_init();
    return PyModule_Create(&module);
}
