/* The loop of a span of plain requests in C: `walk_span(cols, n, nums, state...)`, the fast path of
 * `replay.walk_plain._span` (the rule, the fallback without this extension, and the tests' oracle;
 * `replay.walk_span` packs its columns once per grid and calls this once per span).
 *
 * It walks events from `n` while each is plain, as `_span` does: each request decided before anything
 * of it is applied (the check point before it, its truth against the window, the check point after
 * it), the same floats by the same operations in the same order (doubles; the ints it compares are
 * exact in a double, `replay.walk_span` checks that). The policy's `fires` is `count > T` or
 * `count >= T`, its `combine` last + terms, last + terms / 4 or last alone: `replay.walk_span` passes
 * them only when they are those functions. The recovery's calls are a column (whether the reply
 * clears it), the run's counters are returned, not set. It stops at the first event that is not
 * plain (the step's: `handoff` 0) or whose values it cannot take exactly (`handoff` 1: `_span` goes on
 * from it); it returns None, having done nothing, when the walk's state is not of the types it takes.
 * tests/replay/test_walk_span_native.py holds it equal to `_span`. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum { S_OK = 1, S_FIRST = 2, S_LAST = 4, S_SAFE = 8 };
enum { C_IDX, C_K, C_UAT, C_LO, C_OUT, C_PROMPT, C_FLAGS, C_CLEARS, C_WORK, C_WT, C_TERMS,
       C_IDX_OBJ, C_K_OBJ, C_IDS, C_STAMPS, C_OUT_OBJ, C_UAT_OBJ, C_PROMPT_OBJ, C_WORK_OBJ,
       C_POINT, C_CHECK, C_RECORDED, C_MODEL, N_COLS };

typedef struct {
    const long long *idx, *k, *uat, *lo, *out, *work, *terms;
    const double *prompt, *wt;
    const unsigned char *flags, *clears;
    Py_ssize_t nev, nwork;
    PyObject **idx_obj, **k_obj, **ids, **stamps, **out_obj, **uat_obj, **prompt_obj, **work_obj;
    PyTypeObject *point, *check;
    PyObject *recorded, *model;
} Cols;

/* The span's state, as `_span` keeps it in locals (and `_Counters`, `_ContextSum`). */
typedef struct {
    double T, W, limit, a_lo, a_hi, f_hi;
    int between, run_end, until_prompt, anchored, fires_ge, op;
    long long off_from; int has_off;
    long long resume, prefix_last;
    double kept, base, val; long long hi;              /* _ContextSum */
    int has_anchor; long long a0; double a1;
    int has_last; long long l0; double l1; long long last_lo;
    PyObject *pending; int thrash;
    PyObject *reqs, *checks, *ncomp;
    long long points, over, mid, output; double peak, billed;
    /* held: the newest request's point, until the check point after it is known */
    int has_held; Py_ssize_t h_j; PyObject *h_u; int h_same; PyObject *h_pc;
} State;

static int exact_float(PyObject *o, double *v) {
    if (!PyFloat_CheckExact(o)) return 0;
    *v = PyFloat_AS_DOUBLE(o);
    return 1;
}

static int exact_int(PyObject *o, long long lo, long long hi, long long *v) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    if (x < lo || x > hi) return 0;
    *v = x;
    return 1;
}

static const void *bytes_of(PyObject *o, Py_ssize_t n, Py_ssize_t size) {
    if (!PyBytes_CheckExact(o) || PyBytes_GET_SIZE(o) != n * size) return NULL;
    return PyBytes_AS_STRING(o);
}

static PyObject **list_of(PyObject *o, Py_ssize_t n) {
    if (!PyList_CheckExact(o) || PyList_GET_SIZE(o) < n) return NULL;
    return ((PyListObject *)o)->ob_item;
}

