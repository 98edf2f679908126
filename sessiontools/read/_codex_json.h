/* A strict JSON tokenizer for one line (_codex_json.c), for the Codex summary (_codex_summary.c).
 * It accepts a subset of what orjson reads the same way: anything else (invalid JSON, a lone or any
 * surrogate escape, a number with an exponent or of more than 18 digits, nesting over 200) is J_BAIL,
 * and the caller leaves the file to the ordinary reading. */
#ifndef SESSIONTOOLS_CODEX_JSON_H
#define SESSIONTOOLS_CODEX_JSON_H
#include <stddef.h>
#include <stdint.h>

enum { T_OBJ, T_ARR, T_STR, T_NUM, T_TRUE, T_FALSE, T_NULL };

typedef struct {
    unsigned char kind;
    unsigned char esc;     /* T_STR: holds a backslash escape */
    unsigned char is_int;  /* T_NUM: a plain non-negative integer (no sign, fraction) */
    size_t start, end;     /* T_STR: inside the quotes; else the value's bytes */
    int size;              /* T_OBJ: members; T_ARR: elements */
    int skip;              /* the index of the token after this value's subtree */
    int64_t value;         /* T_NUM with is_int */
} JTok;

typedef struct {
    JTok *t;
    int n, cap;
} JToks;

/* Whether data[0:n] is valid UTF-8 as orjson reads it (no overlong form, no surrogate, nothing past
 * U+10FFFF): what `jtokenize` needs of its buffer (it looks only at the ASCII bytes of a string). */
int jutf8(const char *data, size_t n);
/* Tokenize data[start:end] (one line without its newline) as one JSON value: 0, or -1 (not sure: bail)
 * or -2 (out of memory, a Python error set). The buffer must be valid UTF-8 (`jutf8`). */
int jtokenize(const char *data, size_t start, size_t end, JToks *out);
/* The value of `key` in object token `obj` (its last occurrence, as orjson keeps), or -1. */
int jget(const char *data, const JToks *ts, int obj, const char *key);
/* The unescaped bytes of string token `i`, appended to *buf (grown); their length, or -1. */
ptrdiff_t junescape(const char *data, const JTok *t, char **buf, size_t *cap);
#endif
