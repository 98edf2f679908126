/* The messages of a Pi 0.x path in C: `pi_path_messages(...)`, the fast path of
 * `transcript.pi.neutral._PathBuilder.__init__`'s loop (a 0.x message entry's own messages are its
 * message dict: one `PiMessage` each), with the objects' slots set directly.
 *
 * It takes entries from `start` on while each is an exact `entry_cls` object holding a message (an
 * exact dict whose "role" is absent or an exact str) and exact-dict data, and stops at the first
 * other entry: the Python loop does that one by its general rule, then calls again. Every list it
 * appends to is the Python loop's own, in the same order. tests/transcript/test_pi_path_native.py
 * holds the two equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* The offset of slot `name` of `cls` (looked up along its MRO), or -1 with an error set. */
static Py_ssize_t member_offset(PyTypeObject *cls, const char *name) {
    PyObject *key = PyUnicode_FromString(name);
    if (key == NULL)
        return -1;
    PyObject *d = _PyType_Lookup(cls, key);
    Py_DECREF(key);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "pi_path_messages: %s is no slot of %s", name, cls->tp_name);
        return -1;
    }
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

static PyObject *slot_of(PyObject *obj, Py_ssize_t offset) { return *(PyObject **)((char *)obj + offset); }

static void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *v) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_INCREF(v);
    Py_XSETREF(*slot, v);
}

enum { E_ID, E_LINE, E_DATA, E_MESSAGE, N_E };
static const char *ENTRY_SLOTS[N_E] = {"id", "line", "data", "message"};
enum { M_INDEX, M_ID, M_LINE, M_ROLE, M_UNITS, M_TIMESTAMP, M_RAW, N_M };
static const char *MESSAGE_SLOTS[N_M] = {"index", "id", "line", "role", "units", "timestamp", "raw"};

/* pi_path_messages(entry_cls, message_cls, slots_cls, entries, start, roles, other, messages,
 * of_message, span, first_slot) -> the first position from `start` it did not take (see the top).
 * `slots_cls`: the class whose slots `message_cls` objects have (`transcript.model.Message`: the
 * subclass overrides `units` with a property); `roles`: the dict from a role string to its `Role`,
 * `other` the one for anything else. For each entry e at position pos it takes, as the loop does:
 * first_slot.append(len(messages)); messages.append(message_cls(first, e.id, e.line, role, None,
 * timestamp, e.message)); of_message.append(pos); span[id(e)] = (first, 1). */
PyObject *pi_path_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11 || !PyType_Check(args[0]) || !PyType_Check(args[1]) || !PyType_Check(args[2]) ||
        !PyTuple_Check(args[3]) || !PyLong_Check(args[4]) || !PyDict_Check(args[5]) || !PyList_Check(args[7]) ||
        !PyList_Check(args[8]) || !PyDict_Check(args[9]) || !PyList_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "pi_path_messages(entry_cls, message_cls, slots_cls, entries: tuple, "
                                         "start: int, roles: dict, other, messages: list, of_message: list, "
                                         "span: dict, first_slot: list)");
        return NULL;
    }
    static PyTypeObject *entry_cls, *slots_cls;
    static Py_ssize_t e_at[N_E], m_at[N_M];
    static PyObject *k_timestamp, *k_role, *one;
    if (k_timestamp == NULL) {
        if ((k_timestamp = PyUnicode_InternFromString("timestamp")) == NULL ||
            (k_role = PyUnicode_InternFromString("role")) == NULL || (one = PyLong_FromLong(1)) == NULL)
            return NULL;
    }
    if ((PyTypeObject *)args[0] != entry_cls || (PyTypeObject *)args[2] != slots_cls) {
        for (int i = 0; i < N_E; i++)
            if ((e_at[i] = member_offset((PyTypeObject *)args[0], ENTRY_SLOTS[i])) < 0)
                return NULL;
        for (int i = 0; i < N_M; i++)
            if ((m_at[i] = member_offset((PyTypeObject *)args[2], MESSAGE_SLOTS[i])) < 0)
                return NULL;
        entry_cls = (PyTypeObject *)args[0];
        slots_cls = (PyTypeObject *)args[2];
    }
    PyTypeObject *message_cls = (PyTypeObject *)args[1];
    if (!PyType_IsSubtype(message_cls, slots_cls)) {
        PyErr_SetString(PyExc_TypeError, "pi_path_messages: message_cls is no subclass of slots_cls");
        return NULL;
    }
    PyObject *entries = args[3], *roles = args[5], *other = args[6];
    PyObject *messages = args[7], *of_message = args[8], *span = args[9], *first_slot = args[10];
    Py_ssize_t pos = PyLong_AsSsize_t(args[4]), n = PyTuple_GET_SIZE(entries);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    for (; pos >= 0 && pos < n; pos++) {
        PyObject *e = PyTuple_GET_ITEM(entries, pos);
        if (!Py_IS_TYPE(e, entry_cls))
            break;
        PyObject *msg = slot_of(e, e_at[E_MESSAGE]), *data = slot_of(e, e_at[E_DATA]);
        PyObject *eid = slot_of(e, e_at[E_ID]), *line = slot_of(e, e_at[E_LINE]);
        if (msg == NULL || !PyDict_CheckExact(msg) || data == NULL || !PyDict_CheckExact(data) || eid == NULL ||
            line == NULL)
            break;
        PyObject *role_name = PyDict_GetItemWithError(msg, k_role), *role;
        if (role_name == NULL) {
            if (PyErr_Occurred())
                return NULL;
            role = other; /* ROLES.get(None, other) */
        } else if (PyUnicode_CheckExact(role_name)) {
            role = PyDict_GetItemWithError(roles, role_name);
            if (role == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                role = other;
            }
        } else {
            break; /* (any other value: the loop's `ROLES.get`, which may raise) */
        }
        PyObject *ts = PyDict_GetItemWithError(data, k_timestamp);
        if (ts == NULL && PyErr_Occurred())
            return NULL;
        if (ts == NULL || !PyUnicode_Check(ts))
            ts = Py_None;
        Py_ssize_t first = PyList_GET_SIZE(messages);
        PyObject *index = PyLong_FromSsize_t(first), *at = PyLong_FromSsize_t(pos), *key = PyLong_FromVoidPtr(e);
        PyObject *where = index == NULL ? NULL : PyTuple_Pack(2, index, one);
        PyObject *m = message_cls->tp_alloc(message_cls, 0);
        int bad = index == NULL || at == NULL || key == NULL || where == NULL || m == NULL;
        if (!bad) {
            set_slot(m, m_at[M_INDEX], index);
            set_slot(m, m_at[M_ID], eid);
            set_slot(m, m_at[M_LINE], line);
            set_slot(m, m_at[M_ROLE], role);
            set_slot(m, m_at[M_UNITS], Py_None);
            set_slot(m, m_at[M_TIMESTAMP], ts);
            set_slot(m, m_at[M_RAW], msg);
            bad = PyList_Append(first_slot, index) < 0 || PyList_Append(messages, m) < 0 ||
                  PyList_Append(of_message, at) < 0 || PyDict_SetItem(span, key, where) < 0;
        }
        Py_XDECREF(index);
        Py_XDECREF(at);
        Py_XDECREF(key);
        Py_XDECREF(where);
        Py_XDECREF(m);
        if (bad)
            return NULL;
    }
    return PyLong_FromSsize_t(pos);
}
