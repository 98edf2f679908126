/* sessiontools.read._native.pi_message_measure: one Pi message's part of the summariser's input
 * measured in C (`policies.pi.sums.EntrySums`, the prefix sums a Pi replay's grid extends over a
 * path). The rules are `policies.pi.serialize.serialized_length` (Pi's serializeConversation of
 * convertToLlm([message]), its Python length) and `own_file_ops` (the read, write and edit calls'
 * paths). Only the plain shapes JSON gives are
 * measured here: exact dicts, lists and strs; anything else (other roles, subclasses, floats,
 * non-str text, lone surrogates in a tool result past its cut...) says None and Python measures it.
 * tests/policies/test_pi_message_measure.py holds the two equal. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define FALLBACK (-2) /* "not a shape measured here": Python measures it */
#define FAILED (-1)   /* an exception is set */

#define TOOL_RESULT_MAX 2000 /* serialize.TOOL_RESULT_MAX_CHARS, UTF-16 units */
#define DEPTH_MAX 32         /* nested tool-call argument values deeper than this: Python's */

static PyObject *k_role, *k_content, *k_type, *k_text, *k_thinking, *k_name, *k_arguments, *k_nested, *k_calls, *k_path;
static PyObject *s_user, *s_tool_result, *s_assistant, *s_tool_call, *s_read, *s_write, *s_edit;

static int init_strings(void) {
    struct { PyObject **at; const char *s; } all[] = {
        {&k_role, "role"}, {&k_content, "content"}, {&k_type, "type"}, {&k_text, "text"},
        {&k_thinking, "thinking"}, {&k_name, "name"}, {&k_arguments, "arguments"},
        {&k_nested, "nestedCalls"}, {&k_calls, "calls"}, {&k_path, "path"}, {&s_user, "user"}, {&s_tool_result, "toolResult"},
        {&s_assistant, "assistant"}, {&s_tool_call, "toolCall"}, {&s_read, "read"},
        {&s_write, "write"}, {&s_edit, "edit"}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if ((*all[i].at = PyUnicode_InternFromString(all[i].s)) == NULL)
            return -1;
    return 0;
}

/* An exact str equal to the ASCII constant `c` (an interned str). */
static int str_is(PyObject *s, PyObject *c) {
    if (s == c)
        return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(c);
    return PyUnicode_IS_ASCII(s) && PyUnicode_GET_LENGTH(s) == n &&
           memcmp(PyUnicode_DATA(s), PyUnicode_DATA(c), n) == 0;
}

/* A value of a type JSON gives, exactly (no subclass): comparing it with a str runs no Python code. */
static int plain(PyObject *o) {
    return o == Py_None || PyBool_Check(o) || PyUnicode_CheckExact(o) || PyLong_CheckExact(o) ||
           PyFloat_CheckExact(o) || PyDict_CheckExact(o) || PyList_CheckExact(o);
}

/* `d.get(key)` of an exact dict: the value (borrowed), NULL when missing (*err set on an exception). */
static PyObject *get(PyObject *d, PyObject *key, int *err) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL && PyErr_Occurred())
        *err = 1;
    return v;
}

/* Whether `d.get(key) == c` for an exact dict: 1 or 0, FALLBACK (an odd value), FAILED. */
static int field_is(PyObject *d, PyObject *key, PyObject *c) {
    int err = 0;
    PyObject *v = get(d, key, &err);
    if (err)
        return FAILED;
    if (v == NULL)
        return 0;
    if (PyUnicode_CheckExact(v))
        return str_is(v, c);
    return plain(v) ? 0 : FALLBACK;
}

/* len(jsvalues.js_string(s)): the quotes, each '"' '\\' and named control escape 2, every other
 * control and every surrogate code point a 6-character \uXXXX (as `_NEEDS_ESCAPE` says). */
static Py_ssize_t js_string_len(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), out = n + 2;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            out += 1;
        else if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF))
            out += 5;
    }
    return out;
}

/* len(jsvalues.json_stringify(v)) of a JSON value: null, booleans, exact ints below 2**53 (their
 * decimal digits), exact strs, lists and dicts of str keys of them; FALLBACK for anything else
 * (floats, big ints, subclasses: `js_number` and the rest stay Python's), FAILED. */
