/* Reading a Claude Code transcript's lines into records (`Rec`, _claude.h): one pass of the JSON
 * scanner of _project.c (included here, not copied, and only here) over each line, keeping the
 * fields `inspect` reads; NO at anything it is not sure of (see _claude.c). */
#define project_lines claude_base_project_lines
#define project_init claude_base_project_init
#define fast_ok claude_fast_ok
#include "_project.c"
#undef project_lines
#undef project_init
#undef fast_ok
#define CLAUDE_SCANNER
#include "_claude.h"

int claude_fast_ok(PyObject *fast, PyObject *v) { return 0; } /* (the scanner's fast marks: unused here) */

/* -- reading one line -------------------------------------------------------------------------- */
/* A string value (c->p at '"') as raw bytes: NO when it holds an escape (its bytes are not its value). */
static int raw_string(Cursor *c, Str *out) {
    const unsigned char *s = c->p + 1;
    int esc = 0;
    int r = string_of(c, NULL, &esc, 0);
    if (r != OK)
        return r;
    if (esc)
        return NO;
    out->s = s;
    out->n = c->p - 1 - s;
    return OK;
}

/* A string value given back and never compared (a timestamp, a cwd, ...): escapes allowed. */
static int shown(Cursor *c, Str *out) {
    const unsigned char *s = c->p + 1;
    int esc = 0;
    if (*c->p != '"')
        return NO;
    int r = string_of(c, NULL, &esc, 0);
    if (r != OK)
        return r;
    out->s = s;
    out->n = c->p - 1 - s;
    out->esc = esc;
    return OK;
}

/* A non-empty string, else absent (any other value validated): parse_record's reading of an id. */
static int id_value(Cursor *c, Str *out) {
    out->n = -1;
    if (*c->p != '"')
        return value(c, 0, NULL, NULL);
    Str s;
    int r = raw_string(c, &s);
    if (r == OK && s.n > 0)
        *out = s;
    return r;
}

/* A checked `text` field: a string (escapes allowed when `need` is 0: then only validated). */
static int text_value(Cursor *c, Str *out, int need) {
    if (*c->p != '"')
        return NO;
    if (need)
        return raw_string(c, out);
    return string_of(c, NULL, NULL, 0);
}

/* A count passing its fast mark: a whole non-negative number of at most 18 digits, <= high. */
static int count_value(Cursor *c, long long high, long long *out) {
    const unsigned char *s = c->p;
    if (s >= c->end || *s < '0' || *s > '9')
        return NO;
    int r = number(c, NULL);
    if (r != OK)
        return r;
    long long x = 0;
    for (const unsigned char *q = s; q < c->p; q++) {
        if (*q < '0' || *q > '9')
            return NO; /* a fraction or an exponent: a float */
        x = x * 10 + (*q - '0');
    }
    if (x > high)
        return NO;
    *out = x;
    return OK;
}

/* true / false / null / absent: a flag's truthiness; anything else NO. */
static int flag_value(Cursor *c, unsigned char *out) {
    if (*c->p == 't') {
        *out = 1;
        return literal(c, "true", 4, Py_True, NULL);
    }
    *out = 0;
    if (*c->p == 'f')
        return literal(c, "false", 5, Py_False, NULL);
    if (*c->p == 'n')
        return literal(c, "null", 4, Py_None, NULL);
    return NO;
}

/* Iterate an object's members: calls `each(c, key, ctx)` with the cursor at the value. Escaped
 * keys: NO (one may name a field read here). `seen`: a mask of the keys read, to refuse duplicates. */
typedef int (*Member)(Cursor *c, Str key, void *ctx, unsigned *seen);

static int members(Cursor *c, Member each, void *ctx) {
    unsigned seen = 0;
    if (*c->p != '{')
        return NO;
    if (++c->depth > MAX_DEPTH)
        return NO;
    c->p++;
    skip_ws(c);
    int r = OK;
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        c->depth--;
        return OK;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '"')
            return NO;
        Str k;
        if ((r = raw_string(c, &k)) != OK)
            return r;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            return NO;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end)
            return NO;
        if ((r = each(c, k, ctx, &seen)) != OK)
            return r;
        if ((r = next_item(c, '}')) == MORE)
            continue;
        if (r == OK)
            break;
        return r;
    }
    c->depth--;
    return OK;
}

