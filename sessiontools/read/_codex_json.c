/* A strict JSON tokenizer for one rollout line (see _codex_json.h): the values of a line as tokens in
 * preorder, each string validated as orjson validates it (escapes, no control characters; its UTF-8
 * by `jutf8`, over the whole buffer first) and never decoded. What it is not sure orjson reads the
 * same way is J_BAIL (-1): a surrogate escape (orjson's handling of lone ones differs from
 * Python's), a number with an exponent (it may be infinite) or of more than 18 digits (orjson's
 * 64-bit limit), nesting deeper than 200. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include "_codex_json.h"

#define BAIL (-1)
#define NOMEM (-2)
#define MAX_DEPTH 200

typedef struct {
    const unsigned char *p;
    size_t i, end;
    JToks *ts;
} P;

static int push(P *s, unsigned char kind, size_t start) {
    JToks *ts = s->ts;
    if (ts->n == ts->cap) {
        int cap = ts->cap ? ts->cap * 2 : 256;
        JTok *t = PyMem_Realloc(ts->t, (size_t)cap * sizeof(JTok));
        if (t == NULL) {
            PyErr_NoMemory();
            return NOMEM;
        }
        ts->t = t;
        ts->cap = cap;
    }
    JTok *t = &ts->t[ts->n];
    t->kind = kind;
    t->esc = t->is_int = 0;
    t->start = t->end = start;
    t->size = 0;
    t->value = 0;
    return ts->n++;
}

static void ws(P *s) {
    while (s->i < s->end) {
        unsigned char c = s->p[s->i];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
            return;
        s->i++;
    }
}

static int hex4(const unsigned char *p, unsigned *out) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = p[k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    *out = v;
    return 0;
}

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

/* The offset of the first byte of p[0:16] that is a quote, a backslash or a control character
 * (16: none). A byte of 0x80 or more is plain here: `jutf8` validated the whole buffer first, and
 * no byte of a multi-byte UTF-8 character is ASCII. */
#ifdef __SSE2__
#include <emmintrin.h>
static inline int special16(const unsigned char *p) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                               _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v));
    int m = _mm_movemask_epi8(hit);
    return m ? __builtin_ctz((unsigned)m) : 16;
}
#else
static inline int special16(const unsigned char *p) {
    for (int k = 0; k < 16; k++)
        if (p[k] == '"' || p[k] == '\\' || p[k] < 0x20)
            return k;
    return 16;
}
#endif

/* AVX2, where the CPU has it (checked once at run time; SESSIONTOOLS_SIMD=sse2 in the environment
 * keeps to SSE2, which tests/read/test_codex_summary.py uses to hold both ways equal): the long runs
 * of a string's plain bytes, and of a buffer's ASCII, thirty-two bytes at a time. The SSE2 (or
 * portable) loops below do the rest, and all of it on a CPU without AVX2. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__SSE2__)
#include <immintrin.h>
#define WIDE 1
static int wide_ok = -1;  /* (set by `jutf8` and `jtokenize`, which every scan starts with) */

static void wide_init(void) {
    if (wide_ok < 0) {
        const char *env = getenv("SESSIONTOOLS_SIMD");
        wide_ok = !(env && strcmp(env, "sse2") == 0) && __builtin_cpu_supports("avx2");
    }
}

/* From p[i]: the offset of the first quote, backslash or control character, or where fewer than 32
 * bytes are left before `end`. */
__attribute__((target("avx2"))) static size_t plain32(const unsigned char *p, size_t i, size_t end) {
    const __m256i quote = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\'), ctl = _mm256_set1_epi8(0x1f);
    while (i + 32 <= end) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, bs)),
                                      _mm256_cmpeq_epi8(_mm256_min_epu8(v, ctl), v));
        unsigned m = (unsigned)_mm256_movemask_epi8(hit);
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 32;
    }
    return i;
}