/* The packed columns (replay.walk_span.Columns.native); 0 when they are not as packed. */
static int read_cols(PyObject *t, Cols *c) {
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != N_COLS) return 0;
    PyObject **a = &PyTuple_GET_ITEM(t, 0);
    if (!PyBytes_CheckExact(a[C_FLAGS]) || !PyBytes_CheckExact(a[C_WT])) return 0;
    c->nev = PyBytes_GET_SIZE(a[C_FLAGS]) - 1;  /* and the sentinel */
    c->nwork = PyBytes_GET_SIZE(a[C_WT]) / 8;
    Py_ssize_t e = c->nev + 1, w = c->nwork;
    c->flags = (const unsigned char *)PyBytes_AS_STRING(a[C_FLAGS]);
    c->clears = bytes_of(a[C_CLEARS], e, 1);
    c->idx = bytes_of(a[C_IDX], e, 8); c->k = bytes_of(a[C_K], e, 8); c->uat = bytes_of(a[C_UAT], e, 8);
    c->lo = bytes_of(a[C_LO], e, 8); c->out = bytes_of(a[C_OUT], e, 8); c->prompt = bytes_of(a[C_PROMPT], e, 8);
    c->work = bytes_of(a[C_WORK], w, 8); c->wt = bytes_of(a[C_WT], w, 8);
    c->terms = a[C_TERMS] == Py_None ? NULL : bytes_of(a[C_TERMS], w + 1, 8);
    if (!c->clears || !c->idx || !c->k || !c->uat || !c->lo || !c->out || !c->prompt || !c->work || !c->wt
        || (a[C_TERMS] != Py_None && !c->terms))
        return 0;
    c->idx_obj = list_of(a[C_IDX_OBJ], c->nev); c->k_obj = list_of(a[C_K_OBJ], c->nev);
    c->ids = list_of(a[C_IDS], c->nev); c->stamps = list_of(a[C_STAMPS], c->nev);
    c->out_obj = list_of(a[C_OUT_OBJ], c->nev); c->uat_obj = list_of(a[C_UAT_OBJ], c->nev);
    c->prompt_obj = list_of(a[C_PROMPT_OBJ], c->nev); c->work_obj = list_of(a[C_WORK_OBJ], w);
    if (!c->idx_obj || !c->k_obj || !c->ids || !c->stamps || !c->out_obj || !c->uat_obj || !c->prompt_obj
        || !c->work_obj || !PyType_Check(a[C_POINT]) || !PyType_Check(a[C_CHECK]))
        return 0;
    c->point = (PyTypeObject *)a[C_POINT]; c->check = (PyTypeObject *)a[C_CHECK];
    if (!PyType_IsSubtype(c->point, &PyTuple_Type) || !PyType_IsSubtype(c->check, &PyTuple_Type)) return 0;
    c->recorded = a[C_RECORDED]; c->model = a[C_MODEL];
    return 1;
}

/* tuple.__new__(type, items): a tuple subclass's instance holding new references to `items`. */
static PyObject *make(PyTypeObject *type, PyObject **items, Py_ssize_t n) {
    PyObject *o = type->tp_alloc(type, n);
    if (o == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(o, i, items[i]);
    }
    return o;
}

/* `_ContextSum.at`: the truth model's running sum of the context before work position `upto`. */
static double ctx_at(State *s, const Cols *c, long long upto) {
    long long hi = upto > s->resume ? upto : s->resume;
    long long c_hi = s->hi;
    double c_val = s->val;
    if (c_hi > hi) { c_hi = s->resume; c_val = s->kept; }
    while (c_hi < hi) c_val += c->wt[c_hi++];
    s->hi = c_hi; s->val = c_val;
    return s->base + c_val;
}

/* anchor + reduce(add, wt[a:b], 0.0) */
static double anchor_sum(const Cols *c, double a1, long long a, long long b) {
    double acc = 0.0;
    for (long long p = a; p < b; p++) acc += c->wt[p];
    return a1 + acc;
}

static double combine(int op, double last, long long terms) {
    if (op == 0) return last + (double)terms;
    if (op == 1) return last + (double)terms / 4.0;
    return last;
}

/* Whether the policy compacts at count `x` and it is not switched off before work position `upto`. */
static int fires_at(const State *s, const Cols *c, double x, long long upto) {
    if (!(s->fires_ge ? x >= s->T : x > s->T)) return 0;
    return !(s->has_off && (upto >= c->nwork || c->work[upto] >= s->off_from));
}

