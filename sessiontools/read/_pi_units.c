/* What Pi's chars/4 counts of one message, in C: `pi_units(raw, images, system)` for
 * `policies.pi.measures.PathMeasures` (the Python rule: `tokens.units.units_of`), and
 * `pi_json(value)`, `JSON.stringify` of the plain JSON values (the Python rule: `jsvalues.json_stringify`).
 *
 * Both take only what they can answer exactly and give None for anything else, and the caller then
 * runs the Python rule: a type other than the exact dict/list/str/int/bool/None (a subclass, a float,
 * a tuple), an int of 2**53 or more, a string holding a surrogate, an object key starting with a digit
 * (JavaScript puts array-index keys first), nesting deeper than 64, a system message under rules that
 * count it. tests/policies/test_pi_units_native.py holds both to the Python rules.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_DEPTH 64
#define EXACT_INT 9007199254740992LL /* 2**53 */

enum { OK = 0, BAIL = 1, FAIL = -1 };

/* The keys looked up, interned once (the first call). */
enum { K_ROLE, K_CONTENT, K_TYPE, K_TEXT, K_THINKING, K_NAME, K_ARGUMENTS, K_COMMAND, K_OUTPUT, K_SUMMARY, N_KEYS };
static const char *const KEY_NAMES[N_KEYS] = {"role", "content", "type", "text", "thinking", "name", "arguments",
                                               "command", "output", "summary"};
static PyObject *KEYS[N_KEYS];

static int init_keys(void) {
    for (int i = 0; i < N_KEYS; i++)
        if (KEYS[i] == NULL && (KEYS[i] = PyUnicode_InternFromString(KEY_NAMES[i])) == NULL)
            return -1;
    return 0;
}

/* d[key] of an exact dict (borrowed), NULL when absent (an error from a key's __eq__ cannot happen:
 * the keys are exact str, compared by identity or value). */
static PyObject *get(PyObject *d, int key) { return PyDict_GetItemWithError(d, KEYS[key]); }

/* Whether s (an exact str) is `name` (ASCII). */
static int is(PyObject *s, const char *name) { return PyUnicode_CompareWithASCIIString(s, name) == 0; }

/* JSON.stringify of an exact str, written to w: BAIL on a surrogate. */
static int write_string(_PyUnicodeWriter *w, PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t plain = 0; /* the first character that needs an escape, or n */
    for (; plain < n; plain++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, plain);
        if (c < 0x20 || c == '"' || c == '\\' || (c >= 0xD800 && c <= 0xDFFF))
            break;
    }
    if (_PyUnicodeWriter_WriteChar(w, '"') < 0)
        return FAIL;
    if (plain == n) {
        if (_PyUnicodeWriter_WriteStr(w, s) < 0)
            return FAIL;
        return _PyUnicodeWriter_WriteChar(w, '"') < 0 ? FAIL : OK;
    }
    if (plain > 0 && _PyUnicodeWriter_WriteSubstring(w, s, 0, plain) < 0)
        return FAIL;
    for (Py_ssize_t i = plain; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        const char *esc = NULL;
        char buf[8];
        if (c >= 0xD800 && c <= 0xDFFF)
            return BAIL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20) {
                snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c);
                esc = buf;
            }
        }
        if (esc != NULL) {
            if (_PyUnicodeWriter_WriteASCIIString(w, esc, (Py_ssize_t)strlen(esc)) < 0)
                return FAIL;
        } else if (_PyUnicodeWriter_WriteChar(w, c) < 0) {
            return FAIL;
        }
    }
    return _PyUnicodeWriter_WriteChar(w, '"') < 0 ? FAIL : OK;
}