/* From p[i]: the offset of the first byte of 0x80 or more, or where fewer than 64 are left. */
__attribute__((target("avx2"))) static size_t ascii64(const unsigned char *p, size_t i, size_t n) {
    while (i + 64 <= n) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(p + i)), b = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        if (_mm256_movemask_epi8(_mm256_or_si256(a, b))) {
            unsigned m = (unsigned)_mm256_movemask_epi8(a);
            return m ? i + (size_t)__builtin_ctz(m) : i + 32 + (size_t)__builtin_ctz((unsigned)_mm256_movemask_epi8(b));
        }
        i += 64;
    }
    return i;
}
#endif

/* A string from just after its opening quote: the token's end is its closing quote. The buffer is
 * valid UTF-8 (`jutf8`), so only the quote, the escapes and the control characters are looked at. */
static int string(P *s, int tok) {
    const unsigned char *p = s->p;
    size_t i = s->i, end = s->end;
    int esc = 0;
#ifdef WIDE
    const int w = wide_ok > 0;
#endif
    for (;;) {
#ifdef WIDE
        if (w) {  /* (a long run: past its first sixteen plain bytes, thirty-two at a time) */
            while (i + 16 <= end) {
                int k = special16(p + i);
                i += (size_t)k;
                if (k < 16)
                    break;
                i = plain32(p, i, end);
            }
        } else
#endif
        while (i + 16 <= end) {
            int k = special16(p + i);
            i += (size_t)k;
            if (k < 16)
                break;
        }
        while (i < end && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20)
            i++;  /* (the last bytes of the line) */
        if (i >= end)
            return BAIL;
        unsigned char c = p[i];
        if (c == '"')
            break;
        if (c != '\\')
            return BAIL;  /* a control character */
        esc = 1;
        if (i + 1 >= end)
            return BAIL;
        unsigned char e = p[i + 1];
        if (e == 'u') {
            unsigned u;
            if (i + 6 > end || hex4(p + i + 2, &u) < 0 || (u >= 0xD800 && u <= 0xDFFF))
                return BAIL;
            i += 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            i += 2;
        } else {
            return BAIL;
        }
    }
    JTok *t = &s->ts->t[tok];
    t->end = i;
    t->esc = (unsigned char)esc;
    s->i = i + 1;
    return 0;
}

/* The length of the UTF-8 character at p[i:n] as orjson takes it (no overlong form, no surrogate,
 * nothing past U+10FFFF), or 0. */
static inline size_t utf8_char(const unsigned char *p, size_t i, size_t n) {
    unsigned c = p[i];
    if (c >= 0xC2 && c <= 0xDF)
        return i + 2 <= n && (p[i + 1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (i + 3 > n || (p[i + 1] & 0xC0) != 0x80 || (p[i + 2] & 0xC0) != 0x80)
            return 0;
        return (c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0) ? 0 : 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (i + 4 > n || (p[i + 1] & 0xC0) != 0x80 || (p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80)
            return 0;
        return (c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90) ? 0 : 4;
    }
    return 0;
}

#ifdef __SSE2__
/* Whether p[0:48] is sixteen three-byte characters (U+1000-U+FFFF but the surrogates: a lead byte
 * E1-EC or EE-EF, two continuation bytes; CJK text), checked sixteen bytes at a time. */
static inline int cjk16(const unsigned char *p) {
    static const unsigned char LEAD[48] = {
        0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF,
        0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0,
        0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0, 0xFF, 0, 0};
    int all = 0xFFFF;
    for (int k = 0; k < 48; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + k));
        __m128i lead = _mm_loadu_si128((const __m128i *)(LEAD + k));
        __m128i cont = _mm_cmpgt_epi8(_mm_set1_epi8(-64), v);  /* (signed: 0x80-0xBF) */
        __m128i e = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xF0)), _mm_set1_epi8((char)0xE0));
        __m128i odd = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xE0)),
                                   _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xED)));
        __m128i ok = _mm_or_si128(_mm_and_si128(lead, _mm_andnot_si128(odd, e)), _mm_andnot_si128(lead, cont));
        all &= _mm_movemask_epi8(ok);
    }
    return all == 0xFFFF;
}
#endif