static int flush_held(State *s, const Cols *c) {
    if (!s->has_held) return 0;
    Py_ssize_t j = s->h_j;
    PyObject *items[10] = {c->idx_obj[j], c->ids[j], s->h_u, s->h_same ? c->recorded : c->model,
                           s->h_pc ? s->h_pc : Py_None, Py_False, c->out_obj[j], c->stamps[j], s->ncomp,
                           s->h_same ? Py_True : Py_False};
    PyObject *pt = make(c->point, items, 10);
    s->has_held = 0;
    Py_CLEAR(s->h_u);
    Py_CLEAR(s->h_pc);
    if (pt == NULL) return -1;
    int r = PyList_Append(s->reqs, pt);
    Py_DECREF(pt);
    return r;
}

/* `_Counters.check`: a check point that does not fire. */
static int check(State *s, const Cols *c, double truth, double x, long long upto) {
    s->points++;
    if (truth > s->peak) s->peak = truth;
    int over = truth > s->T;
    if (s->pending != Py_None) {
        if (over) s->thrash = 1;
        s->pending = Py_None;
    }
    if (over) s->over++;
    PyObject *cobj = PyFloat_FromDouble(x);
    if (cobj == NULL) return -1;
    Py_ssize_t nreq = PyList_GET_SIZE(s->reqs);
    if (s->has_held) {
        if (s->h_pc == NULL) { Py_INCREF(cobj); s->h_pc = cobj; }
        nreq += 1;
    } else if (nreq) {
        PyObject *last = PyList_GET_ITEM(s->reqs, nreq - 1);
        if (PyTuple_GET_ITEM(last, 4) == Py_None) {  /* reqs[-1]._replace(policy_count=c) */
            PyObject *items[10];
            for (int i = 0; i < 10; i++) items[i] = PyTuple_GET_ITEM(last, i);
            items[4] = cobj;
            PyObject *pt = make(c->point, items, 10);
            if (pt == NULL || PyList_SetItem(s->reqs, nreq - 1, pt) < 0) { Py_DECREF(cobj); return -1; }
        }
    }
    PyObject *truth_obj = PyFloat_FromDouble(truth), *nobj = PyLong_FromSsize_t(nreq), *at = NULL;
    if (upto > 0 && c->nwork) {
        at = c->work_obj[(upto < c->nwork ? upto : c->nwork) - 1];
        Py_INCREF(at);
    } else
        at = PyLong_FromLong(-1);
    PyObject *pt = NULL;
    if (truth_obj && nobj && at) {
        PyObject *items[4] = {at, cobj, truth_obj, nobj};
        pt = make(c->check, items, 4);
    }
    Py_DECREF(cobj); Py_XDECREF(truth_obj); Py_XDECREF(nobj); Py_XDECREF(at);
    if (pt == NULL) return -1;
    int r = PyList_Append(s->checks, pt);
    Py_DECREF(pt);
    return r;
}

