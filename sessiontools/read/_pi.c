/* sessiontools.read._native.pi_project_lines: a Pi session's lines validated as JSON in one pass in
 * C, with only the fields a command that does not replay reads built into Python objects, and the
 * fields the reader's checks would look at checked in place without being built (issue 28).
 *
 * pi_project_lines(data, spec, first, limit) -> list of (start, stop, fields or None), exactly as
 * `project_lines` (_project.c), whose scanner this file compiles again (it is included, not copied:
 * one home for what a JSON line is and for when the C is not sure orjson reads it the same way;
 * what it is unsure of is None here too, the line going the reader's ordinary way).
 *
 * The spec is `project_lines`'s (None, False, a frozenset, a fast mark, a dict) with more values:
 *   "str"               a string or null, validated and not built;
 *   "object"            an object or null, validated and not built;
 *   ("list", spec)      null or an array, not built; each element that is an object is checked
 *                       by `spec` (whose values are these check-only kinds);
 *   ("content", spec)   a string, or ("list", spec);
 *   ("mark", fast)      a value that passes the fast mark, not built (a number or a literal is
 *                       made to be compared, and dropped);
 * and a key "*" (value None) in a dict spec: the object's undeclared members are built whole too
 * (the object is then the same as orjson's, only its declared fields checked).
 * A value that is off its kind sends the line the ordinary way, where the checks say what is wrong.
 * The spec is made in `read.pi.selective` from the checks' own tables; tests/read/test_pi_selective.py
 * holds what is read this way equal to the ordinary way's. */
#define project_lines pi_base_project_lines
#define project_init pi_base_project_init
#define fast_ok pi_fast_ok /* (the scanner's fast marks: `pi_fast_ok`, below) */
#include "_project.c"
#undef project_lines
#undef project_init
#undef fast_ok
int fast_ok(PyObject *fast, PyObject *v); /* _native.c */

/* `fast_ok` (_native.c) without a call into Python for each value: a fast mark (types, numbers, low,
 * high) compiled once into bits of the seven JSON types and bounds as doubles, kept by its identity
 * (the spec holds its marks for the process). A mark or value beyond what is compiled exactly (a type
 * that is no JSON one, a bound or an int beyond 2**53, where a double may round) is asked of
 * `fast_ok` itself; tests/read/test_pi_selective.py holds the two equal. */
enum { J_NONE = 1, J_BOOL = 2, J_INT = 4, J_FLOAT = 8, J_STR = 16, J_DICT = 32, J_LIST = 64 };
typedef struct {
    PyObject *fast;
    int exact; /* 0: asked of fast_ok */
    unsigned types, numbers;
    double low, high;
} Mark;
/* (room for every agent's marks: Pi's checks alone have 64, Codex's and Claude Code's ten more;
 * a mark past it is asked of `fast_ok`, slower, with the same answer) */
static Mark marks[256];
static int n_marks;
static const double EXACT = 9007199254740992.0; /* 2**53: every int up to it is a double exactly */

static unsigned json_type(PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    return v == Py_None ? J_NONE : t == &PyBool_Type ? J_BOOL : t == &PyLong_Type ? J_INT
         : t == &PyFloat_Type ? J_FLOAT : t == &PyUnicode_Type ? J_STR : t == &PyDict_Type ? J_DICT
         : t == &PyList_Type ? J_LIST : 0;
}

/* A number as a double exactly (an int up to 2**53, a float, a bool), or 0 when it is none. */
static int exact_double(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (!PyLong_Check(v)) /* (a bool is an int) */
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred()) || x > (1LL << 53) || x < -(1LL << 53)) {
        PyErr_Clear();
        return 0;
    }
    *out = (double)x;
    return 1;
}

/* The bits of the types in a set of types; 0 with *exact cleared at a type that is no JSON one. */
static unsigned type_bits(PyObject *set, int *exact) {
    unsigned bits = 0;
    PyObject *it = PyObject_GetIter(set), *t;
    if (it == NULL) {
        PyErr_Clear();
        *exact = 0;
        return 0;
    }
    while ((t = PyIter_Next(it)) != NULL) {
        unsigned b = t == (PyObject *)Py_TYPE(Py_None) ? J_NONE : t == (PyObject *)&PyBool_Type ? J_BOOL
                   : t == (PyObject *)&PyLong_Type ? J_INT : t == (PyObject *)&PyFloat_Type ? J_FLOAT
                   : t == (PyObject *)&PyUnicode_Type ? J_STR : t == (PyObject *)&PyDict_Type ? J_DICT
                   : t == (PyObject *)&PyList_Type ? J_LIST : 0;
        *exact &= b != 0;
        bits |= b;
        Py_DECREF(t);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        *exact = 0;
    }
    return bits;
}

