/* sessiontools.read._native.pi_entries: the Pi reader's entries made in C for a selective reading
 * (issue 28; `read.pi.load`), each `Entry`'s slots set directly instead of through its `__init__`. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* (T_OBJECT_EX: the kind of a `__slots__` member) */

/* The offset of a slot (`__slots__` member) of `cls`, or -1 with an exception set. */
static Py_ssize_t slot_offset(PyTypeObject *cls, const char *name) {
    PyObject *d = PyDict_GetItemString(cls->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "pi_entries: %s is no slot of the entry class", name);
        return -1;
    }
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

static void put(PyObject *obj, Py_ssize_t offset, PyObject *v) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_INCREF(v);
    Py_XSETREF(*slot, v);
}

static const char *ENTRY_SLOTS[] = {"type", "id", "parent_id", "line", "index", "data", "message", "role"};

/* pi_entries(cls, objects, lines) -> tuple: `read.pi.migrate.make_entries` (`Entry(type, id,
 * parent_id, line, index, data)` for each object, its `__init__` resolving message and role), the
 * slots of each new `cls` object set directly. tests/read/test_pi_selective.py holds the two equal. */
PyObject *pi_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2]) ||
        PyList_GET_SIZE(args[1]) != PyList_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "pi_entries(cls, objects: list, lines: list of the same length)");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    Py_ssize_t at[8], n = PyList_GET_SIZE(args[1]);
    for (int i = 0; i < 8; i++)
        if ((at[i] = slot_offset(cls, ENTRY_SLOTS[i])) < 0)
            return NULL;
    PyObject *out = PyTuple_New(n), *missing = PyUnicode_FromString("<missing>");
    PyObject *k_type = PyUnicode_FromString("type"), *k_id = PyUnicode_FromString("id");
    PyObject *k_parent = PyUnicode_FromString("parentId"), *k_message = PyUnicode_FromString("message");
    PyObject *k_role = PyUnicode_FromString("role");
    if (out == NULL || missing == NULL || k_type == NULL || k_id == NULL || k_parent == NULL ||
        k_message == NULL || k_role == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyList_GET_ITEM(args[1], i), *e;
        if (!PyDict_Check(obj)) {
            PyErr_SetString(PyExc_TypeError, "pi_entries: an entry object is a dict");
            goto fail;
        }
        PyObject *t = PyDict_GetItemWithError(obj, k_type), *id = PyDict_GetItemWithError(obj, k_id);
        PyObject *pid = PyDict_GetItemWithError(obj, k_parent), *index = PyLong_FromSsize_t(i + 1);
        if (PyErr_Occurred() || index == NULL || (e = cls->tp_alloc(cls, 0)) == NULL) {
            Py_XDECREF(index);
            goto fail;
        }
        PyTuple_SET_ITEM(out, i, e);
        t = t != NULL && PyUnicode_CheckExact(t) ? t : missing;
        put(e, at[0], t);
        put(e, at[1], id != NULL && PyUnicode_CheckExact(id) ? id : Py_None);
        put(e, at[2], pid != NULL && PyUnicode_CheckExact(pid) ? pid : Py_None);
        put(e, at[3], PyList_GET_ITEM(args[2], i));
        put(e, at[4], index);
        Py_DECREF(index);
        put(e, at[5], obj);
        PyObject *msg = NULL, *role = NULL;
        if (PyUnicode_CompareWithASCIIString(t, "message") == 0) {
            msg = PyDict_GetItemWithError(obj, k_message);
            msg = msg != NULL && PyDict_Check(msg) ? msg : NULL;
            role = msg != NULL ? PyDict_GetItemWithError(msg, k_role) : NULL;
            role = role != NULL && PyUnicode_Check(role) ? role : NULL;
            if (PyErr_Occurred())
                goto fail;
        }
        put(e, at[6], msg != NULL ? msg : Py_None);
        put(e, at[7], role != NULL ? role : Py_None);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(missing);
    Py_XDECREF(k_type);
    Py_XDECREF(k_id);
    Py_XDECREF(k_parent);
    Py_XDECREF(k_message);
    Py_XDECREF(k_role);
    return out;
}
