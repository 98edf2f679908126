/* sessiontools.read._native.project_lines: a JSONL file's lines, each validated as JSON in one pass
 * in C, with only the fields a reader declares built into Python objects (issue 28).
 *
 * project_lines(data, spec, first, limit) -> list of (start, stop, fields) per physical line, the
 * lines numbered and cut exactly as `read.lines.line_views` does (`data[start:stop]` is the line
 * without its newline). `fields` is a dict of the declared fields of the line's one JSON object, or
 * None: the line goes the reader's ordinary way (orjson, `parse_line`'s diagnostics). A line is
 * projected only when this scanner is sure orjson reads it as one object the same way; anything
 * else is None: a line before `first`, longer than `limit` (0: any), blank, glued, not an object,
 * malformed, invalid UTF-8, a lone surrogate escape, a control character in a string, a number
 * orjson reads differently from Python (over 18 digits, long exponents), nesting deeper than
 * MAX_DEPTH, a duplicated or escaped key in a projected object, a BAIL field present, or a SET
 * field whose value is not one of its strings.
 *
 * `spec` (see `read.codex.selective.NATIVE_SPEC`): a dict key -> None (the value, built whole),
 * a dict (the value projected by that spec when it is an object, None when null, else the line
 * goes the ordinary way), False (the line goes the ordinary way when the key is present), a
 * frozenset of str (built whole; the ordinary way unless it is one of them) or a check's fast mark
 * (types, numbers, low, high) (`read.values.fast_pass`: built whole; the ordinary way unless the
 * value passes the mark, so a projection holds only values the reader's checks keep as they are),
 * bytes (validated, never built, and the ordinary way unless the value's first byte is one of them,
 * naming the JSON kinds it may be; empty: any) or a list of one dict (a list's objects projected by
 * that spec, its other values built whole; a value that is no list built whole: the Claude Code
 * reader's message content, `read.claude_code.lean.LEAN_SPEC`). Keys not in the spec are validated
 * and never built. tests/read/test_native_project.py holds the records and diagnostics read this way
 * equal to the ordinary way's. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64
#define MAX_NUMBER 32

enum { LEAF, NEST, BAIL, SET, CHECK, SKIP, LIST };
int fast_ok(PyObject *fast, PyObject *v); /* _native.c */
enum { OK = 0, NO = 1, ERR = -1, MORE = 2 }; /* NO: not sure, the ordinary way; MORE: another item follows */

typedef struct Spec Spec;
typedef struct {
    const char *name;
    Py_ssize_t len;
    PyObject *key; /* the spec's own str: the projected dict's key */
    int mode;
    Spec *sub;      /* NEST: the spec of the value when it is an object */
    PyObject *set;  /* SET: the str values it may have */
    PyObject *fast; /* CHECK: a check's fast mark (`read.values.fast_pass`) the value must pass */
    const char *first; /* SKIP: the bytes the value may start with (its JSON kinds); "" any */
} Field;
struct Spec {
    Py_ssize_t n;
    Field *f;
};

typedef struct {
    const unsigned char *p, *end;
    int depth;
} Cursor;

static void spec_free(Spec *s) {
    if (s == NULL)
        return;
    for (Py_ssize_t i = 0; i < s->n; i++)
        spec_free(s->f[i].sub);
    PyMem_Free(s->f);
    PyMem_Free(s);
}

static Spec *spec_compile(PyObject *d) {
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "a projection spec is a dict");
        return NULL;
    }
    Spec *s = PyMem_Calloc(1, sizeof(Spec));
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0, i = 0;
    if (s == NULL || (s->f = PyMem_Calloc(n ? n : 1, sizeof(Field))) == NULL) {
        PyMem_Free(s);
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        Field *f = &s->f[i];
        s->n = ++i;
        if (!PyUnicode_Check(k) || (f->name = PyUnicode_AsUTF8AndSize(k, &f->len)) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a projection spec's keys are str");
            goto fail;
        }
        f->key = k;
        if (PyBytes_Check(v)) {
            f->mode = SKIP;
            f->first = PyBytes_AS_STRING(v);
        } else if (PyList_Check(v) && PyList_GET_SIZE(v) == 1 && PyDict_Check(PyList_GET_ITEM(v, 0))) {
            f->mode = LIST;
            if ((f->sub = spec_compile(PyList_GET_ITEM(v, 0))) == NULL)
                goto fail;
        } else if (v == Py_None)
            f->mode = LEAF;
        else if (v == Py_False)
            f->mode = BAIL;
        else if (PyFrozenSet_Check(v)) {
            f->mode = SET;
            f->set = v;
        } else if (PyTuple_Check(v)) {
            f->mode = CHECK;
            f->fast = v;
        } else if (PyDict_Check(v)) {
            f->mode = NEST;
            if ((f->sub = spec_compile(v)) == NULL)
                goto fail;
        } else {
            PyErr_SetString(PyExc_TypeError,
                            "a spec value is None, False, a frozenset, a fast mark, bytes, a dict or [a dict]");
            goto fail;
        }
    }
    return s;