static Mark *mark_slot[512]; /* the marks by their address (open addressing: twice as many slots as marks) */

static Mark *mark_of(PyObject *fast) {
    size_t h = ((size_t)fast >> 4) & 511;
    for (; mark_slot[h] != NULL; h = (h + 1) & 511)
        if (mark_slot[h]->fast == fast)
            return mark_slot[h];
    if (n_marks == (int)(sizeof marks / sizeof marks[0]) || !PyTuple_Check(fast) || PyTuple_GET_SIZE(fast) != 4)
        return NULL;
    Mark *m = mark_slot[h] = &marks[n_marks++];
    Py_INCREF(fast);
    m->fast = fast;
    m->exact = PyAnySet_Check(PyTuple_GET_ITEM(fast, 0)) && PyAnySet_Check(PyTuple_GET_ITEM(fast, 1));
    m->types = type_bits(PyTuple_GET_ITEM(fast, 0), &m->exact);
    m->numbers = type_bits(PyTuple_GET_ITEM(fast, 1), &m->exact);
    m->exact &= (m->numbers & ~(J_BOOL | J_INT | J_FLOAT)) == 0 &&
                exact_double(PyTuple_GET_ITEM(fast, 2), &m->low) && exact_double(PyTuple_GET_ITEM(fast, 3), &m->high) &&
                !PyBool_Check(PyTuple_GET_ITEM(fast, 2)) && !PyBool_Check(PyTuple_GET_ITEM(fast, 3));
    return m;
}

int pi_fast_ok(PyObject *fast, PyObject *v) {
    Mark *m = mark_of(fast);
    unsigned t = json_type(v);
    double d;
    if (m == NULL || !m->exact || t == 0)
        return fast_ok(fast, v);
    if (m->types & t)
        return 1;
    if (!(m->numbers & t))
        return 0;
    if (!exact_double(v, &d))
        return fast_ok(fast, v);
    return m->low <= d && d <= m->high; /* (NaN: neither, as in Python) */
}
#define fast_ok pi_fast_ok
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { P_STR = 10, P_OBJ, P_LIST, P_CONTENT, P_MARK };
static PyObject *kind_of[3]; /* an empty str, dict and list: what a value's type is asked with */

/* Skipping what is not built, fast: the same strings `string_of` accepts (and so orjson), scanned
 * with the cursor in a register. Sixteen bytes at a time (SSE2; else eight, in a word) while none is
 * a quote, a backslash, a control character or >= 0x80, the first such byte found at once; the
 * escapes of one letter stepped over in place; a run of high bytes validated as UTF-8 with the
 * three-byte characters of CJK text first. */
static unsigned char simple_escape[256]; /* 1: a one-letter escape (after the backslash) */

static inline const unsigned char *past_plain(const unsigned char *p, const unsigned char *end) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* (signed: the bytes >= 0x80 are below 0x20 too) */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                    _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(stop);
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        uint64_t stop = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
        if (stop) /* (the lowest marked byte of the word is exact) */
            return p + (__builtin_ctzll(stop) >> 3);
        p += 8;
    }
    while (p < end && plain[*p])
        p++;
    return p;
}

/* How many three-byte characters (each valid UTF-8, 0 to 5) start the 15 bytes at `p` (16 readable):
 * the scalar rule below for five at once (a lead E0-EF, two continuation bytes 80-BF), a lead of E0
 * or ED (whose second byte is bounded) left to the scalar rule. The run of CJK text, skipped 15
 * bytes a step instead of one character. */
