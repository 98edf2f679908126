/* What the parts of the Claude Code scanner (`sessiontools.read._native.claude_summary`, issue 28)
 * share: a line's record, a file's, the session's, and the functions one part gives the others.
 *   _claude_line.c   reading the lines (the JSON scanner of _project.c is included there, once)
 *   _claude_tree.c   one file's tree: uuids, children, `_walk`, the side results; the maps
 *   _claude_bill.c   billing across the session's files (`claude_usage.billed_responses`)
 *   _claude_paths.c  one file's paths and their messages (`claude_paths`, `claude_code._Builder`)
 *   _claude.c        the entry point: claude_summary, which runs them in that order
 * Functions shared between parts are prefixed `claude_` (macros below) and hidden from the module's
 * symbols. */
#ifndef SESSIONTOOLS_CLAUDE_H
#define SESSIONTOOLS_CLAUDE_H
#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLAUDE_SCANNER /* (_claude_line.c has them from _project.c) */
enum { OK = 0, NO = 1, ERR = -1 }; /* NO: not sure, the ordinary way */
#endif
#define CLAUDE_SHARED __attribute__((visibility("hidden")))

typedef struct {
    const unsigned char *s;
    Py_ssize_t n; /* -1: absent (or not a non-empty string where that is what counts) */
    int esc;      /* its bytes hold an escape (only a value given back, never compared: `shown`) */
} Str;

enum { T_USER = 1, T_ASSISTANT, T_SYSTEM, T_ATTACHMENT, T_APIREQ, T_META, T_UNKNOWN };
enum { R_USER, R_ASSISTANT, R_TOOL, R_SUMMARY, R_OTHER };

typedef struct {
    int line, type;
    unsigned char side, boundary, synthetic, tool, summary, meta, command, api_error;
    Str type_s, uuid, parent, logical, sid, ts, version, cwd, branch, mid, rid, model, stop;
    int entry; /* 0 absent/null, 1 a string (in `entry_s`), 2 true, 3 false */
    Str entry_s;
    long long u[4], hour; /* input, cache_read, cache_write, output; the 1h part */
    int has_usage, has_msg;
    Str trigger, kept_list, head, tail;
    long long pre, post;
    int has_pre, has_post;
    /* the session's bookkeeping */
    int resp, kid, kid_last, next_kid, stamp, pstamp, msg, onstamp;
    unsigned char rejected, compacted, rendered;
} Rec;

typedef struct {
    Rec *r;
    int n, cap;
} File;

/* -- a map of byte strings to ints (open addressing) ------------------------------------------ */
typedef struct {
    const unsigned char **k;
    Py_ssize_t *len;
    int *v, cap, n;
} Map;

typedef struct {
    long long high, total_high;
} Limits;

/* A response billed once (`claude_usage.billed_responses`). */
typedef struct {
    int first_f, first_r, pick_f, pick_r;
    long long u[4], hour, total;
    int next_same; /* the next response of the same message id, -1 */
} Response;

/* The exact key (message id, request id or none) as bytes: id, a separator, then the request id. */
typedef struct {
    unsigned char *buf;
    Py_ssize_t n, cap;
} Bytes;

typedef struct {
    File *files;
    int nfiles;
    Response *resp;
    int nresp;
    int stamp; /* a fresh mark for `Rec.stamp` (walks, resolves) and `Rec.onstamp` */
} Session;

typedef struct {
    int *v, n, cap;
} Ints;

typedef struct {
    Session *S;
    File *f;
    Map nodes, through;
    long long largest;
    PyObject *paths; /* list of (leaf, side, messages, compactions, synthetic, no usage) */
} FileWork;

enum { TR_THRESHOLD, TR_MANUAL, TR_OVERFLOW, TR_UNKNOWN };

static inline int is_lit(Str a, const char *lit) {
    Py_ssize_t n = (Py_ssize_t)strlen(lit);
    return a.n == n && memcmp(a.s, lit, n) == 0;
}
static inline int conv(const Rec *r) { return r->type >= T_USER && r->type <= T_ATTACHMENT; }
static inline int talk(const Rec *r) { return r->type == T_USER || r->type == T_ASSISTANT; }

/* _claude_line.c */
#define read_file claude_read_file
#define str_of claude_str_of
#define each_raw_string claude_each_raw_string
CLAUDE_SHARED int read_file(const unsigned char *data, Py_ssize_t len, Py_ssize_t limit, Limits *lim, File *f);
CLAUDE_SHARED PyObject *str_of(Str s);
/* Each string of a JSON list (its bytes from '[' to ']', as the line's scanner found it) given to
 * `each` as raw bytes: NO at an escaped string or a value the scanner is not sure of; `each`'s NO
 * or ERR ends it. */
CLAUDE_SHARED int each_raw_string(Str list, int (*each)(void *ctx, Str s), void *ctx);
/* _claude_tree.c */
#define map_init claude_map_init
#define map_free claude_map_free
#define map_get claude_map_get
#define map_put claude_map_put
#define push claude_push
#define cmp_int claude_cmp_int
#define tree claude_tree
#define walk claude_walk
#define side_results claude_side_results
CLAUDE_SHARED int map_init(Map *m, int want);
CLAUDE_SHARED void map_free(Map *m);
CLAUDE_SHARED int map_get(const Map *m, Str key, int missing);
CLAUDE_SHARED int map_put(Map *m, Str key, int v);
CLAUDE_SHARED int push(Ints *a, int x);
CLAUDE_SHARED int cmp_int(const void *a, const void *b);
CLAUDE_SHARED int tree(FileWork *w, Ints *diags);
CLAUDE_SHARED int walk(FileWork *w, int leaf, Ints *chain);
CLAUDE_SHARED int side_results(FileWork *w, Ints *chain);
/* _claude_bill.c */
#define bill claude_bill
#define usage_of claude_usage_of
#define billed_list claude_billed_list
/* A line's usage into `u` (input, cache read, cache write, output) and its 1h part: 0 when it has none. */
CLAUDE_SHARED int usage_of(const Rec *r, long long u[4], long long *hour);
CLAUDE_SHARED int bill(Session *S, Map *exact, Map *by_message, Bytes *keys);
CLAUDE_SHARED PyObject *billed_list(Session *S);
/* _claude_paths.c */
#define file_paths claude_file_paths
#define file_facts claude_file_facts
CLAUDE_SHARED int file_paths(FileWork *w);
CLAUDE_SHARED PyObject *file_facts(FileWork *w);
#endif