fail:
    spec_free(s);
    return NULL;
}

/* 1: a byte a string can hold as it is (printable ASCII other than '"' and '\\'). */
static unsigned char plain[256];

/* Past the plain bytes at c->p, to the first that needs a look (a quote, a backslash, a control
 * character or a byte >= 0x80): sixteen at a time with SSE2 (every x86-64), else eight at a time
 * in a word, the first such byte of a block found from its mask. */
static void skip_plain(Cursor *c) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (c->end - c->p >= 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)c->p);
        /* (signed: a byte >= 0x80 is negative, so below 0x20 too) */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, slash)),
                                    _mm_cmplt_epi8(w, space));
        unsigned m = (unsigned)_mm_movemask_epi8(stop);
        if (m) {
            c->p += __builtin_ctz(m);
            return;
        }
        c->p += 16;
    }
#endif
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (c->end - c->p >= 8) {
        uint64_t w;
        memcpy(&w, c->p, 8);
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        uint64_t stop = ((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w;
        if (stop & highs)
            break;
        c->p += 8;
    }
    while (c->p < c->end && plain[*c->p])
        c->p++;
}

static void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static inline int cont(const unsigned char *p, const unsigned char *end, int n) {
    if (end - p < n)
        return 0;
    for (int i = 0; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return 1;
}

/* The length of the valid UTF-8 sequence at p (a byte >= 0x80), 0 if invalid (overlong, a
 * surrogate, over U+10FFFF, truncated). */
static inline int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned char b = p[0];
    if (b >= 0xC2 && b <= 0xDF)
        return cont(p + 1, end, 1) ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        if (!cont(p + 1, end, 2))
            return 0;
        if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] > 0x9F))
            return 0;
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (!cont(p + 1, end, 3))
            return 0;
        if ((b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] > 0x8F))
            return 0;
        return 4;
    }
    return 0;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
    if (end - p < 4)
        return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= h - '0';
        else if (h >= 'a' && h <= 'f')
            v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F')
            v |= h - 'A' + 10;
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* One escape after its backslash (c->p at the letter): its code point, c->p moved past it. */
static int escape(Cursor *c, unsigned *cp) {
    if (c->p >= c->end)
        return NO;
    unsigned char e = *c->p++;
    switch (e) {
    case '"': *cp = '"'; return OK;
    case '\\': *cp = '\\'; return OK;
    case '/': *cp = '/'; return OK;
    case 'b': *cp = '\b'; return OK;
    case 'f': *cp = '\f'; return OK;
    case 'n': *cp = '\n'; return OK;
    case 'r': *cp = '\r'; return OK;
    case 't': *cp = '\t'; return OK;
    case 'u': break;
    default: return NO;
    }
    unsigned u, lo;
    if (!hex4(c->p, c->end, &u))
        return NO;
    c->p += 4;
    if (u >= 0xDC00 && u <= 0xDFFF)
        return NO; /* a lone low surrogate */
    if (u >= 0xD800 && u <= 0xDBFF) {
        if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || !hex4(c->p + 2, c->end, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return NO; /* a lone high surrogate */
        c->p += 6;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    }
    *cp = u;
    return OK;
}

static Py_ssize_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string (c->p at its opening quote); built into *out when out is not NULL. `*escaped`: it
 * held an escape. */
/* A str of the plain ASCII bytes s[0:n] (no escape, nothing >= 0x80): copied, not decoded. */
static PyObject *ascii_str(const unsigned char *s, Py_ssize_t n) {
    PyObject *u = PyUnicode_New(n, 127);
    if (u != NULL)
        memcpy(PyUnicode_1BYTE_DATA(u), s, n);
    return u;
}

/* Object keys repeat on every line: the last str made for each (short, ASCII) key is kept, in a
 * table indexed by a hash of its bytes, and given again when the same bytes come back. */
#define KEYS 1024
#define KEY_MAX 32
static PyObject *keys[KEYS];

static PyObject *key_str(const unsigned char *s, Py_ssize_t n) {
    if (n > KEY_MAX)
        return ascii_str(s, n);
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    PyObject **slot = &keys[h & (KEYS - 1)];
    PyObject *k = *slot;
    if (k != NULL && PyUnicode_GET_LENGTH(k) == n && memcmp(PyUnicode_1BYTE_DATA(k), s, n) == 0) {
        Py_INCREF(k);
        return k;
    }
    if ((k = ascii_str(s, n)) == NULL)
        return NULL;
    Py_XSETREF(*slot, k);
    Py_INCREF(k);
    return k;
}

/* Whether the 16 bytes at p begin with five three-byte characters led by E1-EC or EE-EF (each
 * followed by two continuation bytes): one mask test of the leads' and continuations' high bits
 * and one of the leads' low nibbles (not 0, E0: overlong forms; not D, ED: surrogates). */
static inline int cjk5(const unsigned char *p) {
#if defined(__SSE2__)
#define CJK3(a, b, c) a, b, c, a, b, c, a, b, c, a, b, c, a, b, c
    const __m128i high = _mm_setr_epi8(CJK3(-16, -64, -64), 0), want = _mm_setr_epi8(CJK3(-32, -128, -128), 0);
    const __m128i low = _mm_setr_epi8(CJK3(15, 0, 0), 0), fill = _mm_setr_epi8(CJK3(0, 16, 16), 16);
#undef CJK3
    __m128i w = _mm_loadu_si128((const __m128i *)p), nib = _mm_or_si128(_mm_and_si128(w, low), fill);
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(nib, _mm_setzero_si128()), _mm_cmpeq_epi8(nib, _mm_set1_epi8(13)));
    __m128i ok = _mm_andnot_si128(bad, _mm_cmpeq_epi8(_mm_and_si128(w, high), want));
    return _mm_movemask_epi8(ok) == 0xFFFF;
#else
    (void)p;
    return 0;
#endif
}