int jutf8(const char *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i = 0;
#ifdef WIDE
    wide_init();
    const int w = wide_ok > 0;
#endif
    while (i < n) {
#ifdef __SSE2__
#ifdef WIDE
        if (w) {  /* (a long run: past its first sixteen bytes, sixty-four at a time) */
            while (i + 16 <= n) {
                int m = _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + i)));
                if (m) {
                    i += (size_t)__builtin_ctz((unsigned)m);
                    break;
                }
                i = ascii64(p, i + 16, n);
            }
        } else
#endif
        while (i + 16 <= n) {  /* plain ASCII, sixteen bytes at a time */
            int m = _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + i)));
            if (m) {
                i += (size_t)__builtin_ctz((unsigned)m);
                break;
            }
            i += 16;
        }
#endif
        while (i < n && p[i] < 0x80)
            i++;
        while (i < n && p[i] >= 0x80) {  /* a run of other characters */
#ifdef __SSE2__
            if (i + 48 <= n && cjk16(p + i)) {
                i += 48;
                continue;
            }
#endif
            if (i + 3 <= n) {  /* the common one first: three bytes, U+1000-U+FFFF but the surrogates */
                uint32_t w = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16;
                if ((w & 0xC0C0F0u) == 0x8080E0u && p[i] != 0xE0 && p[i] != 0xED) {
                    i += 3;
                    continue;
                }
            }
            size_t k = utf8_char(p, i, n);
            if (k == 0)
                return 0;
            i += k;
        }
    }
    return 1;
}