static int write_value(_PyUnicodeWriter *w, PyObject *v, int depth) {
    if (depth > MAX_DEPTH)
        return BAIL;
    if (PyUnicode_CheckExact(v))
        return write_string(w, v);
    if (v == Py_None)
        return _PyUnicodeWriter_WriteASCIIString(w, "null", 4) < 0 ? FAIL : OK;
    if (v == Py_True)
        return _PyUnicodeWriter_WriteASCIIString(w, "true", 4) < 0 ? FAIL : OK;
    if (v == Py_False)
        return _PyUnicodeWriter_WriteASCIIString(w, "false", 5) < 0 ? FAIL : OK;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return FAIL;
        if (overflow || x >= EXACT_INT || x <= -EXACT_INT)
            return BAIL; /* JavaScript's double: Python's rule formats it */
        char buf[24];
        int k = snprintf(buf, sizeof buf, "%lld", x);
        return _PyUnicodeWriter_WriteASCIIString(w, buf, k) < 0 ? FAIL : OK;
    }
    if (PyList_CheckExact(v)) {
        if (_PyUnicodeWriter_WriteChar(w, '[') < 0)
            return FAIL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (i > 0 && _PyUnicodeWriter_WriteChar(w, ',') < 0)
                return FAIL;
            int r = write_value(w, PyList_GET_ITEM(v, i), depth + 1);
            if (r != OK)
                return r;
        }
        return _PyUnicodeWriter_WriteChar(w, ']') < 0 ? FAIL : OK;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *x;
        if (_PyUnicodeWriter_WriteChar(w, '{') < 0)
            return FAIL;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (!PyUnicode_CheckExact(k))
                return BAIL;
            if (PyUnicode_GET_LENGTH(k) > 0) {
                Py_UCS4 c0 = PyUnicode_READ_CHAR(k, 0);
                if (c0 >= '0' && c0 <= '9')
                    return BAIL; /* maybe an array index: JavaScript's key order */
            }
            if (i++ > 0 && _PyUnicodeWriter_WriteChar(w, ',') < 0)
                return FAIL;
            int r = write_string(w, k);
            if (r != OK)
                return r;
            if (_PyUnicodeWriter_WriteChar(w, ':') < 0)
                return FAIL;
            r = write_value(w, x, depth + 1);
            if (r != OK)
                return r;
        }
        return _PyUnicodeWriter_WriteChar(w, '}') < 0 ? FAIL : OK;
    }
    return BAIL;
}

/* JSON.stringify(v) as a new str, NULL with *bail set when the Python rule must answer (or on error,
 * with an exception set and *bail 0). */
static PyObject *stringify(PyObject *v, int *bail) {
    _PyUnicodeWriter w;
    _PyUnicodeWriter_Init(&w);
    w.overallocate = 1;
    int r = write_value(&w, v, 0);
    if (r != OK) {
        _PyUnicodeWriter_Dealloc(&w);
        *bail = r == BAIL;
        return NULL;
    }
    *bail = 0;
    return _PyUnicodeWriter_Finish(&w);
}

/* pi_json(value) -> JSON.stringify(value), or None: `jsvalues.json_stringify` answers. */
PyObject *pi_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "pi_json(value)");
        return NULL;
    }
    int bail = 0;
    PyObject *s = stringify(args[0], &bail);
    if (s == NULL && bail)
        Py_RETURN_NONE;
    return s;
}

typedef struct {
    PyObject *texts; /* list of the non-empty texts */
    Py_ssize_t images, units16, bytes8;
} Units;

/* A text unit: kept when not empty (PathMeasures drops the empty ones), measured. */
static int add_text(Units *u, PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n == 0)
        return OK;
    if (PyUnicode_IS_ASCII(s)) {
        u->units16 += n;
        u->bytes8 += n;
    } else {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            u->units16 += c > 0xFFFF ? 2 : 1;
            u->bytes8 += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; /* a surrogate: 3 (surrogatepass) */
        }
    }
    return PyList_Append(u->texts, s) < 0 ? FAIL : OK;
}

/* `units_of`'s value of `key` of an exact dict when it is a str: add it; a str subclass: BAIL. */
static int add_str_of(Units *u, PyObject *d, int key) {
    PyObject *v = get(d, key);
    if (v == NULL || !PyUnicode_Check(v))
        return OK;
    return PyUnicode_CheckExact(v) ? add_text(u, v) : BAIL;
}

/* A content list's item as `units_of` reads it: OK with *type its exact str "type" (NULL: the item is
 * no block, or has no str type, and is skipped), BAIL for a dict or str subclass. */
static int typed_block(PyObject *item, PyObject **type) {
    *type = NULL;
    if (!PyDict_Check(item))
        return OK; /* no block: skipped */
    if (!PyDict_CheckExact(item))
        return BAIL;
    PyObject *t = get(item, K_TYPE);
    if (t != NULL && PyUnicode_Check(t)) {
        if (!PyUnicode_CheckExact(t))
            return BAIL;
        *type = t;
    }
    return OK;
}