static Py_ssize_t json_len(PyObject *v, int depth) {
    if (PyUnicode_CheckExact(v))
        return js_string_len(v);
    if (v == Py_None || v == Py_True)
        return 4;
    if (v == Py_False)
        return 5;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || x >= (1LL << 53) || x <= -(1LL << 53))
            return FALLBACK;
        char buf[32];
        return snprintf(buf, sizeof buf, "%lld", x);
    }
    if (depth >= DEPTH_MAX)
        return FALLBACK;
    Py_ssize_t out = 2;
    if (PyList_CheckExact(v)) {
        Py_ssize_t n = PyList_GET_SIZE(v);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyList_GET_ITEM(v, i);
            Py_INCREF(x);
            Py_ssize_t k = json_len(x, depth + 1);
            Py_DECREF(x);
            if (k < 0)
                return k;
            out += k + (i > 0);
        }
        return n == PyList_GET_SIZE(v) ? out : FALLBACK;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *x;
        while (PyDict_Next(v, &pos, &key, &x)) {
            if (!PyUnicode_CheckExact(key))
                return FALLBACK;
            Py_ssize_t k = json_len(x, depth + 1); /* (no Python code runs: the dict stays as it is) */
            if (k < 0)
                return k;
            out += js_string_len(key) + 1 + k + (i++ > 0);
        }
        return out;
    }
    return FALLBACK;
}

/* serialize._tool_call_length(block) of an exact dict; *ops set when its name is read, write or
 * edit (`_file_op` may find a file). */
static Py_ssize_t tool_call_len(PyObject *b, int *ops) {
    int err = 0;
    PyObject *name = get(b, k_name, &err), *args;
    Py_ssize_t n;
    if (err)
        return FAILED;
    if (name == NULL)
        n = 2 + 9; /* `${undefined}` */
    else if (PyUnicode_CheckExact(name)) {
        n = 2 + PyUnicode_GET_LENGTH(name);
        if (str_is(name, s_read) || str_is(name, s_write) || str_is(name, s_edit))
            *ops = 1;
    } else
        return FALLBACK; /* `${null}` and the like: Python's */
    args = get(b, k_arguments, &err);
    if (err)
        return FAILED;
    if (args == NULL || !PyDict_CheckExact(args))
        return args == NULL || plain(args) ? n : FALLBACK;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *v;
    Py_INCREF(args);
    while (PyDict_Next(args, &pos, &key, &v)) {
        Py_ssize_t k = PyUnicode_CheckExact(key) ? json_len(v, 1) : FALLBACK;
        if (k < 0) {
            Py_DECREF(args);
            return k;
        }
        n += PyUnicode_GET_LENGTH(key) + 1 + k + 2 * (i++ > 0); /* key=value, joined by ", " */
    }
    Py_DECREF(args);
    return n;
}

/* The length of `text` (an exact str or None) as Array.prototype.join writes it; FALLBACK else. */
static Py_ssize_t text_len(PyObject *t) {
    if (t == NULL || t == Py_None)
        return 0;
    return PyUnicode_CheckExact(t) ? PyUnicode_GET_LENGTH(t) : FALLBACK;
}