/* Mark key number `bit` seen: NO when it was already (orjson keeps the last of duplicates). */
#define ONCE(bit)                                                                                     \
    do {                                                                                              \
        if (*seen & (1u << (bit)))                                                                    \
            return NO;                                                                                \
        *seen |= 1u << (bit);                                                                         \
    } while (0)

/* The start of a user message's text (`content_text(...).lstrip()`), enough to test its prefixes. */
#define PREFIX 72
typedef struct {
    unsigned char b[PREFIX];
    int n, started, texts; /* texts: text blocks joined so far */
} Prefix;

static int py_space(unsigned cp) {
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

static void prefix_cp(Prefix *p, unsigned cp) {
    if (!p->started && py_space(cp))
        return;
    p->started = 1;
    if (p->n + 4 <= PREFIX)
        p->n += (int)put_utf8((char *)p->b + p->n, cp);
    else
        p->n = PREFIX; /* (full: enough for every prefix tested) */
}

/* Feed the string at c->p (validated again, decoded) to the prefix. */
static int prefix_string(Cursor *c, Prefix *p) {
    const unsigned char *s = c->p + 1;
    int r = string_of(c, NULL, NULL, 0);
    if (r != OK)
        return r;
    Cursor t = {s, c->p - 1, 0};
    while (t.p < t.end && p->n < PREFIX) {
        unsigned cp = *t.p;
        if (cp == '\\') {
            t.p++;
            escape(&t, &cp);
        } else if (cp < 0x80) {
            t.p++;
        } else {
            int n = utf8_len(t.p, t.end);
            if (n == 2)
                cp = ((t.p[0] & 0x1F) << 6) | (t.p[1] & 0x3F);
            else if (n == 3)
                cp = ((t.p[0] & 0x0F) << 12) | ((t.p[1] & 0x3F) << 6) | (t.p[2] & 0x3F);
            else
                cp = ((t.p[0] & 0x07) << 18) | ((t.p[1] & 0x3F) << 12) | ((t.p[2] & 0x3F) << 6) | (t.p[3] & 0x3F);
            t.p += n;
        }
        prefix_cp(p, cp);
    }
    return OK;
}

static int starts(const Prefix *p, const char *lit) {
    int n = (int)strlen(lit);
    return p->n >= n && memcmp(p->b, lit, n) == 0;
}

typedef struct {
    Rec *r;
    Limits *lim;
    Prefix *prefix;
    int user;
} Ctx;

/* A content block: its checked fields, whether it is a text or a tool result. */
typedef struct {
    Ctx *x;
    Str type;
    int text_at; /* 1: a text field seen (fed to the prefix later) */
    const unsigned char *text_p;
} Block;

static int block_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Block *b = ctx;
    if (is_lit(k, "type")) {
        ONCE(0);
        return text_value(c, &b->type, 1);
    }
    if (is_lit(k, "text")) {
        ONCE(1);
        b->text_at = 1;
        b->text_p = c->p;
        return text_value(c, NULL, 0);
    }
    if (is_lit(k, "thinking") || is_lit(k, "name") || is_lit(k, "id") || is_lit(k, "tool_use_id"))
        return text_value(c, NULL, 0); /* (a duplicate of one: orjson's last, checked all the same) */
    if (is_lit(k, "content") && *c->p != '"' && *c->p != '[')
        return NO;
    return value(c, 0, NULL, NULL);
}