/* `_content_units(content, images, ...)`. */
static int content_units(Units *u, PyObject *content, int images) {
    if (content == NULL)
        return OK;
    if (PyUnicode_Check(content))
        return PyUnicode_CheckExact(content) ? add_text(u, content) : BAIL;
    if (!PyList_Check(content))
        return OK;
    if (!PyList_CheckExact(content))
        return BAIL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *b = PyList_GET_ITEM(content, i), *t;
        if (typed_block(b, &t) != OK)
            return BAIL;
        if (t == NULL)
            continue;
        if (is(t, "text")) {
            int r = add_str_of(u, b, K_TEXT);
            if (r != OK)
                return r;
        } else if (images && is(t, "image")) {
            u->images++;
        }
    }
    return OK;
}

/* `_assistant_units(content, ...)`. */
static int assistant_units(Units *u, PyObject *content) {
    if (content == NULL || !PyList_Check(content))
        return OK;
    if (!PyList_CheckExact(content))
        return BAIL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *b = PyList_GET_ITEM(content, i), *t;
        int bail = 0, r = OK;
        if (typed_block(b, &t) != OK)
            return BAIL;
        if (t == NULL)
            continue;
        if (is(t, "text")) {
            r = add_str_of(u, b, K_TEXT);
        } else if (is(t, "thinking")) {
            r = add_str_of(u, b, K_THINKING);
        } else if (is(t, "toolCall")) {
            r = add_str_of(u, b, K_NAME);
            if (r != OK)
                return r;
            PyObject *a = get(b, K_ARGUMENTS);
            PyObject *s = stringify(a == NULL ? Py_None : a, &bail);
            if (s == NULL)
                return bail ? BAIL : FAIL;
            r = add_text(u, s);
            Py_DECREF(s);
        }
        if (r != OK)
            return r;
    }
    return OK;
}

/* pi_units(raw, images, system) -> (texts, images, utf16_units, utf8_bytes) of an exact dict message:
 * the non-empty strings of `tokens.units.units_of(raw, rules)` (rules.images, rules.system), how many
 * images, and the texts' total UTF-16 length and UTF-8 bytes (a surrogate as 3); None where the
 * Python rule answers (see the top of this file). */
PyObject *pi_units(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "pi_units(raw, images, system)");
        return NULL;
    }
    PyObject *m = args[0];
    int images = PyObject_IsTrue(args[1]), system = PyObject_IsTrue(args[2]);
    if (images < 0 || system < 0)
        return NULL;
    if (!PyDict_CheckExact(m))
        Py_RETURN_NONE;
    if (init_keys() < 0)
        return NULL;
    Units u = {PyList_New(0), 0, 0, 0};
    if (u.texts == NULL)
        return NULL;
    int r = OK;
    PyObject *role = get(m, K_ROLE);
    if (role != NULL && PyUnicode_Check(role)) {
        if (!PyUnicode_CheckExact(role)) {
            r = BAIL;
        } else if (is(role, "user")) {
            r = content_units(&u, get(m, K_CONTENT), images);
        } else if (is(role, "assistant")) {
            r = assistant_units(&u, get(m, K_CONTENT));
        } else if (is(role, "custom") || is(role, "toolResult")) {
            r = content_units(&u, get(m, K_CONTENT), 1);
        } else if (is(role, "bashExecution")) {
            r = add_str_of(&u, m, K_COMMAND);
            if (r == OK)
                r = add_str_of(&u, m, K_OUTPUT);
        } else if (is(role, "branchSummary") || is(role, "compactionSummary")) {
            r = add_str_of(&u, m, K_SUMMARY);
        } else if (is(role, "system") && system) {
            r = BAIL;
        }
    }
    if (r != OK) {
        Py_DECREF(u.texts);
        if (r == FAIL)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *texts = PyList_AsTuple(u.texts);
    Py_DECREF(u.texts);
    if (texts == NULL)
        return NULL;
    return Py_BuildValue("(Nnnn)", texts, u.images, u.units16, u.bytes8);
}