/* A string (c->p at its opening quote); built into *out when out is not NULL (`key`: an object's
 * key). `*escaped`: it held an escape. */
static int string_of(Cursor *c, PyObject **out, int *escaped, int key) {
    const unsigned char *start = ++c->p;
    int esc = 0, ascii = 1;
    for (;;) {
        skip_plain(c);
        if (c->p >= c->end)
            return NO;
        unsigned char b = *c->p;
        if (b == '"')
            break;
        if (b == '\\') {
            unsigned cp;
            c->p++;
            if (escape(c, &cp) != OK)
                return NO;
            esc = 1;
        } else if (b < 0x20) {
            return NO;
        } else { /* >= 0x80: a run of multi-byte characters (CJK text is one) */
            ascii = 0;
            const unsigned char *p = c->p, *end = c->end; /* (a local: no reload through c) */
            for (;;) {
                /* the common case first: three-byte characters led by E1-EC or EE-EF, which have
                 * no overlong or surrogate form: valid when two continuation bytes follow (five
                 * at a time, `cjk5`, then one at a time) */
                while (end - p >= 16 && cjk5(p))
                    p += 15;
                while (end - p >= 3 && (unsigned char)(p[0] - 0xE1) <= 0x0E && p[0] != 0xED &&
                       (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80)
                    p += 3;
                if (p >= end || *p < 0x80)
                    break;
                int n = utf8_len(p, end);
                if (n == 0)
                    return NO;
                p += n;
                if (p >= end || *p < 0x80)
                    break;
            }
            c->p = p;
        }
    }
    const unsigned char *stop = c->p++;
    if (escaped != NULL)
        *escaped = esc;
    if (out == NULL)
        return OK;
    if (!esc && ascii) {
        *out = key ? key_str(start, stop - start) : ascii_str(start, stop - start);
        return *out == NULL ? ERR : OK;
    }
    if (!esc) {
        *out = PyUnicode_DecodeUTF8((const char *)start, stop - start, NULL);
        return *out == NULL ? ERR : OK;
    }
    char *buf = PyMem_Malloc(stop - start + 1), *o = buf;
    if (buf == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    Cursor s = {start, stop, 0};
    while (s.p < s.end) {
        if (*s.p == '\\') {
            unsigned cp;
            s.p++;
            escape(&s, &cp); /* (checked above) */
            o += put_utf8(o, cp);
        } else {
            *o++ = (char)*s.p++;
        }
    }
    *out = PyUnicode_DecodeUTF8(buf, o - buf, NULL);
    PyMem_Free(buf);
    return *out == NULL ? ERR : OK;
}

static int string(Cursor *c, PyObject **out, int *escaped) {
    return string_of(c, out, escaped, 0);
}

static int digits(Cursor *c) {
    const unsigned char *s = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return (int)(c->p - s);
}

/* A number; built into *out when out is not NULL: an int (at most 18 digits: what orjson makes an
 * int) or a float (Python's correctly rounded `float()`). */
static int number(Cursor *c, PyObject **out) {
    const unsigned char *s = c->p;
    int is_float = 0;
    if (*c->p == '-')
        c->p++;
    if (c->p >= c->end)
        return NO;
    int n = digits(c);
    if (n == 0 || n > 18 || (n > 1 && s[*s == '-'] == '0'))
        return NO;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (digits(c) == 0)
            return NO;
        is_float = 1;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        int e = digits(c);
        if (e == 0 || e > 2)
            return NO;
        is_float = 1;
    }
    Py_ssize_t len = c->p - s;
    if (len > MAX_NUMBER)
        return NO;
    if (out == NULL)
        return OK;
    if (!is_float) { /* (at most 18 digits: a long long, summed here rather than by strtoll) */
        long long x = 0;
        for (const unsigned char *q = s + (*s == '-'); q < c->p; q++)
            x = x * 10 + (*q - '0');
        *out = PyLong_FromLongLong(*s == '-' ? -x : x);
        return *out == NULL ? ERR : OK;
    }
    char buf[MAX_NUMBER + 1];
    memcpy(buf, s, len);
    buf[len] = '\0';
    double d = PyOS_string_to_double(buf, NULL, NULL);
    if (d == -1.0 && PyErr_Occurred())
        return ERR;
    *out = PyFloat_FromDouble(d);
    return *out == NULL ? ERR : OK;
}

static int value(Cursor *c, int build, const Spec *spec, PyObject **out);
static int projected_array(Cursor *c, const Spec *spec, PyObject **out);

static int literal(Cursor *c, const char *word, Py_ssize_t n, PyObject *v, PyObject **out) {
    if (c->end - c->p < n || memcmp(c->p, word, n) != 0)
        return NO;
    c->p += n;
    if (out != NULL) {
        Py_INCREF(v);
        *out = v;
    }
    return OK;
}

static const Field *field_of(const Spec *spec, const unsigned char *name, Py_ssize_t len) {
    for (Py_ssize_t i = 0; i < spec->n; i++) /* (the first byte before a call to memcmp) */
        if (spec->f[i].len == len && (len == 0 || spec->f[i].name[0] == name[0]) &&
            memcmp(spec->f[i].name, name, len) == 0)
            return &spec->f[i];
    return NULL;
}

/* One member's value in a projected object: built, projected, refused per its field. */
/* d[k] = v (v's reference taken), NO when d held k already: a duplicated key, which the caller
 * leaves to the ordinary reading (d is dropped). Told by d's size, not by a lookup before each
 * member: that lookup was 6% of reading the Pi bench corpus (callgrind, issue 28). */
static int set_new(PyObject *d, PyObject *k, PyObject *v) {
    Py_ssize_t n = PyDict_GET_SIZE(d);
    int r = PyDict_SetItem(d, k, v);
    Py_DECREF(v);
    return r < 0 ? ERR : PyDict_GET_SIZE(d) == n ? NO : OK;
}

static int member(Cursor *c, const Field *f, PyObject *d) {
    PyObject *v = NULL;
    int r;
    if (f->mode == BAIL)
        return NO;
    if (f->mode == SKIP) /* validated, never built: its kind must be one of `first`'s */
        return *f->first && strchr(f->first, *c->p) == NULL ? NO : value(c, 0, NULL, NULL);
    if (f->mode == NEST && *c->p == '{')
        r = value(c, 0, f->sub, &v);
    else if (f->mode == LIST && *c->p == '[')
        r = projected_array(c, f->sub, &v);
    else if (f->mode == NEST && *c->p != 'n')
        return NO; /* a declared object that is neither an object nor null */
    else
        r = value(c, 1, NULL, &v);
    if (r != OK)
        return r;
    if (f->mode == SET || f->mode == CHECK) {
        int in = f->mode == CHECK ? fast_ok(f->fast, v)
                 : PyUnicode_CheckExact(v) ? PySet_Contains(f->set, v) : 0;
        if (in != 1) {
            Py_DECREF(v);
            return in < 0 ? ERR : NO;
        }
    }
    return set_new(d, f->key, v);
}

/* After an object member or an array element: MORE at ',' (the cursor at the next item), OK at
   `close` (past it), NO at anything else. */
static int next_item(Cursor *c, unsigned char close) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
        c->p++;
        skip_ws(c);
        return MORE;
    }
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return OK;
    }
    return NO;
}