static int content_value(Cursor *c, Ctx *x) {
    Rec *r = x->r;
    if (*c->p == '"')
        return x->user ? prefix_string(c, x->prefix) : string_of(c, NULL, NULL, 0);
    if (*c->p != '[')
        return NO;
    if (++c->depth > MAX_DEPTH)
        return NO;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        c->depth--;
        return OK;
    }
    for (;;) {
        int rc;
        if (c->p >= c->end)
            return NO;
        if (*c->p == '{') {
            Block b = {x, {NULL, -1}, 0, NULL};
            if ((rc = members(c, block_member, &b)) != OK)
                return rc;
            if (is_lit(b.type, "tool_result"))
                r->tool = 1;
            if (x->user && is_lit(b.type, "text")) { /* "\n".join(b.get("text") or "" ...) */
                if (x->prefix->texts++)
                    prefix_cp(x->prefix, '\n');
                if (b.text_at) {
                    Cursor t = {b.text_p, c->end, 0};
                    if ((rc = prefix_string(&t, x->prefix)) != OK)
                        return rc;
                }
            }
        } else if ((rc = value(c, 0, NULL, NULL)) != OK) {
            return rc;
        }
        if ((rc = next_item(c, ']')) == MORE)
            continue;
        if (rc == OK)
            break;
        return rc;
    }
    c->depth--;
    return OK;
}

static int creation_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    if (is_lit(k, "ephemeral_1h_input_tokens")) {
        ONCE(0);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        if (*c->p == '-') { /* a negative count reads as none */
            const unsigned char *s = c->p;
            int r = number(c, NULL);
            for (const unsigned char *q = s + 1; r == OK && q < c->p; q++)
                if (*q < '0' || *q > '9')
                    return NO;
            return r;
        }
        return count_value(c, (long long)1 << 62, &x->r->hour);
    }
    return value(c, 0, NULL, NULL);
}

static int usage_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    static const char *names[4] = {"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                   "output_tokens"};
    for (int i = 0; i < 4; i++)
        if (is_lit(k, names[i])) {
            ONCE(i);
            return count_value(c, x->lim->high, &x->r->u[i]);
        }
    if (is_lit(k, "cache_creation")) {
        ONCE(4);
        return *c->p == '{' ? members(c, creation_member, x) : value(c, 0, NULL, NULL);
    }
    return value(c, 0, NULL, NULL);
}

static int message_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    if (is_lit(k, "role"))
        return text_value(c, NULL, 0);
    if (is_lit(k, "model")) {
        ONCE(0);
        return text_value(c, &r->model, 1);
    }
    if (is_lit(k, "id")) {
        ONCE(1);
        return text_value(c, &r->mid, 1);
    }
    if (is_lit(k, "stop_reason")) {
        ONCE(2);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        return shown(c, &r->stop);
    }
    if (is_lit(k, "content")) {
        ONCE(3);
        return content_value(c, x);
    }
    if (is_lit(k, "usage")) {
        ONCE(4);
        r->has_usage = 1;
        return members(c, usage_member, x);
    }
    return value(c, 0, NULL, NULL);
}

static int segment_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Rec *r = ((Ctx *)ctx)->r;
    if (is_lit(k, "headUuid")) {
        ONCE(0);
        return text_value(c, &r->head, 1);
    }
    if (is_lit(k, "tailUuid")) {
        ONCE(1);
        return text_value(c, &r->tail, 1);
    }
    if (is_lit(k, "anchorUuid"))
        return text_value(c, NULL, 0);
    return value(c, 0, NULL, NULL);
}

/* An array (c->p at '['): validated; its bytes and whether it has an element. */
static int list_value(Cursor *c, Str *out) {
    const unsigned char *s = c->p;
    if (*s != '[')
        return NO;
    int r = value(c, 0, NULL, NULL);
    if (r != OK)
        return r;
    const unsigned char *q = s + 1;
    while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
        q++;
    out->s = s;
    out->n = *q == ']' ? -1 : c->p - s; /* (an empty list is falsy: `uuids or allUuids`) */
    return OK;
}

typedef struct {
    Str uuids, all;
} Preserved;

static int preserved_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Preserved *p = ctx;
    if (is_lit(k, "uuids")) {
        ONCE(0);
        return list_value(c, &p->uuids);
    }
    if (is_lit(k, "allUuids")) {
        ONCE(1);
        return list_value(c, &p->all);
    }
    return value(c, 0, NULL, NULL);
}