#ifdef __SSE2__
static inline int three_byte_chars(const unsigned char *p) {
    const __m128i mask = _mm_setr_epi8((char)0xF0, (char)0xC0, (char)0xC0, (char)0xF0, (char)0xC0, (char)0xC0,
                                       (char)0xF0, (char)0xC0, (char)0xC0, (char)0xF0, (char)0xC0, (char)0xC0,
                                       (char)0xF0, (char)0xC0, (char)0xC0, 0);
    const __m128i want = _mm_setr_epi8((char)0xE0, (char)0x80, (char)0x80, (char)0xE0, (char)0x80, (char)0x80,
                                       (char)0xE0, (char)0x80, (char)0x80, (char)0xE0, (char)0x80, (char)0x80,
                                       (char)0xE0, (char)0x80, (char)0x80, 0);
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    int ok = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, mask), want));
    int bounded = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xE0)),
                                                 _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xED))));
    int off = (~ok & 0x7FFF) | (bounded & 0x1249); /* (0x1249: the five leads' bytes) */
    return off == 0 ? 5 : __builtin_ctz((unsigned)off) / 3;
}
#endif

static int skip_str(Cursor *c, int *escaped) {
    const unsigned char *p = c->p + 1, *end = c->end;
    int esc = 0;
    for (;;) {
        p = past_plain(p, end);
        if (p >= end)
            return NO;
        unsigned char x = *p;
        if (x == '"')
            break;
        if (x == '\\') {
            esc = 1;
            if (end - p >= 2 && simple_escape[p[1]]) {
                p += 2;
                continue;
            }
            unsigned cp;
            c->p = p + 1;
            if (escape(c, &cp) != OK)
                return NO;
            p = c->p;
        } else if (x < 0x20) {
            return NO;
        } else {
            do { /* a run of multi-byte characters */
#ifdef __SSE2__
                int k;
                if (end - p >= 16 && (k = three_byte_chars(p)) > 0) {
                    p += 3 * k;
                    continue; /* (to the loop's test, which reads x again) */
                }
#endif
                if (end - p >= 3 && (x & 0xF0) == 0xE0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
                    (x != 0xE0 || p[1] >= 0xA0) && (x != 0xED || p[1] <= 0x9F)) {
                    p += 3;
                } else {
                    int n = utf8_len(p, end);
                    if (n == 0)
                        return NO;
                    p += n;
                }
            } while (p < end && (x = *p) >= 0x80);
        }
    }
    c->p = p + 1;
    if (escaped != NULL)
        *escaped = esc;
    return OK;
}

static int skip_value(Cursor *c);

/* An object or array (c->p at its opening) validated and skipped. */
static int skip_container(Cursor *c, unsigned char close) {
    int r;
    if (++c->depth > MAX_DEPTH)
        return NO;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        c->depth--;
        return OK;
    }
    for (;;) {
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"' || (r = skip_str(c, NULL)) != OK)
                return NO;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return NO;
            c->p++;
            skip_ws(c);
        }
        if ((r = skip_value(c)) != OK)
            return r;
        if ((r = next_item(c, close)) != MORE) {
            c->depth--;
            return r;
        }
    }
}

/* Any value (c->p not at whitespace) validated and skipped: `value(c, 0, NULL, NULL)`, faster. */
static int skip_value(Cursor *c) {
    if (c->p >= c->end)
        return NO;
    switch (*c->p) {
    case '"':
        return skip_str(c, NULL);
    case '{':
        return skip_container(c, '}');
    case '[':
        return skip_container(c, ']');
    default:
        return value(c, 0, NULL, NULL); /* a number or a literal */
    }
}

static Spec *pi_compile(PyObject *d);

static int pi_kind(Field *f, PyObject *v) {
    if (v == Py_None)
        f->mode = LEAF;
    else if (v == Py_False)
        f->mode = BAIL;
    else if (PyFrozenSet_Check(v)) {
        f->mode = SET;
        f->set = v;
    } else if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "str") == 0)
        f->mode = P_STR;
    else if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "object") == 0)
        f->mode = P_OBJ;
    else if (PyDict_Check(v)) {
        f->mode = NEST;
        return (f->sub = pi_compile(v)) == NULL ? -1 : 0;
    } else if (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(v, 0))) {
        PyObject *tag = PyTuple_GET_ITEM(v, 0);
        if (PyUnicode_CompareWithASCIIString(tag, "list") == 0)
            f->mode = P_LIST;
        else if (PyUnicode_CompareWithASCIIString(tag, "content") == 0)
            f->mode = P_CONTENT;
        else if (PyUnicode_CompareWithASCIIString(tag, "mark") == 0 && PyTuple_Check(PyTuple_GET_ITEM(v, 1))) {
            f->mode = P_MARK;
            f->fast = PyTuple_GET_ITEM(v, 1);
            return 0;
        } else
            goto bad;
        return (f->sub = pi_compile(PyTuple_GET_ITEM(v, 1))) == NULL ? -1 : 0;
    } else if (PyTuple_Check(v)) {
        f->mode = CHECK;
        f->fast = v;
    } else
        goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_TypeError, "a Pi spec value is None, False, a frozenset, a fast mark, a dict, "
                                     "\"str\", \"object\", (\"list\", spec), (\"content\", spec) or (\"mark\", fast mark)");
    return -1;
}