/* One member's value in an object that is skipped, built or projected. */
static int any_member(Cursor *c, int build, const Spec *spec, PyObject *d, PyObject *k,
                      const unsigned char *name, Py_ssize_t len, int esc) {
    if (build) {
        PyObject *v = NULL;
        int r = value(c, 1, NULL, &v);
        if (r != OK)
            return r;
        r = PyDict_SetItem(d, k, v) < 0 ? ERR : OK;
        Py_DECREF(v);
        return r;
    }
    if (spec == NULL)
        return value(c, 0, NULL, NULL);
    if (esc)
        return NO; /* an escaped key of a projected object: it may name a declared field */
    const Field *f = field_of(spec, name, len);
    return f == NULL ? value(c, 0, NULL, NULL) : member(c, f, d);
}

/* An object (c->p at '{'): skipped (out NULL), built whole (`build`) or projected by `spec`. */
static int object(Cursor *c, int build, const Spec *spec, PyObject **out) {
    PyObject *d = NULL;
    int r = NO;
    c->p++;
    if (out != NULL && (d = PyDict_New()) == NULL)
        return ERR;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        goto done;
    }
    for (;;) {
        r = NO;
        if (c->p >= c->end || *c->p != '"')
            goto fail;
        const unsigned char *name = c->p + 1;
        PyObject *k = NULL;
        int esc = 0;
        if ((r = string_of(c, build ? &k : NULL, &esc, 1)) != OK)
            goto fail;
        Py_ssize_t len = c->p - 1 - name;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') {
            Py_XDECREF(k);
            r = NO;
            goto fail;
        }
        c->p++;
        skip_ws(c);
        r = c->p < c->end ? any_member(c, build, spec, d, k, name, len, esc) : NO;
        Py_XDECREF(k);
        if (r != OK)
            goto fail;
        if ((r = next_item(c, '}')) == MORE)
            continue;
        if (r == OK)
            break;
        goto fail;
    }