static int compact_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    if (is_lit(k, "trigger")) {
        ONCE(0);
        return text_value(c, &r->trigger, 1);
    }
    if (is_lit(k, "preTokens")) {
        ONCE(1);
        r->has_pre = 1;
        return count_value(c, x->lim->total_high, &r->pre);
    }
    if (is_lit(k, "postTokens")) {
        ONCE(2);
        r->has_post = 1;
        return count_value(c, x->lim->total_high, &r->post);
    }
    if (is_lit(k, "preservedMessages")) {
        ONCE(3);
        Preserved p = {{NULL, -1}, {NULL, -1}};
        int rc = members(c, preserved_member, &p);
        r->kept_list = p.uuids.n >= 0 ? p.uuids : p.all;
        return rc;
    }
    if (is_lit(k, "preservedSegment")) {
        ONCE(4);
        return members(c, segment_member, x);
    }
    return value(c, 0, NULL, NULL);
}

/* What `claude_attachments.attachment_text` reads of an attachment: whether it renders text. */
typedef struct {
    Str type;
    int filename, snippet, prompt, human, task; /* (human: origin kind None or "human") */
} Attachment;

static int origin_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Attachment *a = ctx;
    if (is_lit(k, "kind")) {
        ONCE(0);
        if (*c->p == 'n')
            return literal(c, "null", 4, Py_None, NULL);
        if (*c->p != '"') {
            a->human = 0;
            return value(c, 0, NULL, NULL);
        }
        Str t = {NULL, -1, 0};
        int rc = raw_string(c, &t);
        a->human = is_lit(t, "human");
        return rc;
    }
    return value(c, 0, NULL, NULL);
}

static int attachment_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Attachment *a = ctx;
    if (is_lit(k, "type")) {
        ONCE(0);
        return *c->p == '"' ? raw_string(c, &a->type) : value(c, 0, NULL, NULL);
    }
    if (is_lit(k, "filename") || is_lit(k, "snippet") || is_lit(k, "prompt")) {
        int bit = k.s[0] == 'f' ? 1 : k.s[0] == 's' ? 2 : 3;
        ONCE(bit);
        int *flag = bit == 1 ? &a->filename : bit == 2 ? &a->snippet : &a->prompt;
        *flag = *c->p == '"' || (bit == 3 && *c->p == '[');
        return value(c, 0, NULL, NULL);
    }
    if (is_lit(k, "origin")) {
        ONCE(4);
        if (*c->p != '{')
            return value(c, 0, NULL, NULL);
        return members(c, origin_member, a);
    }
    if (is_lit(k, "commandMode")) {
        ONCE(5);
        if (*c->p != '"')
            return value(c, 0, NULL, NULL);
        Str t = {NULL, -1, 0};
        int rc = raw_string(c, &t);
        a->task = is_lit(t, "task-notification");
        return rc;
    }
    return value(c, 0, NULL, NULL);
}

/* An attachment object: r->rendered when it renders text (`attachment_text` not None). */
static int attachment_value(Cursor *c, Rec *r) {
    Attachment a = {{NULL, -1, 0}, 0, 0, 0, 1, 0};
    if (*c->p != '{')
        return value(c, 0, NULL, NULL);
    int rc = members(c, attachment_member, &a);
    if (is_lit(a.type, "edited_text_file"))
        r->rendered = a.filename && a.snippet;
    else if (is_lit(a.type, "queued_command"))
        r->rendered = a.human && !a.task && a.prompt;
    return rc;
}

