/* Billing a Claude Code session (`claude_usage.billed_responses`), across its files: each response
 * once, by message id and request id, its final (largest) usage. */
#include "_claude.h"

int usage_of(const Rec *r, long long u[4], long long *hour) {
    long long t = 0;
    for (int i = 0; i < 4; i++)
        t += u[i] = r->u[i];
    if (!r->has_usage || t <= 0)
        return 0;
    *hour = r->hour < r->u[2] ? r->hour : r->u[2];
    return 1;
}

static Str key_of(Bytes *b, const Rec *r) {
    Py_ssize_t need = r->mid.n + 2 + (r->rid.n > 0 ? r->rid.n : 0);
    if (b->n + need > b->cap)
        return (Str){NULL, -2};
    unsigned char *o = b->buf + b->n;
    memcpy(o, r->mid.s, r->mid.n);
    o[r->mid.n] = 0;
    o[r->mid.n + 1] = r->rid.n >= 0 ? 1 : 0;
    if (r->rid.n > 0)
        memcpy(o + r->mid.n + 2, r->rid.s, r->rid.n);
    b->n += need;
    return (Str){o, need};
}

int bill(Session *S, Map *exact, Map *by_message, Bytes *keys) {
    for (int fi = 0; fi < S->nfiles; fi++) {
        File *f = &S->files[fi];
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            r->resp = -1;
            if (r->type != T_ASSISTANT || r->synthetic)
                continue;
            long long u[4], hour = 0;
            int has = usage_of(r, u, &hour);
            int mid = r->mid.n > 0;
            Str key = {NULL, -1};
            if (mid && (key = key_of(keys, r)).n == -2)
                return ERR;
            if (!has) {
                continue; /* (a tokenless line: joined to its response below) */
            }
            int k = -1;
            if (mid) {
                k = map_get(exact, key, -1);
                if (k < 0)
                    for (int j = map_get(by_message, r->mid, -1); j >= 0; j = S->resp[j].next_same) {
                        Rec *pick = &S->files[S->resp[j].pick_f].r[S->resp[j].pick_r];
                        if (r->side || pick->side) {
                            k = j;
                            break;
                        }
                    }
            }
            long long total = u[0] + u[1] + u[2] + u[3];
            if (k < 0) {
                k = S->nresp++;
                Response *x = &S->resp[k];
                x->first_f = x->pick_f = fi;
                x->first_r = x->pick_r = i;
                memcpy(x->u, u, sizeof u);
                x->hour = hour;
                x->total = total;
                x->next_same = -1;
                if (mid) {
                    map_put(exact, key, k);
                    int head = map_get(by_message, r->mid, -1);
                    if (head < 0)
                        map_put(by_message, r->mid, k);
                    else {
                        while (S->resp[head].next_same >= 0)
                            head = S->resp[head].next_same;
                        S->resp[head].next_same = k;
                    }
                }
            } else {
                Response *x = &S->resp[k];
                Rec *pick = &S->files[x->pick_f].r[x->pick_r];
                int replaces = r->side != pick->side ? pick->side : total > x->total;
                if (replaces) {
                    x->pick_f = fi;
                    x->pick_r = i;
                    memcpy(x->u, u, sizeof u);
                    x->hour = hour;
                    x->total = total;
                    if (mid)
                        map_put(exact, key, k); /* (setdefault) */
                }
            }
            r->resp = k;
        }
    }
    keys->n = 0; /* the tokenless lines, with the keys made again in the same order */
    for (int fi = 0; fi < S->nfiles; fi++) {
        File *f = &S->files[fi];
        for (int i = 0; i < f->n; i++) {
            Rec *r = &f->r[i];
            if (r->type != T_ASSISTANT || r->synthetic || r->mid.n <= 0)
                continue;
            long long u[4], hour;
            Str key = key_of(keys, r);
            if (!usage_of(r, u, &hour))
                r->resp = map_get(exact, key, -1);
        }
    }
    return OK;
}
PyObject *billed_list(Session *S) {
    PyObject *out = PyList_New(S->nresp);
    for (int k = 0; out != NULL && k < S->nresp; k++) {
        Response *x = &S->resp[k];
        Rec *first = &S->files[x->first_f].r[x->first_r], *pick = &S->files[x->pick_f].r[x->pick_r];
        Str id = pick->mid.n > 0 ? pick->mid : first->rid;
        PyObject *t = Py_BuildValue("(iNNNNLLLLL)", first->line, str_of(pick->model), str_of(first->ts), str_of(id),
                                    str_of(pick->stop), x->u[0], x->u[1], x->u[2], x->u[3], x->hour);
        if (t == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, t);
    }
    return out;
}
