/* sessiontools.read._native.pi_entries: the Pi reader's entries made in C for every reading
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

/* The usage sums of `analysis.inspect._count`: `*t += v` for a JSON number (an exact int or float; an
 * int too large for a float raises OverflowError, as Python's float + int does). */
static int add_number(double *t, PyObject *v) {
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (PyFloat_CheckExact(v)) {
        *t += PyFloat_AS_DOUBLE(v);
    } else if (PyLong_CheckExact(v)) {
        double d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        *t += d;
    }
    return 0;
}

/* An exact int's value, or 0 with *ok cleared when it is none or out of a long long's range. */
static long long int_of(PyObject *v, int *ok) {
    int overflow = 0;
    long long x = v != NULL && PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    if (v == NULL || !PyLong_CheckExact(v) || overflow)
        *ok = 0;
    return x;
}

/* The sign of an exact int (-1, 0, 1), or 2 when `v` is none (not an exact int). */
static int sign_of(PyObject *v) {
    if (v == NULL || !PyLong_CheckExact(v))
        return 2;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    return overflow ? overflow : (x > 0) - (x < 0);
}

static int is_ascii(PyObject *v, const char *s) {
    return v != NULL && PyUnicode_CheckExact(v) && PyUnicode_CompareWithASCIIString(v, s) == 0;
}

/* `analysis.inspect._plain_request(msg, u, stop)` (usage `u` an exact dict): a completed call,
 * integer usage with a positive prompt, a named model and a total that says the request is one. 0
 * also where the C is not sure (ints out of range): the general rules then decide. */
static int plain_reply(PyObject *model, PyObject *u, PyObject *stop, PyObject *harness, PyObject **k) {
    if (is_ascii(stop, "aborted") || is_ascii(stop, "error"))
        return 0;
    if (model != NULL && model != Py_None) {
        if (!PyUnicode_CheckExact(model))
            return 0;
        int in = PySet_Contains(harness, model);
        if (in != 0)
            return in < 0 ? -1 : 0;
    }
    int ok = 1;
    long long i = int_of(PyDict_GetItemWithError(u, k[0]), &ok), cr = int_of(PyDict_GetItemWithError(u, k[2]), &ok);
    long long cw = int_of(PyDict_GetItemWithError(u, k[3]), &ok), sum;
    if (PyErr_Occurred())
        return -1;
    if (!ok || __builtin_add_overflow(i, cr, &sum) || __builtin_add_overflow(sum, cw, &sum) || sum <= 0)
        return 0;
    PyObject *total = PyDict_GetItemWithError(u, k[4]);
    int s = sign_of(total);
    if (s == 1)
        return 1;
    if (total != NULL && total != Py_None && s != 0)
        return 0;
    PyObject *out = PyDict_GetItemWithError(u, k[1]);
    if (out == NULL)
        return PyErr_Occurred() ? -1 : 1;
    s = sign_of(out);
    return out == Py_None || s == 0 || s == 1;
}

static PyObject *k_unknown; /* "?" */

/* Two names (each None or an exact str) equal. */
static int same_name(PyObject *a, PyObject *b) {
    return a == b || (a != Py_None && b != Py_None && PyUnicode_Compare(a, b) == 0);
}

/* `_model_key(msg)` of a reply whose model is None or a str, or NULL (no error set) when its
 * provider is neither: the general rules say. `last` holds the previous key and its pair. */
static PyObject *model_key(PyObject *p, PyObject *m, PyObject **last) {
    if (p != NULL && p != Py_None && !PyUnicode_CheckExact(p))
        return NULL;
    p = p == NULL ? Py_None : p;
    m = m == NULL ? Py_None : m;
    if (last[0] != NULL && same_name(p, last[1]) && same_name(m, last[2]))
        return last[0];
    int tp = p != Py_None && PyUnicode_GET_LENGTH(p) > 0, tm = m != Py_None && PyUnicode_GET_LENGTH(m) > 0;
    PyObject *key = !tp && !tm ? PyUnicode_FromString("(no model recorded)")
                               : PyUnicode_FromFormat("%U/%U", tp ? p : k_unknown, tm ? m : k_unknown);
    if (key == NULL)
        return NULL;
    Py_XSETREF(last[0], key);
    Py_INCREF(p);
    Py_XSETREF(last[1], p);
    Py_INCREF(m);
    Py_XSETREF(last[2], m);
    return key;
}