static int line_member(Cursor *c, Str k, void *ctx, unsigned *seen) {
    Ctx *x = ctx;
    Rec *r = x->r;
    switch (k.n > 0 ? k.s[0] : 0) {
    case 't':
        if (is_lit(k, "type")) {
            ONCE(0);
            return text_value(c, &r->type_s, 1);
        }
        if (is_lit(k, "timestamp")) {
            ONCE(1);
            return shown(c, &r->ts);
        }
        break;
    case 'u':
        if (is_lit(k, "uuid")) {
            ONCE(2);
            return id_value(c, &r->uuid);
        }
        break;
    case 'p':
        if (is_lit(k, "parentUuid")) {
            ONCE(3);
            return id_value(c, &r->parent);
        }
        break;
    case 'l':
        if (is_lit(k, "logicalParentUuid")) {
            ONCE(4);
            return id_value(c, &r->logical);
        }
        break;
    case 's':
        if (is_lit(k, "subtype")) {
            ONCE(5);
            Str s = {NULL, -1, 0};
            int rc = id_value(c, &s);
            r->boundary = is_lit(s, "compact_boundary");
            return rc;
        }
        if (is_lit(k, "sessionId")) {
            ONCE(6);
            return id_value(c, &r->sid);
        }
        break;
    case 'i':
        if (is_lit(k, "isSidechain")) {
            ONCE(7);
            if (*c->p == 't') {
                r->side = 1;
                return literal(c, "true", 4, Py_True, NULL);
            }
            return value(c, 0, NULL, NULL);
        }
        if (is_lit(k, "isCompactSummary")) {
            ONCE(8);
            return flag_value(c, &r->summary);
        }
        if (is_lit(k, "isMeta")) {
            ONCE(9);
            return flag_value(c, &r->meta);
        }
        if (is_lit(k, "isApiErrorMessage")) {
            ONCE(10);
            return flag_value(c, &r->api_error);
        }
        break;
    case 'v':
        if (is_lit(k, "version")) {
            ONCE(11);
            return shown(c, &r->version);
        }
        break;
    case 'c':
        if (is_lit(k, "cwd")) {
            ONCE(12);
            return shown(c, &r->cwd);
        }
        if (is_lit(k, "compactMetadata")) {
            ONCE(13);
            return members(c, compact_member, x);
        }
        break;
    case 'g':
        if (is_lit(k, "gitBranch")) {
            ONCE(14);
            return shown(c, &r->branch);
        }
        break;
    case 'e':
        if (is_lit(k, "entrypoint")) {
            ONCE(15);
            if (*c->p == '"') {
                r->entry = 1;
                return shown(c, &r->entry_s);
            }
            if (*c->p == 'n')
                return literal(c, "null", 4, Py_None, NULL);
            return NO;
        }
        break;
    case 'r':
        if (is_lit(k, "requestId")) {
            ONCE(16);
            return text_value(c, &r->rid, 1);
        }
        break;
    case 'm':
        if (is_lit(k, "message")) {
            ONCE(17);
            r->has_msg = 1;
            return members(c, message_member, x);
        }
        break;
    case 'a':
        if (is_lit(k, "attachment")) {
            ONCE(18);
            return attachment_value(c, r);
        }
        break;
    }
    return value(c, 0, NULL, NULL);
}

static const char *KNOWN[] = {"user", "assistant", "system", "attachment", "summary", "api-request",
                              "api-request-shape", "api-request-blob", "tools-used", "cost-state",
                              "queue-operation", "last-prompt", "mode", "atis-latch", "file-history-snapshot",
                              "custom-title", "tag", "agent-name", "pr-link", "worktree-state", "progress",
                              "permission-mode", NULL};

static int type_code(Str t) {
    if (is_lit(t, "user"))
        return T_USER;
    if (is_lit(t, "assistant"))
        return T_ASSISTANT;
    if (is_lit(t, "system"))
        return T_SYSTEM;
    if (is_lit(t, "attachment"))
        return T_ATTACHMENT;
    if (is_lit(t, "api-request"))
        return T_APIREQ;
    for (int i = 4; KNOWN[i]; i++)
        if (is_lit(t, KNOWN[i]))
            return T_META;
    return T_UNKNOWN;
}

/* Whether a synthetic API error line may say "prompt is too long" (`claude_code._TOO_LONG`): its
 * bytes hold "long" in any case, or an escape that may spell it. */
static int may_overflow(const unsigned char *s, const unsigned char *e) {
    for (const unsigned char *p = s; p + 4 <= e; p++) {
        if (p[0] == '\\' && p[1] == 'u')
            return 1;
        if ((p[0] | 0x20) == 'l' && (p[1] | 0x20) == 'o' && (p[2] | 0x20) == 'n' && (p[3] | 0x20) == 'g')
            return 1;
    }
    return 0;
}