/* The state from the arguments (see `replay.walk_span.native_span`); 0: not of the types taken. */
static int read_state(PyObject *const *a, const Cols *c, State *s) {
    PyObject *nums = a[2];
    if (!PyTuple_CheckExact(nums) || PyTuple_GET_SIZE(nums) != 6) return 0;
    double *d[6] = {&s->T, &s->W, &s->limit, &s->a_lo, &s->a_hi, &s->f_hi};
    for (int i = 0; i < 6; i++)
        if (!exact_float(PyTuple_GET_ITEM(nums, i), d[i])) return 0;
    long long flags, op, big = (1LL << 53);
    if (!exact_int(a[3], 0, 31, &flags) || !exact_int(a[4], -1, 2, &op)) return 0;
    s->op = (int)op;
    s->between = flags & 1; s->run_end = (flags >> 1) & 1; s->until_prompt = (flags >> 2) & 1;
    s->anchored = (flags >> 3) & 1; s->fires_ge = (flags >> 4) & 1;
    if (s->op >= 0 && c->terms == NULL) return 0;
    s->has_off = a[5] != Py_None;
    if (s->has_off && !exact_int(a[5], -big, big, &s->off_from)) return 0;
    if (!exact_int(a[6], 0, c->nwork, &s->resume) || !exact_int(a[7], -big, big, &s->prefix_last)) return 0;
    if (!exact_float(a[8], &s->kept) || !exact_float(a[9], &s->base) || !exact_int(a[10], 0, c->nwork, &s->hi)
        || !exact_float(a[11], &s->val))
        return 0;
    PyObject *anchor = a[12], *last = a[13];
    s->has_anchor = anchor != Py_None;
    if (s->has_anchor && !(PyTuple_CheckExact(anchor) && PyTuple_GET_SIZE(anchor) == 2
                           && exact_int(PyTuple_GET_ITEM(anchor, 0), 0, c->nwork, &s->a0)
                           && exact_float(PyTuple_GET_ITEM(anchor, 1), &s->a1)))
        return 0;
    s->has_last = last != Py_None;
    if (s->has_last && !(PyTuple_CheckExact(last) && PyTuple_GET_SIZE(last) == 2
                         && exact_int(PyTuple_GET_ITEM(last, 0), -big, big, &s->l0)
                         && exact_float(PyTuple_GET_ITEM(last, 1), &s->l1)))
        return 0;
    if (!exact_int(a[14], 0, c->nwork, &s->last_lo)) return 0;
    s->pending = a[15];
    s->reqs = a[16]; s->checks = a[17]; s->ncomp = a[18];
    if (!PyList_CheckExact(s->reqs) || !PyList_CheckExact(s->checks)) return 0;
    Py_ssize_t nr = PyList_GET_SIZE(s->reqs);
    if (nr && !(Py_IS_TYPE(PyList_GET_ITEM(s->reqs, nr - 1), c->point)
                && PyTuple_GET_SIZE(PyList_GET_ITEM(s->reqs, nr - 1)) == 10))
        return 0;
    if (!exact_float(a[19], &s->peak) || !exact_float(a[20], &s->billed)
        || !exact_int(a[21], -(1LL << 62), 1LL << 62, &s->output))
        return 0;
    s->points = s->over = s->mid = 0;
    s->thrash = 0;
    s->has_held = 0; s->h_u = s->h_pc = NULL;
    return 1;
}

static PyObject *pair(PyObject *a, PyObject *b) { return PyTuple_Pack(2, a, b); }