/* A spec dict compiled; the key "*" is a field no key matches (len -1): see `whole`. */
static Spec *pi_compile(PyObject *d) {
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "a Pi spec is a dict");
        return NULL;
    }
    Spec *s = PyMem_Calloc(1, sizeof(Spec));
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0;
    if (s == NULL || (s->f = PyMem_Calloc(n ? n : 1, sizeof(Field))) == NULL) {
        PyMem_Free(s);
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        Field *f = &s->f[s->n++];
        if (!PyUnicode_Check(k) || (f->name = PyUnicode_AsUTF8AndSize(k, &f->len)) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a Pi spec's keys are str");
            goto fail;
        }
        f->key = k;
        if (f->len == 1 && f->name[0] == '*') {
            f->len = -1;
            continue;
        }
        if (pi_kind(f, v) < 0)
            goto fail;
    }
    return s;
fail:
    spec_free(s);
    return NULL;
}

static int whole(const Spec *spec) {
    for (Py_ssize_t i = 0; i < spec->n; i++)
        if (spec->f[i].len == -1)
            return 1;
    return 0;
}

static int checked(Cursor *c, int mode, const Spec *sub);
static int marked(Cursor *c, PyObject *fast);

/* A key at c->p (a quote) and its colon: the name's bytes, whether it held an escape, and the key
 * built when `k` is not NULL. The cursor is left at the value. */
static int key_of(Cursor *c, const unsigned char **name, Py_ssize_t *len, int *esc, PyObject **k) {
    int r;
    if (c->p >= c->end || *c->p != '"')
        return NO;
    *name = c->p + 1;
    if ((r = k != NULL ? string_of(c, k, esc, 1) : skip_str(c, esc)) != OK)
        return r;
    *len = c->p - 1 - *name;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return NO;
    c->p++;
    skip_ws(c);
    return c->p < c->end ? OK : NO;
}

/* An object (c->p at '{') validated and not built; the members `spec` declares are `checked`. */
static int check_object(Cursor *c, const Spec *spec) {
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return OK;
    }
    for (;;) {
        const unsigned char *name;
        Py_ssize_t len;
        int esc = 0, r;
        if ((r = key_of(c, &name, &len, &esc, NULL)) != OK)
            return r;
        const Field *f = field_of(spec, name, len);
        if (esc)
            return NO; /* it may name a declared field */
        if ((r = f == NULL ? skip_value(c) : f->mode == P_MARK ? marked(c, f->fast) : checked(c, f->mode, f->sub)) != OK)
            return r;
        if ((r = next_item(c, '}')) != MORE)
            return r;
    }
}

/* An array (c->p at '[') validated and not built; each element that is an object checked by `spec`. */
static int check_array(Cursor *c, const Spec *spec) {
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return OK;
    }
    for (;;) {
        int r;
        if (c->p >= c->end)
            return NO;
        if (*c->p == '{') {
            if (++c->depth > MAX_DEPTH)
                return NO;
            r = check_object(c, spec);
            c->depth--;
        } else
            r = skip_value(c);
        if (r != OK)
            return r;
        if ((r = next_item(c, ']')) != MORE)
            return r;
    }
}

/* A value checked against a fast mark and not built (but a number or a literal, made and dropped). */
static int marked(Cursor *c, PyObject *fast) {
    unsigned char b = *c->p;
    PyObject *v = NULL;
    int r = b == '"' ? skip_str(c, NULL) : b == '{' || b == '[' ? skip_value(c) : value(c, 1, NULL, &v);
    if (r != OK)
        return r;
    r = fast_ok(fast, v != NULL ? v : kind_of[b == '"' ? 0 : b == '{' ? 1 : 2]);
    Py_XDECREF(v);
    return r < 0 ? ERR : r ? OK : NO;
}