/* serialize._assistant_length(content, version) of an assistant message's content. */
static Py_ssize_t assistant_len(PyObject *content, int v0, int *ops) {
    if (content == NULL || !PyList_CheckExact(content))
        return content == NULL || plain(content) ? 0 : FALLBACK;
    Py_ssize_t texts = 0, thinking = 0, calls = 0, text_n = 0, thinking_n = 0, calls_n = 0;
    Py_ssize_t r = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content) && r >= 0; i++) {
        PyObject *b = PyList_GET_ITEM(content, i);
        if (!PyDict_CheckExact(b)) {
            if (!plain(b))
                r = FALLBACK;
            continue;
        }
        Py_INCREF(b);
        int err = 0;
        PyObject *t = get(b, k_type, &err);
        if (err)
            r = FAILED;
        else if (t == NULL || !PyUnicode_CheckExact(t))
            r = t == NULL || plain(t) ? 0 : FALLBACK;
        else if (str_is(t, k_text)) {
            texts++;
            PyObject *x = get(b, k_text, &err);
            r = err ? FAILED : text_len(x);
            text_n += r > 0 ? r : 0;
        } else if (str_is(t, s_tool_call)) {
            calls++;
            r = tool_call_len(b, ops);
            calls_n += r > 0 ? r : 0;
        } else if (str_is(t, k_thinking)) {
            thinking++;
            PyObject *x = get(b, k_thinking, &err);
            r = err ? FAILED : text_len(x);
            thinking_n += r > 0 ? r : 0;
        }
        Py_DECREF(b);
    }
    if (r < 0)
        return r;
    Py_ssize_t n = 0, parts = 0;
    if (thinking && v0) {
        n += (Py_ssize_t)strlen("[Assistant thinking]: ") + thinking_n + thinking - 1;
        parts++;
    }
    if (texts) {
        n += (Py_ssize_t)strlen("[Assistant]: ") + text_n + texts - 1;
        parts++;
    }
    if (calls) {
        n += (Py_ssize_t)strlen("[Assistant tool calls]: ") + calls_n + 2 * (calls - 1);
        parts++;
    }
    return parts ? n + 2 * (parts - 1) : 0;
}

/* The text blocks of a user or tool result message's content (`_text_blocks(content, "")`): its
 * length in code points (*n) and UTF-16 units (*units), whether all ASCII (*ascii) and whether any
 * surrogate code point is in it (*surr). 0, FALLBACK or FAILED. */
static int text_blocks(PyObject *content, Py_ssize_t *n, Py_ssize_t *units, int *ascii, int *surr) {
    *n = *units = 0;
    *ascii = 1;
    *surr = 0;
    if (content == NULL)
        return 0;
    PyObject *one[1] = {content}, **items = one;
    Py_ssize_t count = 1;
    if (PyList_CheckExact(content)) {
        items = NULL;
        count = PyList_GET_SIZE(content);
    } else if (!PyUnicode_CheckExact(content))
        return plain(content) ? 0 : FALLBACK;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *t;
        if (items == NULL) {
            if (i >= PyList_GET_SIZE(content))
                return FALLBACK;
            PyObject *b = PyList_GET_ITEM(content, i);
            if (!PyDict_CheckExact(b)) {
                if (!plain(b))
                    return FALLBACK;
                continue;
            }
            int is = field_is(b, k_type, k_text), err = 0;
            if (is <= 0) {
                if (is < 0)
                    return is;
                continue;
            }
            t = get(b, k_text, &err); /* (the same dict: `field_is` ran no Python code) */
            if (err)
                return FAILED;
            if (t == NULL || t == Py_None)
                continue;
            if (!PyUnicode_CheckExact(t))
                return FALLBACK; /* String(3) and the like: Python's */
        } else
            t = content;
        Py_ssize_t len = PyUnicode_GET_LENGTH(t), astral = 0;
        *n += len;
        if (!PyUnicode_IS_ASCII(t)) {
            *ascii = 0;
            int kind = PyUnicode_KIND(t);
            const void *data = PyUnicode_DATA(t);
            if (kind != PyUnicode_1BYTE_KIND)
                for (Py_ssize_t j = 0; j < len; j++) {
                    Py_UCS4 c = PyUnicode_READ(kind, data, j);
                    astral += c > 0xFFFF;
                    *surr |= c >= 0xD800 && c <= 0xDFFF;
                }
        }
        *units += len + astral;
    }
    return 0;
}

/* The code points of the first TOOL_RESULT_MAX UTF-16 units of the text blocks (`utf16_head`) when
 * no surrogate code point is among them: a character past the BMP split by the cut is kept as its
 * lone high half (0.x's slice) or dropped (1.x's sliceHead keeps pairs). */