PyObject *walk_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 22) {
        PyErr_SetString(PyExc_TypeError, "walk_span takes 22 arguments (see replay.walk_span)");
        return NULL;
    }
    Cols c;
    State s;
    long long n;
    if (!read_cols(args[0], &c) || !exact_int(args[1], 0, 1LL << 40, &n) || n > c.nev || !read_state(args, &c, &s))
        Py_RETURN_NONE;
    Py_ssize_t j = (Py_ssize_t)n, first_j = -1, reply_j = -1, anchor_j = -1, last_j = -1;
    int handoff = 0, cleared = 0, reply_same = 0;
    PyObject *reply_u = NULL, *anchor_u = NULL;
    const unsigned char *flags = c.flags;
    for (;; j++) {
        unsigned f = flags[j];
        if (!(f & S_OK)) break;
        if (!(f & S_SAFE)) { handoff = 1; break; }
        long long k = c.k[j];
        double i = (double)c.idx[j];
        int first = (f & S_FIRST) != 0;
        if (i > s.limit || (first && s.until_prompt)) break;
        int before = 0;
        double b_truth = 0, b_c = 0;
        if (s.between && !first) {  /* `check` before the call: its count and truth, if it does not fire */
            if (s.op < 0 || !s.has_last || s.prefix_last > s.l0) break;
            long long lo = s.last_lo > s.resume ? s.last_lo : s.resume;
            b_c = combine(s.op, s.l1, k > lo ? c.terms[k] - c.terms[lo] : 0);
            if (fires_at(&s, &c, b_c, k)) break;
            double at = k ? (double)c.work[k - 1] : 0;
            if (s.has_anchor && s.a0 <= k && s.anchored && ((s.a_lo < at && at <= s.a_hi) || at <= s.f_hi))
                b_truth = anchor_sum(&c, s.a1, s.a0, k);
            else
                b_truth = ctx_at(&s, &c, k);
            before = 1;
        }
        int same = (s.a_lo < i && i <= s.a_hi) || i <= s.f_hi;
        double u = same ? c.prompt[j] : ctx_at(&s, &c, k);
        if (u > s.W) break;
        long long out = c.out[j], total;
        if (__builtin_add_overflow(s.output, out, &total) || total > (1LL << 62) || total < -(1LL << 62)) {
            handoff = 1;
            break;
        }
        long long nl0 = c.uat[j];
        double nl1 = u + (double)out;
        int na = same ? 1 : s.has_anchor;
        long long na0 = same ? k : s.a0;
        double na1 = same ? u : s.a1;
        int after = 0;
        double a_truth = 0, a_c = 0;
        if (s.run_end && (f & S_LAST)) {
            if (s.op < 0 || s.prefix_last > nl0) break;
            long long lo = c.lo[j] > s.resume ? c.lo[j] : s.resume;
            a_c = combine(s.op, nl1, k + 1 > lo ? c.terms[k + 1] - c.terms[lo] : 0);
            if (fires_at(&s, &c, a_c, k + 1)) break;
            if (na && na0 <= k + 1 && s.anchored && same)
                a_truth = anchor_sum(&c, na1, na0, k + 1);
            else
                a_truth = ctx_at(&s, &c, k + 1);
            after = 1;
        }
        /* Plain: applied as the step applies it. */
        if (first) { cleared = 1; first_j = j; }
        if (before && check(&s, &c, b_truth, b_c, k) < 0) goto error;
        if (u > s.T && !first) s.mid++;
        if (c.clears[j]) cleared = 1;
        if (u > s.peak) s.peak = u;
        s.billed += u;
        s.output = total;
        if (flush_held(&s, &c) < 0) goto error;
        PyObject *uobj = same ? c.prompt_obj[j] : PyFloat_FromDouble(u);
        if (uobj == NULL) goto error;
        if (same) Py_INCREF(uobj);
        s.has_held = 1; s.h_j = j; s.h_u = uobj; s.h_same = same;
        if (same) {
            anchor_j = j;
            Py_INCREF(uobj);
            Py_XSETREF(anchor_u, uobj);
        }
        s.has_anchor = na; s.a0 = na0; s.a1 = na1;
        s.has_last = 1; s.l0 = nl0; s.l1 = nl1; last_j = j; s.last_lo = c.lo[j];
        reply_j = j;
        reply_same = same;
        Py_INCREF(uobj);
        Py_XSETREF(reply_u, uobj);
        if (after && check(&s, &c, a_truth, a_c, k + 1) < 0) goto error;
    }
    if (flush_held(&s, &c) < 0) goto error;
    PyObject *anchor = NULL, *last = NULL, *reply = NULL, *res = NULL;
    if (anchor_j >= 0)
        anchor = pair(c.k_obj[anchor_j], anchor_u);
    else {
        anchor = args[12];
        Py_INCREF(anchor);
    }
    if (last_j >= 0) {
        PyObject *l1 = PyFloat_FromDouble(s.l1);
        last = l1 ? pair(c.uat_obj[last_j], l1) : NULL;
        Py_XDECREF(l1);
    } else {
        last = args[13];
        Py_INCREF(last);
    }
    if (reply_j >= 0)
        reply = PyTuple_Pack(4, c.idx_obj[reply_j], reply_u, c.out_obj[reply_j],
                             reply_same ? Py_True : Py_False);
    else {
        reply = Py_None;
        Py_INCREF(reply);
    }
    if (anchor && last && reply)
        res = Py_BuildValue("(niOOLdLLLddLinOOi)", j, handoff, anchor, last, s.hi, s.val, s.points, s.over, s.mid,
                            s.peak, s.billed, s.output, cleared, first_j, reply, s.pending, s.thrash);
    Py_XDECREF(anchor); Py_XDECREF(last); Py_XDECREF(reply);
    Py_XDECREF(reply_u); Py_XDECREF(anchor_u);
    return res;
error:
    Py_XDECREF(s.h_u); Py_XDECREF(s.h_pc);
    Py_XDECREF(reply_u); Py_XDECREF(anchor_u);
    return NULL;
}