static const char *REPLY_KEYS[] = {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "total",
                                   "usage", "stopReason", "model", "provider"};
enum { NKEYS = 11 };

/* pi_reply_sums(messages, harness) -> (input, output, cache_read, cache_write, cost, requests, models,
 * others) or None: `analysis.inspect._count`'s loop over the assistant messages, in C. The four usage
 * sums and the cost as its loop adds them (floats, in file order); the requests, and the count of
 * each model key (`_model_key`), of the plain replies (`_plain_request`); every other message, in
 * order, left to the loop's general rules (`skip_reason`, errors). None when a message is not an
 * exact dict (the loop then does it all). tests/analysis/test_inspect_counts.py holds the two equal. */
PyObject *pi_reply_sums(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0]) || !PyFrozenSet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pi_reply_sums(messages: list, harness: frozenset)");
        return NULL;
    }
    static PyObject *k[NKEYS];
    if (k_unknown == NULL) {
        for (int i = 0; i < NKEYS; i++)
            if ((k[i] = PyUnicode_InternFromString(REPLY_KEYS[i])) == NULL)
                return NULL;
        if ((k_unknown = PyUnicode_InternFromString("?")) == NULL)
            return NULL;
    }
    PyObject *list = args[0], *harness = args[1], *last[3] = {NULL, NULL, NULL};
    PyObject *models = PyDict_New(), *others = PyList_New(0), *out = NULL;
    double t[4] = {0.0, 0.0, 0.0, 0.0}, cost = 0.0;
    Py_ssize_t requests = 0;
    if (models == NULL || others == NULL)
        goto done;
    for (Py_ssize_t n = 0; n < PyList_GET_SIZE(list); n++) {
        PyObject *msg = PyList_GET_ITEM(list, n);
        if (!PyDict_CheckExact(msg)) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *u = PyDict_GetItemWithError(msg, k[7]), *stop = PyDict_GetItemWithError(msg, k[8]);
        PyObject *model = PyDict_GetItemWithError(msg, k[9]), *c;
        int plain = 0;
        if (PyErr_Occurred())
            goto done;
        if (u != NULL && PyDict_CheckExact(u)) {
            for (int i = 0; i < 4; i++)
                if (add_number(&t[i], PyDict_GetItemWithError(u, k[i])) < 0)
                    goto done;
            if ((c = PyDict_GetItemWithError(u, k[5])) != NULL && PyDict_CheckExact(c) &&
                add_number(&cost, PyDict_GetItemWithError(c, k[6])) < 0)
                goto done;
            if (PyErr_Occurred() || (plain = plain_reply(model, u, stop, harness, k)) < 0)
                goto done;
        }
        if (plain) {
            PyObject *key = model_key(PyDict_GetItemWithError(msg, k[10]), model, last), *was;
            if (PyErr_Occurred())
                goto done;
            if (key != NULL) {
                Py_ssize_t had = (was = PyDict_GetItemWithError(models, key)) != NULL ? PyLong_AsSsize_t(was) : 0;
                PyObject *now = PyErr_Occurred() ? NULL : PyLong_FromSsize_t(had + 1);
                if (now == NULL || PyDict_SetItem(models, key, now) < 0) {
                    Py_XDECREF(now);
                    goto done;
                }
                Py_DECREF(now);
                requests++;
                continue;
            }
        }
        if (PyList_Append(others, msg) < 0)
            goto done;
    }
    out = Py_BuildValue("(dddddnOO)", t[0], t[1], t[2], t[3], cost, requests, models, others);
done:
    Py_XDECREF(models);
    Py_XDECREF(others);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(last[i]);
    return out;
}

static const char *USAGE_SLOTS[] = {"input", "cache_read", "cache_write", "output", "cost", "cache_write_1h"};
static const char *COST_SLOTS[] = {"input", "cache_read", "cache_write", "output", "total"};
static const char *COUNT_KEYS[] = {"input", "cacheRead", "cacheWrite", "output"};
static const char *COST_KEYS[] = {"input", "cacheRead", "cacheWrite", "output", "total"};

