/* One Claude Code file's tree (`claude_paths`): duplicated uuids, `_relink`, nodes and children,
 * `_walk` and the side results of parallel tool calls; and the byte-string maps and int lists the
 * parts share (_claude.h). */
#include "_claude.h"

/* -- a map of byte strings to ints (open addressing) ------------------------------------------ */
/* A key's hash, eight bytes at a time (a multiply and a shift per word; the tail as one word): the
 * byte-at-a-time FNV-1a it replaces was nine tenths of `map_slot`, 15% of claude_summary's time,
 * on 36-byte uuids. Only where a key starts probing depends on it: no map is iterated. */
static uint64_t hash(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    if (n > i)
        memcpy(&w, s + i, (size_t)(n - i));
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

int map_init(Map *m, int want) {
    int cap = 16;
    while (cap < want * 2)
        cap <<= 1;
    m->cap = cap;
    m->n = 0;
    m->k = calloc(cap, sizeof *m->k);
    m->len = calloc(cap, sizeof *m->len);
    m->v = calloc(cap, sizeof *m->v);
    return m->k && m->len && m->v ? 0 : -1;
}

void map_free(Map *m) {
    free(m->k);
    free(m->len);
    free(m->v);
}

/* The slot of key (s, n): its own, or the empty one where it would go. */
static int map_slot(const Map *m, const unsigned char *s, Py_ssize_t n) {
    uint64_t h = hash(s, n);
    int i = (int)(h & (m->cap - 1));
    while (m->k[i] != NULL && !(m->len[i] == n && memcmp(m->k[i], s, n) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

int map_get(const Map *m, Str key, int missing) {
    if (key.n < 0)
        return missing;
    int i = map_slot(m, key.s, key.n);
    return m->k[i] != NULL ? m->v[i] : missing;
}

/* Put (only when absent: the first wins); 1 when it was present. The map never fills: sized for all. */
int map_put(Map *m, Str key, int v) {
    int i = map_slot(m, key.s, key.n);
    if (m->k[i] != NULL)
        return 1;
    m->k[i] = key.s ? key.s : (const unsigned char *)"";
    m->len[i] = key.n;
    m->v[i] = v;
    m->n++;
    return 0;
}

int push(Ints *a, int x) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 64;
        int *v = realloc(a->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* `_walk` from the record at `leaf` into `chain` (root first). NO at `_written_before`'s case. */
int walk(FileWork *w, int leaf, Ints *chain) {
    File *f = w->f;
    int stamp = ++w->S->stamp, side = f->r[leaf].side;
    chain->n = 0;
    int cur = leaf;
    while (cur >= 0 && f->r[cur].stamp != stamp && f->r[cur].side == side) {
        Rec *r = &f->r[cur];
        r->stamp = stamp;
        if (push(chain, cur) < 0)
            return ERR;
        int boundary = r->boundary && r->type == T_SYSTEM;
        Str nxt = r->parent.n > 0 ? r->parent : boundary ? r->logical : (Str){NULL, -1};
        cur = map_get(&w->nodes, nxt, -1);
        if (cur < 0 && boundary && nxt.n > 0 && r->parent.n < 0)
            return NO;
    }
    for (int i = 0, j = chain->n - 1; i < j; i++, j--) {
        int x = chain->v[i];
        chain->v[i] = chain->v[j];
        chain->v[j] = x;
    }
    return OK;
}

/* `_with_side_results`: the chain plus the parallel tool calls' lines hanging off it, in file order. */
int side_results(FileWork *w, Ints *chain) {
    File *f = w->f;
    int stamp = ++w->S->stamp, n0 = chain->n;
    Ints todo = {NULL, 0, 0};
    for (int i = 0; i < chain->n; i++) {
        f->r[chain->v[i]].onstamp = stamp;
        if (push(&todo, chain->v[i]) < 0)
            return ERR;
    }
    while (todo.n) {
        Rec *r = &f->r[todo.v[--todo.n]];
        for (int k = r->kid; k >= 0; k = f->r[k].next_kid) {
            Rec *c = &f->r[k];
            if (c->onstamp == stamp || c->side != r->side)
                continue;
            int side_result = c->type == T_USER && c->tool && c->kid < 0;
            int sibling = c->type == T_ASSISTANT && c->mid.n >= 0 && r->type == T_ASSISTANT && r->mid.n >= 0 &&
                          c->mid.n == r->mid.n && memcmp(c->mid.s, r->mid.s, c->mid.n) == 0;
            if (side_result || sibling) {
                c->onstamp = stamp;
                if (push(chain, k) < 0 || push(&todo, k) < 0) {
                    free(todo.v);
                    return ERR;
                }
            }
        }
    }
    free(todo.v);
    if (chain->n > n0)
        qsort(chain->v, chain->n, sizeof(int), cmp_int);
    return OK;
}

static int cmp_diag(const void *a, const void *b) {
    return cmp_int(a, b); /* (an int[3] by its first: the line; lines are distinct) */
}

/* One file's tree: duplicated uuids (NO), `_relink`, nodes, children, `_rejected`; its notices
 * (line, kind 0 unknown type / 1 orphan, record) sorted by line into `diags` (int[3] triples). */
int tree(FileWork *w, Ints *diags) {
    File *f = w->f;
    Map all = {0}, types = {0};
    int rc = ERR;
    if (map_init(&all, f->n + 1) < 0 || map_init(&w->nodes, f->n + 1) < 0 || map_init(&w->through, f->n + 1) < 0 ||
        map_init(&types, 64) < 0)
        goto done;
    int last = 0;
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        r->kid = r->kid_last = r->next_kid = -1;
        if (r->uuid.n > 0 && map_put(&all, r->uuid, i)) {
            rc = NO; /* a duplicated uuid: the ordinary way says which line is kept */
            goto done;
        }
        if (r->uuid.n > 0)
            map_put(conv(r) ? &w->nodes : &w->through, r->uuid, i);
        if (r->type == T_UNKNOWN && !map_put(&types, r->type_s, i)) {
            int d[3] = {r->line, 0, i};
            for (int k = 0; k < 3; k++)
                if (push(diags, d[k]) < 0)
                    goto done;
        }
        if (r->type == T_SYSTEM && r->boundary) {
            r->rejected = last == T_APIREQ && r->uuid.n > 0;
            last = T_SYSTEM;
        } else if (r->type == T_APIREQ || talk(r)) {
            last = r->type;
        }
    }
    if (w->through.n)
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            if (!conv(r))
                continue;
            Str *ids[2] = {&r->parent, &r->logical};
            for (int k = 0; k < 2; k++) { /* `resolve`: through the non-conversation lines */
                int stamp = ++w->S->stamp;
                for (int j; ids[k]->n > 0 && (j = map_get(&w->through, *ids[k], -1)) >= 0 && f->r[j].stamp != stamp;) {
                    f->r[j].stamp = stamp;
                    *ids[k] = f->r[j].parent;
                }
            }
        }
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (!conv(r) || r->parent.n <= 0)
            continue;
        int p = map_get(&w->nodes, r->parent, -1);
        if (p < 0) {
            int d[3] = {r->line, 1, i};
            for (int k = 0; k < 3; k++)
                if (push(diags, d[k]) < 0)
                    goto done;
            continue;
        }
        if (f->r[p].kid < 0)
            f->r[p].kid = i;
        else
            f->r[f->r[p].kid_last].next_kid = i;
        f->r[p].kid_last = i;
    }
    qsort(diags->v, diags->n / 3, 3 * sizeof(int), cmp_diag);
    rc = OK;
done:
    map_free(&all);
    map_free(&types);
    return rc;
}