static int number(P *s, int tok) {
    const unsigned char *p = s->p;
    size_t i = s->i, end = s->end, digits = 0;
    int neg = 0, frac = 0;
    int64_t v = 0;
    if (i < end && p[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= end || p[i] < '0' || p[i] > '9')
        return BAIL;
    if (p[i] == '0' && i + 1 < end && p[i + 1] >= '0' && p[i + 1] <= '9')
        return BAIL;  /* a leading zero */
    while (i < end && p[i] >= '0' && p[i] <= '9') {
        if (++digits > 18)
            return BAIL;
        v = v * 10 + (p[i++] - '0');
    }
    if (i < end && p[i] == '.') {
        frac = 1;
        i++;
        size_t f = 0;
        while (i < end && p[i] >= '0' && p[i] <= '9') {
            i++;
            f++;
        }
        if (f == 0 || f > 30)
            return BAIL;
    }
    if (i < end && (p[i] == 'e' || p[i] == 'E'))
        return BAIL;
    JTok *t = &s->ts->t[tok];
    t->end = i;
    t->is_int = (unsigned char)(!neg && !frac);
    t->value = v;
    s->i = i;
    return 0;
}

static int value(P *s, int depth) {
    if (depth > MAX_DEPTH)
        return BAIL;
    ws(s);
    if (s->i >= s->end)
        return BAIL;
    unsigned char c = s->p[s->i];
    int tok, r;
    switch (c) {
    case '{':
    case '[': {
        tok = push(s, c == '{' ? T_OBJ : T_ARR, s->i);
        if (tok < 0)
            return tok;
        s->i++;
        ws(s);
        int n = 0;
        unsigned char close = c == '{' ? '}' : ']';
        if (s->i < s->end && s->p[s->i] == close) {
            s->i++;
        } else {
            for (;;) {
                if (c == '{') {
                    ws(s);
                    if (s->i >= s->end || s->p[s->i] != '"')
                        return BAIL;
                    int k = push(s, T_STR, ++s->i);
                    if (k < 0)
                        return k;
                    if ((r = string(s, k)) < 0)
                        return r;
                    if (s->ts->t[k].esc)
                        return BAIL;  /* (a key spelt with an escape: not looked for) */
                    s->ts->t[k].skip = s->ts->n;
                    ws(s);
                    if (s->i >= s->end || s->p[s->i] != ':')
                        return BAIL;
                    s->i++;
                }
                if ((r = value(s, depth + 1)) < 0)
                    return r;
                n++;
                ws(s);
                if (s->i >= s->end)
                    return BAIL;
                if (s->p[s->i] == ',') {
                    s->i++;
                    continue;
                }
                if (s->p[s->i] != close)
                    return BAIL;
                s->i++;
                break;
            }
        }
        JTok *t = &s->ts->t[tok];
        t->size = n;
        t->end = s->i;
        t->skip = s->ts->n;
        return 0;
    }
    case '"':
        tok = push(s, T_STR, ++s->i);
        if (tok < 0)
            return tok;
        if ((r = string(s, tok)) < 0)
            return r;
        break;
    case 't':
    case 'f':
    case 'n': {
        const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t len = strlen(word);
        if (s->i + len > s->end || memcmp(s->p + s->i, word, len) != 0)
            return BAIL;
        tok = push(s, c == 't' ? T_TRUE : c == 'f' ? T_FALSE : T_NULL, s->i);
        if (tok < 0)
            return tok;
        s->i += len;
        s->ts->t[tok].end = s->i;
        break;
    }
    default:
        tok = push(s, T_NUM, s->i);
        if (tok < 0)
            return tok;
        if ((r = number(s, tok)) < 0)
            return r;
    }
    s->ts->t[tok].skip = s->ts->n;
    return 0;
}

int jtokenize(const char *data, size_t start, size_t end, JToks *out) {
    P s = {(const unsigned char *)data, start, end, out};
#ifdef WIDE
    wide_init();
#endif
    out->n = 0;
    int r = value(&s, 0);
    if (r < 0)
        return r;
    ws(&s);
    return s.i == s.end ? 0 : BAIL;
}

int jget(const char *data, const JToks *ts, int obj, const char *key) {
    if (obj < 0 || ts->t[obj].kind != T_OBJ)
        return -1;
    size_t len = strlen(key);
    int found = -1, i = obj + 1;
    for (int m = 0; m < ts->t[obj].size; m++) {
        const JTok *k = &ts->t[i];
        int v = i + 1;
        if (k->end - k->start == len && memcmp(data + k->start, key, len) == 0)
            found = v;  /* (the last one: what orjson keeps) */
        i = ts->t[v].skip;
    }
    return found;
}

static int put(char **buf, size_t *cap, size_t n, const char *src, size_t len) {
    if (n + len > *cap) {
        size_t c = (*cap ? *cap : 256);
        while (c < n + len)
            c *= 2;
        char *b = PyMem_Realloc(*buf, c);
        if (b == NULL)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + n, src, len);
    return 0;
}

ptrdiff_t junescape(const char *data, const JTok *t, char **buf, size_t *cap) {
    size_t n = 0, i = t->start, run = i;
    while (i < t->end) {
        if (data[i] != '\\') {
            i++;
            continue;
        }
        if (put(buf, cap, n, data + run, i - run) < 0)
            return -1;
        n += i - run;
        char e = data[i + 1], out[4];
        size_t len = 1;
        unsigned u = 0;
        switch (e) {
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u':
            hex4((const unsigned char *)data + i + 2, &u);  /* (valid: the tokenizer checked it) */
            if (u < 0x80) {
                out[0] = (char)u;
            } else if (u < 0x800) {
                out[0] = (char)(0xC0 | (u >> 6));
                out[1] = (char)(0x80 | (u & 0x3F));
                len = 2;
            } else {
                out[0] = (char)(0xE0 | (u >> 12));
                out[1] = (char)(0x80 | ((u >> 6) & 0x3F));
                out[2] = (char)(0x80 | (u & 0x3F));
                len = 3;
            }
            i += 4;
            break;
        default: out[0] = e;
        }
        if (put(buf, cap, n, out, len) < 0)
            return -1;
        n += len;
        i += 2;
        run = i;
    }
    if (put(buf, cap, n, data + run, i - run) < 0)
        return -1;
    return (ptrdiff_t)(n + i - run);
}