/* One line into `r`: OK, NO (not sure: the ordinary way), ERR. Blank lines: r->type 0. */
static int read_line(const unsigned char *s, const unsigned char *e, Rec *r, Limits *lim) {
    const unsigned char *q = s;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n' || *q == '\x0b' || *q == '\x0c'))
        q++;
    if (q == e)
        return OK; /* a blank line (bytes.strip's whitespace): nothing to read */
    Prefix prefix = {{0}, 0, 0, 0};
    Ctx x = {r, lim, &prefix, 1}; /* (every line's prefix: only a user line's is read) */
    Cursor c = {s, e, 0};
    skip_ws(&c);
    int rc = members(&c, line_member, &x);
    if (rc != OK)
        return rc;
    skip_ws(&c);
    if (c.p != c.end || r->type_s.n <= 0)
        return NO;
    r->type = type_code(r->type_s);
    int conv = r->type >= T_USER && r->type <= T_ATTACHMENT;
    if (conv && r->uuid.n < 0)
        return NO;
    r->rendered = r->rendered && r->type == T_ATTACHMENT; /* (a message of its own, role other) */
    if ((r->type == T_USER || r->type == T_ASSISTANT) && !r->has_msg)
        return NO;
    r->synthetic = r->type == T_ASSISTANT && is_lit(r->model, "<synthetic>");
    if (r->synthetic && r->api_error && may_overflow(s, e))
        return NO; /* (a "prompt is too long" reply is an overflow: the ordinary way) */
    if (r->type == T_USER) {
        r->summary = r->summary || starts(&prefix, "This session is being continued from a previous conversation");
        static const char *commands[] = {"<command-name>", "<command-message>", "<command-args>",
                                         "<local-command-stdout>", "<local-command-stderr>",
                                         "<local-command-caveat>", NULL};
        for (int i = 0; commands[i] && !r->command; i++)
            r->command = starts(&prefix, commands[i]);
    }
    return OK;
}

/* -- a file's lines ------------------------------------------------------------------------------ */
int read_file(const unsigned char *data, Py_ssize_t len, Py_ssize_t limit, Limits *lim, File *f) {
    const unsigned char *p = data, *end = data + len;
    for (int n = 1; p < end; n++) {
        const unsigned char *nl = memchr(p, '\n', end - p), *stop = nl ? nl : end;
        if (limit > 0 && stop - p > limit)
            return NO;
        if (f->n == f->cap) {
            int cap = f->cap ? f->cap * 2 : 256;
            Rec *r = realloc(f->r, cap * sizeof *r);
            if (r == NULL)
                return ERR;
            f->r = r;
            f->cap = cap;
        }
        Rec *r = &f->r[f->n];
        memset(r, 0, sizeof *r);
        Str none = {NULL, -1, 0};
        r->type_s = r->uuid = r->parent = r->logical = r->sid = r->ts = r->version = r->cwd = r->branch = none;
        r->mid = r->rid = r->model = r->stop = r->entry_s = r->trigger = r->kept_list = r->head = r->tail = none;
        r->line = n;
        int rc = read_line(p, stop, r, lim);
        if (rc != OK)
            return rc;
        if (r->type)
            f->n++;
        p = stop + 1;
    }
    return OK;
}

PyObject *str_of(Str s) {
    if (s.n < 0)
        Py_RETURN_NONE;
    if (s.esc) { /* (its opening quote is the byte before it) */
        Cursor c = {s.s - 1, s.s + s.n + 1, 0};
        PyObject *out = NULL;
        return string_of(&c, &out, NULL, 0) == OK ? out : NULL;
    }
    return PyUnicode_DecodeUTF8((const char *)s.s, s.n, NULL);
}


int each_raw_string(Str list, int (*each)(void *ctx, Str s), void *ctx) {
    Cursor c = {list.s + 1, list.s + list.n, 0};
    for (;;) {
        skip_ws(&c);
        if (*c.p == ']')
            return OK;
        if (*c.p == '"') {
            Str u;
            if (raw_string(&c, &u) != OK)
                return NO;
            int rc = each(ctx, u);
            if (rc != OK)
                return rc;
        } else if (value(&c, 0, NULL, NULL) != OK) {
            return NO;
        }
        skip_ws(&c);
        if (*c.p == ',')
            c.p++;
    }
}

void claude_init(void) { claude_base_project_init(); }