done:
    if (out != NULL)
        *out = d;
    return OK;
fail:
    Py_XDECREF(d);
    return r;
}

/* An array (c->p at '['): skipped (out NULL) or built whole. */
static int array(Cursor *c, PyObject **out) {
    PyObject *l = NULL;
    int r = NO;
    c->p++;
    if (out != NULL && (l = PyList_New(0)) == NULL)
        return ERR;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        goto done;
    }
    for (;;) {
        PyObject *v = NULL;
        if ((r = value(c, out != NULL, NULL, out != NULL ? &v : NULL)) != OK)
            goto fail;
        if (v != NULL) {
            r = PyList_Append(l, v) < 0 ? ERR : OK;
            Py_DECREF(v);
            if (r != OK)
                goto fail;
        }
        if ((r = next_item(c, ']')) == MORE)
            continue;
        if (r == OK)
            break;
        goto fail;
    }
done:
    if (out != NULL)
        *out = l;
    return OK;
fail:
    Py_XDECREF(l);
    return r;
}

/* An array (c->p at '[') whose object elements are projected by `spec`, the others built whole. */
static int projected_array(Cursor *c, const Spec *spec, PyObject **out) {
    PyObject *l = PyList_New(0);
    int r = NO;
    if (l == NULL)
        return ERR;
    if (++c->depth > MAX_DEPTH)
        goto fail;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        goto done;
    }
    for (;;) {
        PyObject *v = NULL;
        if (c->p < c->end && *c->p == '{') {
            if (++c->depth > MAX_DEPTH) {
                r = NO;
                goto fail;
            }
            r = object(c, 0, spec, &v);
            c->depth--;
        } else {
            r = value(c, 1, NULL, &v);
        }
        if (r != OK)
            goto fail;
        r = PyList_Append(l, v) < 0 ? ERR : OK;
        Py_DECREF(v);
        if (r != OK)
            goto fail;
        if ((r = next_item(c, ']')) == MORE)
            continue;
        if (r == OK)
            break;
        goto fail;
    }