static Py_ssize_t head_len(PyObject *content, int keep_pairs) {
    PyObject *one[1] = {content}, **items = one;
    Py_ssize_t count = 1, used = 0, cps = 0;
    if (PyList_CheckExact(content)) {
        items = NULL;
        count = PyList_GET_SIZE(content);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *t = content;
        if (items == NULL) { /* (`text_blocks` read these: each a dict, or skipped) */
            PyObject *b = PyList_GET_ITEM(content, i);
            int err = 0, is = PyDict_CheckExact(b) ? field_is(b, k_type, k_text) : 0;
            if (is == FAILED)
                return FAILED;
            if (is != 1)
                continue;
            t = get(b, k_text, &err);
            if (err)
                return FAILED;
            if (t == NULL || !PyUnicode_CheckExact(t))
                continue;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        int kind = PyUnicode_KIND(t);
        const void *data = PyUnicode_DATA(t);
        for (Py_ssize_t j = 0; j < len; j++) {
            int w = PyUnicode_READ(kind, data, j) > 0xFFFF ? 2 : 1;
            if (used + w > TOOL_RESULT_MAX)
                return cps + !keep_pairs; /* (only a pair can pass the cut: used is 1999) */
            used += w;
            cps++;
            if (used == TOOL_RESULT_MAX)
                return cps;
        }
    }
    return cps;
}

/* len(f"\n\n[... {over} more characters truncated]") */
static Py_ssize_t truncated_note_len(Py_ssize_t over) {
    char buf[80];
    return snprintf(buf, sizeof buf, "\n\n[... %zd more characters truncated]", over);
}

/* One call's `serialize._file_op(name, args)` added to `acc` (read, written, edited: dicts of paths
 * in first-seen order, made at the first): 0, FALLBACK or FAILED. */
static int file_op(PyObject *name, PyObject *args, PyObject *acc[3]) {
    if (args == NULL || !PyDict_CheckExact(args))
        return args == NULL || plain(args) ? 0 : FALLBACK;
    int err = 0, kind;
    PyObject *path = get(args, k_path, &err);
    if (err)
        return FAILED;
    if (path == NULL || !PyUnicode_CheckExact(path))
        return path == NULL || !PyUnicode_Check(path) ? 0 : FALLBACK; /* (a str subclass: Python's) */
    if (PyUnicode_GET_LENGTH(path) == 0 || name == NULL)
        return 0;
    if (!PyUnicode_CheckExact(name))
        return plain(name) ? 0 : FALLBACK;
    if (str_is(name, s_read))
        kind = 0;
    else if (str_is(name, s_write))
        kind = 1;
    else if (str_is(name, s_edit))
        kind = 2;
    else
        return 0;
    if (acc[0] == NULL)
        for (int i = 0; i < 3; i++)
            if ((acc[i] = PyDict_New()) == NULL)
                return FAILED;
    return PyDict_SetItem(acc[kind], path, Py_None) < 0 ? FAILED : 0; /* (a path seen keeps its place) */
}

/* `serialize._file_ops_of(m, version)` into `acc`: an assistant message's tool calls, in order (a
 * block that is no exact dict is skipped, as there), or 1.x codemode `nestedCalls` of a tool result. */
static int file_ops(PyObject *m, PyObject *content, int tool, PyObject *acc[3]) {
    int err = 0, r = 0;
    if (!tool) {
        if (content == NULL || !PyList_CheckExact(content))
            return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content) && r == 0; i++) {
            PyObject *b = PyList_GET_ITEM(content, i);
            if (!PyDict_CheckExact(b) || (r = field_is(b, k_type, s_tool_call)) != 1) {
                r = r < 0 ? r : 0;
                continue;
            }
            /* (0.x asks the arguments to be truthy: every dict is, and only a dict has a path) */
            PyObject *name = get(b, k_name, &err), *args = err ? NULL : get(b, k_arguments, &err);
            r = err ? FAILED : name == NULL || args == NULL ? 0 : file_op(name, args, acc);
        }
        return r;
    }
    PyObject *nested = get(m, k_nested, &err), *calls;
    if (err)
        return FAILED;
    if (nested == NULL || !PyDict_CheckExact(nested))
        return nested == NULL || plain(nested) ? 0 : FALLBACK;
    if ((calls = get(nested, k_calls, &err)) == NULL)
        return err ? FAILED : 0;
    if (!PyList_CheckExact(calls)) /* (`calls or ()`: None and a str hold no call; the rest Python's) */
        return calls == Py_None || PyUnicode_CheckExact(calls) ? 0 : FALLBACK;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls) && r == 0; i++) {
        PyObject *c = PyList_GET_ITEM(calls, i), *name, *args;
        if (!PyDict_CheckExact(c)) {
            r = plain(c) ? 0 : FALLBACK;
            continue;
        }
        name = get(c, k_name, &err);
        args = err ? NULL : get(c, k_arguments, &err);
        r = err ? FAILED : file_op(name, args, acc);
    }
    return r;
}

