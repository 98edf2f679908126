/* One Claude Code file's paths (`claude_paths.record_paths`) and their messages and compactions
 * (`claude_code._Builder`), and the main file's settings. */
#include "_claude.h"

static PyObject *count_or_none(int has, long long v) {
    if (!has)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static int trigger_of(const Rec *b) {
    if (is_lit(b->trigger, "manual"))
        return TR_MANUAL;
    if (is_lit(b->trigger, "auto"))
        return b->rejected ? TR_OVERFLOW : TR_THRESHOLD;
    return TR_UNKNOWN;
}

/* The message index of uuid `u` on the path being built (`by_uuid`), -1. */
static int by_uuid(FileWork *w, Str u, int pstamp) {
    int i = map_get(&w->nodes, u, -1);
    if (i < 0)
        return -1;
    Rec *r = &w->f->r[i];
    return r->pstamp == pstamp ? r->msg : -1;
}

typedef struct {
    FileWork *w;
    int pstamp;
    Ints *idx;
} Kept;

static int kept_one(void *ctx, Str u) {
    Kept *k = ctx;
    int j = by_uuid(k->w, u, k->pstamp);
    return j >= 0 && push(k->idx, j) < 0 ? ERR : OK;
}

/* `_Builder._kept`: the kept messages' indices (sorted, none unsent) as a list. */
static PyObject *kept_of(FileWork *w, const Rec *b, int pstamp, const unsigned char *unsent) {
    Ints idx = {NULL, 0, 0};
    PyObject *out = NULL;
    if (b->kept_list.n > 0) {
        Kept k = {w, pstamp, &idx};
        int rc = each_raw_string(b->kept_list, kept_one, &k);
        if (rc == ERR)
            goto nomem;
        if (rc != OK)
            goto bail; /* (an escaped uuid, or a value the scanner is not sure of) */
    }
    if (idx.n == 0) {
        Str empty = {(const unsigned char *)"", 0};
        int a = by_uuid(w, b->head.n > 0 ? b->head : empty, pstamp);
        int z = by_uuid(w, b->tail.n > 0 ? b->tail : empty, pstamp);
        if (a >= 0 && z >= 0)
            for (int j = a; j <= z; j++)
                if (push(&idx, j) < 0)
                    goto nomem;
    }
    qsort(idx.v, idx.n, sizeof(int), cmp_int);
    if ((out = PyList_New(0)) == NULL)
        goto done;
    for (int i = 0; i < idx.n; i++) {
        if ((i > 0 && idx.v[i] == idx.v[i - 1]) || unsent[idx.v[i]])
            continue;
        PyObject *x = PyLong_FromLong(idx.v[i]);
        if (x == NULL || PyList_Append(out, x) < 0) {
            Py_XDECREF(x);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(x);
    }
    goto done;
nomem:
    PyErr_NoMemory();
    goto done;
bail:
    out = Py_None;
    Py_INCREF(out);
done:
    free(idx.v);
    return out;
}

/* One compaction as (index, line, trigger, pre, post, kept, id, timestamp); Py_None: not sure. */
static PyObject *compaction(FileWork *w, Rec *b, int index, int pstamp, const unsigned char *unsent, int legacy) {
    if (legacy)
        return Py_BuildValue("(iiiOONNN)", index, b->line, TR_UNKNOWN, Py_None, Py_None, PyList_New(0),
                             str_of(b->uuid), str_of(b->ts));
    b->compacted = 1;
    PyObject *kept = kept_of(w, b, pstamp, unsent);
    if (kept == NULL || kept == Py_None)
        return kept;
    return Py_BuildValue("(iiiNNNNN)", index, b->line, trigger_of(b), count_or_none(b->has_pre, b->pre),
                         count_or_none(b->has_post, b->post), kept, str_of(b->uuid), str_of(b->ts));
}

/* Append a new reference to `list` (stolen); -1 on error (NULL `x` included). */
static int append_new(PyObject *list, PyObject *x) {
    if (x == NULL)
        return -1;
    int r = PyList_Append(list, x);
    Py_DECREF(x);
    return r;
}

/* `_Builder` over one path's records (indices into the file, in order): appends its tuple to
 * w->paths. NO: not sure. */
static int build_path(FileWork *w, Ints *chain, int side, int pstamp) {
    File *f = w->f;
    int n = chain->n, nmsg = 0, synthetic = 0, no_usage = 0, pending = -1, ncomp = 0, rc = ERR;
    unsigned char *unsent = calloc(n + 1, 1);
    Map seen = {0};
    PyObject *lines = PyList_New(0), *uuids = PyList_New(0), *roles = PyList_New(0), *comps = PyList_New(0), *t = NULL;
    if (unsent == NULL || lines == NULL || uuids == NULL || roles == NULL || comps == NULL || map_init(&seen, n + 1) < 0)
        goto done;
    for (int ci = 0; ci < n; ci++) {
        Rec *r = &f->r[chain->v[ci]];
        int role, index = nmsg;
        if (r->type == T_ASSISTANT) {
            role = R_ASSISTANT;
        } else if (r->type == T_USER) {
            role = r->summary ? R_SUMMARY : (r->meta || r->command) ? R_OTHER : r->tool ? R_TOOL : R_USER;
        } else if (r->rendered) {
            role = R_OTHER;
        } else {
            if (r->type == T_SYSTEM && r->boundary) {
                if (pending >= 0) {
                    if ((t = compaction(w, &f->r[pending], nmsg, pstamp, unsent, 0)) == NULL || t == Py_None)
                        goto bail;
                    if (PyList_Append(comps, t) < 0)
                        goto done;
                    Py_CLEAR(t);
                    ncomp++;
                }
                pending = chain->v[ci];
            }
            continue; /* (an attachment here is one not rendered: no message) */
        }
        if (append_new(lines, PyLong_FromLong(r->line)) < 0 || append_new(uuids, str_of(r->uuid)) < 0 ||
            append_new(roles, PyLong_FromLong(role)) < 0)
            goto done;
        r->pstamp = pstamp;
        r->msg = index;
        nmsg++;
        if (role == R_ASSISTANT) {
            if (r->synthetic) {
                unsent[index] = 1;
                synthetic++;
                continue;
            }
            Str key = r->mid.n > 0 ? r->mid : r->rid.n > 0 ? r->rid : r->uuid;
            if (map_put(&seen, key, 1))
                continue;
            long long u[4], hour;
            if (r->resp >= 0) {
                memcpy(u, w->S->resp[r->resp].u, sizeof u);
            } else if (!usage_of(r, u, &hour)) {
                no_usage++;
                continue;
            }
            long long prompt = u[0] + u[1] + u[2];
            if (prompt > w->largest)
                w->largest = prompt;
        } else if (role == R_SUMMARY) {
            if (pending >= 0 || (ncomp == 0 && index == 0)) {
                t = pending >= 0 ? compaction(w, &f->r[pending], index, pstamp, unsent, 0)
                                 : compaction(w, r, index, pstamp, unsent, 1);
                if (t == NULL || t == Py_None)
                    goto bail;
                if (PyList_Append(comps, t) < 0)
                    goto done;
                Py_CLEAR(t);
                ncomp++;
                pending = -1;
            }
        }
    }
    if (pending >= 0) {
        if ((t = compaction(w, &f->r[pending], nmsg, pstamp, unsent, 0)) == NULL || t == Py_None)
            goto bail;
        if (PyList_Append(comps, t) < 0)
            goto done;
        Py_CLEAR(t);
    }
    Rec *leaf = n ? &f->r[chain->v[n - 1]] : NULL;
    t = Py_BuildValue("(NOOOOOii)", leaf ? str_of(leaf->uuid) : (Py_INCREF(Py_None), Py_None),
                      side ? Py_True : Py_False, lines, uuids, roles, comps, synthetic, no_usage);
    if (t == NULL || PyList_Append(w->paths, t) < 0)
        goto done;
    rc = OK;
    goto done;
bail:
    rc = t == NULL ? ERR : NO;
done:
    if (t == Py_None)
        Py_DECREF(t);
    else
        Py_XDECREF(t);
    Py_XDECREF(lines);
    Py_XDECREF(uuids);
    Py_XDECREF(roles);
    Py_XDECREF(comps);
    free(unsent);
    map_free(&seen);
    return rc;
}

/* `record_paths` and a `_Builder` per path. */
int file_paths(FileWork *w) {
    File *f = w->f;
    Ints chain = {NULL, 0, 0};
    int rc = OK, main_leaf = -1;
    for (int i = 0; i < f->n; i++)
        if (talk(&f->r[i]) && !f->r[i].side)
            main_leaf = i;
    if (main_leaf >= 0) {
        if ((rc = walk(w, main_leaf, &chain)) != OK || (rc = side_results(w, &chain)) != OK ||
            (rc = build_path(w, &chain, 0, ++w->S->stamp)) != OK)
            goto done;
    }
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (!talk(r) || !r->side)
            continue;
        int leaf = 1, nkids = 0;
        for (int k = r->kid; k >= 0; k = f->r[k].next_kid)
            if (talk(&f->r[k]))
                leaf = 0;
        if (!leaf)
            continue;
        int p = r->parent.n > 0 ? map_get(&w->nodes, r->parent, -1) : -1;
        if (p >= 0)
            for (int k = f->r[p].kid; k >= 0; k = f->r[k].next_kid)
                nkids++;
        if (r->tool && nkids >= 2)
            continue; /* a parallel tool result: on its sibling's path */
        if ((rc = walk(w, i, &chain)) != OK || (rc = side_results(w, &chain)) != OK ||
            (rc = build_path(w, &chain, 1, ++w->S->stamp)) != OK)
            goto done;
    }
done:
    free(chain.v);
    return rc;
}

/* The main file's settings and its boundaries on no path:
 * (version, session id, cwd, git branch, entrypoint, boundaries, off-path compactions). */
PyObject *file_facts(FileWork *w) {
    File *f = w->f;
    Rec *first = NULL;
    Str version = {NULL, -1}, sid = {NULL, -1};
    int boundaries = 0;
    PyObject *off = PyList_New(0);
    if (off == NULL)
        return NULL;
    for (int i = 0; i < f->n; i++) {
        Rec *r = &f->r[i];
        if (version.n < 0 && r->version.n > 0)
            version = r->version;
        if (sid.n < 0 && r->sid.n > 0)
            sid = r->sid;
        if (first == NULL && talk(r))
            first = r;
        if (r->type == T_SYSTEM && r->boundary) {
            boundaries++;
            if (!r->compacted) {
                PyObject *t = Py_BuildValue("(iiNNNN)", r->line, trigger_of(r), count_or_none(r->has_pre, r->pre),
                                            count_or_none(r->has_post, r->post), str_of(r->uuid), str_of(r->ts));
                if (t == NULL || PyList_Append(off, t) < 0) {
                    Py_XDECREF(t);
                    Py_DECREF(off);
                    return NULL;
                }
                Py_DECREF(t);
            }
        }
    }
    Str none = {NULL, -1, 0};
    return Py_BuildValue("(NNNNNiN)", str_of(version), str_of(sid), str_of(first ? first->cwd : none),
                         str_of(first ? first->branch : none), str_of(first && first->entry == 1 ? first->entry_s : none),
                         boundaries, off);
}