done:
    c->depth--;
    *out = l;
    return OK;
fail:
    Py_DECREF(l);
    return r;
}

/* Any value at c->p (not whitespace): skipped when out is NULL, else built whole (`build`) or,
 * for an object, projected by `spec`. */
static int value(Cursor *c, int build, const Spec *spec, PyObject **out) {
    if (c->p >= c->end)
        return NO;
    unsigned char b = *c->p;
    int r;
    switch (b) {
    case '{':
    case '[':
        if (++c->depth > MAX_DEPTH)
            return NO;
        r = b == '{' ? object(c, build, build ? NULL : spec, out) : array(c, out);
        c->depth--;
        return r;
    case '"':
        return string(c, out, NULL);
    case 't':
        return literal(c, "true", 4, Py_True, out);
    case 'f':
        return literal(c, "false", 5, Py_False, out);
    case 'n':
        return literal(c, "null", 4, Py_None, out);
    default:
        if (b == '-' || (b >= '0' && b <= '9'))
            return number(c, out);
        return NO;
    }
}

/* The projection of one line, or Py_None (not sure: the ordinary way); NULL on error. */
static PyObject *project_line(const unsigned char *s, const unsigned char *e, const Spec *spec) {
    Cursor c = {s, e, 0};
    PyObject *d = NULL;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        Py_RETURN_NONE;
    int r = value(&c, 0, spec, &d);
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

/* The lines of args[0] cut as `read.lines.line_views` cuts them, each projected by `line` with the
   spec `compile` makes of args[1] (`project_lines`; _pi.c's `pi_project_lines`): a list of
   (start, stop, fields or None); None before line args[2] or for a line over args[3] bytes. */
static PyObject *lines_projected(PyObject *const *args, Py_ssize_t nargs, const char *usage,
                                 Spec *(*compile)(PyObject *),
                                 PyObject *(*line)(const unsigned char *, const unsigned char *, const Spec *)) {
    Py_buffer buf;
    Py_ssize_t first, limit;
    if (nargs != 4 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if ((first = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((limit = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    Spec *spec = compile(args[1]);
    if (spec == NULL)
        return NULL;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        spec_free(spec);
        return NULL;
    }
    PyObject *out = PyList_New(0);
    const unsigned char *data = buf.buf, *p = data, *end = data + buf.len;
    for (Py_ssize_t n = 1; out != NULL && p < end; n++) {
        const unsigned char *nl = memchr(p, '\n', end - p), *stop = nl ? nl : end;
        PyObject *fields = Py_None;
        if (n < first || (limit > 0 && stop - p > limit))
            Py_INCREF(fields);
        else if ((fields = line(p, stop, spec)) == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyObject *item = Py_BuildValue("(nnN)", (Py_ssize_t)(p - data), (Py_ssize_t)(stop - data), fields);
        if (item == NULL || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
        p = stop + 1;
    }
    PyBuffer_Release(&buf);
    spec_free(spec);
    return out;
}

PyObject *project_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return lines_projected(args, nargs, "project_lines(data, spec: dict, first: int, limit: int)",
                           spec_compile, project_line);
}

void project_init(void) {
    for (int i = 0x20; i < 0x80; i++)
        plain[i] = i != '"' && i != '\\';
}