/* pi_usage(usage_cls, cost_cls, raw) -> a `usage_cls` or None: `transcript.pi.usage.usage_record(raw)`
 * for the usage JSON gives (an exact dict whose four counts are exact ints; its cost, when it is a
 * dict, an exact dict whose five items are exact ints or floats), made with the slots of each object
 * set directly instead of through the dataclasses' `__init__`. None for anything else (`usage_record` then
 * reads it). One per request of every Pi file. tests/transcript/test_pi_neutral_fast_paths.py holds
 * the two equal. */
PyObject *pi_usage(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pi_usage(usage_cls, cost_cls, raw)");
        return NULL;
    }
    static PyObject *count_key[4], *cost_key[5], *k_cost, *zero;
    static PyTypeObject *usage_cls, *cost_cls;
    static Py_ssize_t usage_at[6], cost_at[5];
    if (zero == NULL) {
        for (int i = 0; i < 4; i++)
            if ((count_key[i] = PyUnicode_InternFromString(COUNT_KEYS[i])) == NULL)
                return NULL;
        for (int i = 0; i < 5; i++)
            if ((cost_key[i] = PyUnicode_InternFromString(COST_KEYS[i])) == NULL)
                return NULL;
        if ((k_cost = PyUnicode_InternFromString("cost")) == NULL || (zero = PyLong_FromLong(0)) == NULL)
            return NULL;
    }
    if ((PyTypeObject *)args[0] != usage_cls || (PyTypeObject *)args[1] != cost_cls) {
        /* (the offsets of the classes' slots, found once per pair of classes) */
        for (int i = 0; i < 6; i++)
            if ((usage_at[i] = slot_offset((PyTypeObject *)args[0], USAGE_SLOTS[i])) < 0)
                return NULL;
        for (int i = 0; i < 5; i++)
            if ((cost_at[i] = slot_offset((PyTypeObject *)args[1], COST_SLOTS[i])) < 0)
                return NULL;
        usage_cls = (PyTypeObject *)args[0];
        cost_cls = (PyTypeObject *)args[1];
    }
    PyObject *raw = args[2], *counts[4], *items[5], *cost;
    if (!PyDict_CheckExact(raw))
        Py_RETURN_NONE;
    for (int i = 0; i < 4; i++) {
        counts[i] = PyDict_GetItemWithError(raw, count_key[i]);
        if (counts[i] == NULL || !PyLong_CheckExact(counts[i])) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
    }
    cost = PyDict_GetItemWithError(raw, k_cost);
    if (cost == NULL && PyErr_Occurred())
        return NULL;
    double v[5];
    int has_cost = cost != NULL && PyDict_Check(cost);
    if (has_cost) {
        if (!PyDict_CheckExact(cost))
            Py_RETURN_NONE;
        for (int i = 0; i < 5; i++) {
            items[i] = PyDict_GetItemWithError(cost, cost_key[i]);
            if (items[i] == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                Py_RETURN_NONE;
            }
            if (PyFloat_CheckExact(items[i])) {
                v[i] = PyFloat_AS_DOUBLE(items[i]);
            } else if (PyLong_CheckExact(items[i])) {
                v[i] = PyLong_AsDouble(items[i]);
                if (v[i] == -1.0 && PyErr_Occurred()) { /* (past a float's range: `usage_record` raises it) */
                    PyErr_Clear();
                    Py_RETURN_NONE;
                }
            } else {
                Py_RETURN_NONE;
            }
        }
    }
    PyObject *c = Py_None, *u;
    if (has_cost) {
        if ((c = cost_cls->tp_alloc(cost_cls, 0)) == NULL)
            return NULL;
        for (int i = 0; i < 5; i++) {
            PyObject *f = PyFloat_FromDouble(v[i]);
            if (f == NULL) {
                Py_DECREF(c);
                return NULL;
            }
            put(c, cost_at[i], f);
            Py_DECREF(f);
        }
    } else {
        Py_INCREF(c);
    }
    if ((u = usage_cls->tp_alloc(usage_cls, 0)) == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    for (int i = 0; i < 4; i++)
        put(u, usage_at[i], counts[i]);
    put(u, usage_at[4], c);
    put(u, usage_at[5], zero);
    Py_DECREF(c);
    return u;
}