/* pi_message_measure(message, version) -> (length, file_ops) or None: length is
 * `serialize.serialized_length(message, version)`, file_ops None where `own_file_ops` is None, else
 * its (read, written, edited) dicts. None for anything but an exact dict of role user, toolResult or
 * assistant in the plain shapes above (and for version neither "0" nor "1"). */
PyObject *pi_message_measure(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "pi_message_measure(message, version)");
        return NULL;
    }
    if (k_role == NULL && init_strings() < 0)
        return NULL;
    PyObject *m = args[0], *version = args[1];
    if (!PyDict_CheckExact(m) || !PyUnicode_CheckExact(version) || PyUnicode_GET_LENGTH(version) != 1 ||
        !PyUnicode_IS_ASCII(version))
        Py_RETURN_NONE;
    char vc = ((const char *)PyUnicode_DATA(version))[0];
    if (vc != '0' && vc != '1')
        Py_RETURN_NONE;
    int v0 = vc == '0', err = 0, ops = 0;
    PyObject *role = get(m, k_role, &err);
    if (err)
        return NULL;
    if (role == NULL || !PyUnicode_CheckExact(role))
        Py_RETURN_NONE;
    int user = str_is(role, s_user), tool = !user && str_is(role, s_tool_result);
    if (!user && !tool && !str_is(role, s_assistant))
        Py_RETURN_NONE; /* (custom roles are converted first: Python's) */
    PyObject *content = get(m, k_content, &err);
    if (err)
        return NULL;
    Py_XINCREF(content);
    Py_ssize_t len;
    if (user || tool) {
        Py_ssize_t n, units;
        int ascii, surr, r = text_blocks(content, &n, &units, &ascii, &surr);
        if (r < 0)
            len = r;
        else if (n == 0)
            len = 0;
        else if (user)
            len = (Py_ssize_t)strlen("[User]: ") + n;
        else if (units <= TOOL_RESULT_MAX)
            len = (Py_ssize_t)strlen("[Tool result]: ") + n;
        else if (ascii)
            len = (Py_ssize_t)strlen("[Tool result]: ") + TOOL_RESULT_MAX + truncated_note_len(units - TOOL_RESULT_MAX);
        else if (surr)
            len = FALLBACK; /* (a lone surrogate may pair with the next at the cut: Python's) */
        else if ((len = head_len(content, !v0)) >= 0)
            len += (Py_ssize_t)strlen("[Tool result]: ") + truncated_note_len(units - TOOL_RESULT_MAX);
        if (tool && !v0 && len >= 0) { /* 1.x reads codemode calls on tool results */
            PyObject *nested = get(m, k_nested, &err);
            if (err)
                len = FAILED;
            ops = nested != NULL && nested != Py_None;
        }
    } else
        len = assistant_len(content, v0, &ops);
    PyObject *acc[3] = {NULL, NULL, NULL}, *found = Py_None, *n = NULL, *out = NULL;
    if (len >= 0 && ops) { /* (only a call named read, write or edit, or codemode calls, may have some) */
        int r = file_ops(m, content, tool, acc);
        if (r < 0)
            len = r;
    }
    Py_XDECREF(content);
    if (len >= 0 && acc[0] != NULL)
        found = PyTuple_Pack(3, acc[0], acc[1], acc[2]);
    else
        Py_INCREF(found);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(acc[i]);
    if (len == FAILED || found == NULL || (len >= 0 && (n = PyLong_FromSsize_t(len)) == NULL)) {
        Py_XDECREF(found);
        return NULL;
    }
    if (len == FALLBACK) {
        Py_DECREF(found);
        Py_RETURN_NONE;
    }
    out = PyTuple_Pack(2, n, found);
    Py_DECREF(n);
    Py_DECREF(found);
    return out;
}