/* A value of a check-only kind (P_*), validated and not built: OK when it is of its kind. */
static int checked(Cursor *c, int mode, const Spec *sub) {
    unsigned char b = *c->p;
    int r;
    if (mode == P_MARK)
        return NO; /* (its fast mark is the field's: `pi_member`, `check_object`) */
    if (b == 'n')
        return literal(c, "null", 4, Py_None, NULL);
    if (b == '"' && (mode == P_STR || mode == P_CONTENT))
        return skip_str(c, NULL);
    if (b == '{' && mode == P_OBJ)
        return skip_value(c);
    if (b != '[' || (mode != P_LIST && mode != P_CONTENT))
        return NO; /* off its kind, or a kind that is built (not for a check-only object) */
    if (++c->depth > MAX_DEPTH)
        return NO;
    r = check_array(c, sub);
    c->depth--;
    return r;
}

static int pi_object(Cursor *c, const Spec *spec, PyObject **out);

/* One declared member of a projected object. */
static int pi_member(Cursor *c, const Field *f, PyObject *d) {
    if (f->mode == P_MARK)
        return marked(c, f->fast);
    if (f->mode >= P_STR)
        return checked(c, f->mode, f->sub);
    if (f->mode != NEST)
        return member(c, f, d);
    PyObject *v = NULL;
    int r;
    if (*c->p == '{')
        r = pi_object(c, f->sub, &v);
    else if (*c->p == 'n')
        r = literal(c, "null", 4, Py_None, &v);
    else
        return NO;
    if (r != OK)
        return r;
    return set_new(d, f->key, v); /* (NO for a duplicated key) */
}

/* An undeclared member of a `whole` object, built; a duplicated key is not sure. */
static int pi_rest(Cursor *c, PyObject *d, PyObject *k) {
    PyObject *v = NULL;
    int r = value(c, 1, NULL, &v);
    if (r != OK)
        return r;
    return set_new(d, k, v);
}

/* An object (c->p at '{') projected by `spec` into a new dict. */
static int pi_object(Cursor *c, const Spec *spec, PyObject **out) {
    int all = whole(spec), r = OK;
    if (++c->depth > MAX_DEPTH)
        return NO;
    PyObject *d = PyDict_New();
    if (d == NULL)
        return ERR;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}')
        c->p++;
    else
        for (;;) {
            const unsigned char *name;
            Py_ssize_t len;
            int esc = 0;
            PyObject *k = NULL;
            if ((r = key_of(c, &name, &len, &esc, all ? &k : NULL)) != OK) {
                Py_XDECREF(k);
                break;
            }
            const Field *f = esc ? NULL : field_of(spec, name, len);
            if (esc)
                r = NO; /* an escaped key of a projected object: it may name a declared field */
            else if (f != NULL)
                r = pi_member(c, f, d);
            else
                r = all ? pi_rest(c, d, k) : skip_value(c);
            Py_XDECREF(k);
            if (r != OK || (r = next_item(c, '}')) != MORE)
                break;
        }
    c->depth--;
    if (r != OK) {
        Py_DECREF(d);
        return r;
    }
    *out = d;
    return OK;
}

/* The projection of one line, or Py_None (not sure: the ordinary way); NULL on error. */
static PyObject *pi_line(const unsigned char *s, const unsigned char *e, const Spec *spec) {
    Cursor c = {s, e, 0};
    PyObject *d = NULL;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        Py_RETURN_NONE;
    int r = pi_object(&c, spec, &d);
    if (r == ERR)
        return NULL;
    if (r == OK) {
        skip_ws(&c);
        if (c.p == c.end)
            return d;
        Py_DECREF(d);
    }
    Py_RETURN_NONE;
}

/* The lines cut as `project_lines` cuts them (`lines_projected`), each projected by `pi_line`. */
PyObject *pi_project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return lines_projected(args, nargs, "pi_project_lines(data, spec: dict, first: int, limit: int)",
                           pi_compile, pi_line);
}

void pi_init(void) {
    pi_base_project_init();
    kind_of[0] = PyUnicode_FromString("");
    kind_of[1] = PyDict_New();
    kind_of[2] = PyList_New(0);
    for (const char *e = "\"\\\\/bfnrt"; *e; e++)
        simple_escape[(unsigned char)*e] = 1;
}
