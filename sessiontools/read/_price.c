/* sessiontools.read._native.price_sums: the loop of `replay.cost.price_run` in C (a grid prices every
 * run for its run record). `replay.cost._price_loop` is the rule, the fallback where this extension
 * is not built, and the oracle: tests/replay/test_cost_native.py holds the two to the same floats.
 *
 * price_sums(requests, compactions, recorded, rec_cost, memo, kinds, flags, ttl, hit, after_bust,
 *            input_floor, overhead, p_in, p_read, p_write, p_out, miss)
 *   -> (t_in, t_read, t_write, t_out, rejected, agent, bust list), or None: "not a case done here",
 *      and Python prices the run (`_price_loop`).
 * kinds = (RequestPoint, Classes, SimCompaction, TruthSource.RECORDED, iso_seconds);
 * flags = caching | write << 1 | priced << 2.
 *
 * Same floats by the same operations in the same order as the Python loop: IEEE doubles, each sum and
 * product as Python does it (left to right; no contraction into fused multiply-adds, see the pragmas),
 * `min(a, b)` as Python's (b < a ? b : a: the first of equals, NaN as it falls) and `max(a, b)`
 * (b > a ? b : a). Only exact types are taken: RequestPoint (10 fields), exact float truths, costs and
 * recorded classes (exact Classes of 4 exact floats), exact bool flags, exact int base indexes, outputs
 * and a compaction's tokens an exact float or int (both only ever turned into a double by Python:
 * float(v), x + v), epochs in [0, len(compactions)], a truth source that is TruthSource's or an exact
 * str, timestamps str or None, exact dicts, the cache model's, overhead and prices exact floats. Anything else says None before it changes anything Python would
 * not have changed at that point: the timestamp memo (`seconds`, shared by a path's runs) is read and
 * filled in the Python loop's order (a miss calls `iso_seconds` and stores what it gives, as
 * `cost._seconds` does), so after a None the Python loop finds the memo as it would have left it
 * itself, and ends with the same contents.
 *
 * point_sources (at the end): a run record's count of its requests' truth sources. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define NOT_HERE (-2) /* not a case done here: None, Python prices the run */
#define FAILED (-1)   /* an exception is set */

enum { F_BASE, F_ENTRY, F_TRUTH, F_SOURCE, F_COUNT, F_OVERFLOW, F_OUTPUT, F_STAMP, F_EPOCH, F_RECORDED, N_FIELDS };

typedef struct {
    PyObject *point_type, *classes_type, *comp_type, *recorded_source, *iso_seconds;
    PyObject *memo;
} Kinds;

/* An exact float's value into *out: 1, or 0 when `v` is anything else. */
static int exact_float(PyObject *v, double *out) {
    if (!PyFloat_CheckExact(v))
        return 0;
    *out = PyFloat_AS_DOUBLE(v);
    return 1;
}

/* An exact bool's truth: 0 or 1, NOT_HERE for anything else. */
static int exact_bool(PyObject *v) {
    return v == Py_True ? 1 : v == Py_False ? 0 : NOT_HERE;
}

/* `p.truth_source == TruthSource.RECORDED` for a TruthSource member or an exact str (str equality,
 * no Python code): 1 or 0; NOT_HERE for anything else. */
static int is_recorded_source(PyObject *v, PyObject *recorded) {
    if (v == recorded)
        return 1;
    if (Py_TYPE(v) != Py_TYPE(recorded) && !PyUnicode_CheckExact(v))
        return NOT_HERE;
    return PyUnicode_Compare(v, recorded) == 0;
}

/* `cost._seconds(memo, ts)` of a str or None timestamp: 1 with *out (*known 0 for None), NOT_HERE
 * for another key or a memo value that is no float or None, FAILED. */
static int seconds_of(Kinds *k, PyObject *ts, double *out, int *known) {
    if (ts != Py_None && !PyUnicode_CheckExact(ts))
        return NOT_HERE;
    PyObject *s = PyDict_GetItemWithError(k->memo, ts);
    if (s != NULL)
        Py_INCREF(s);
    else {
        if (PyErr_Occurred())
            return FAILED;
        if ((s = PyObject_CallOneArg(k->iso_seconds, ts)) == NULL)
            return FAILED;
        if (PyDict_SetItem(k->memo, ts, s) < 0) {
            Py_DECREF(s);
            return FAILED;
        }
    }
    int r = 1;
    if (s == Py_None)
        *known = 0;
    else if (exact_float(s, out))
        *known = 1;
    else
        r = NOT_HERE;
    Py_DECREF(s);
    return r;
}

/* An exact int's value in [0, len(compactions)] into *out: 1, or NOT_HERE. */
static int epoch_of(PyObject *v, Py_ssize_t ncomp, long *out) {
    if (!PyLong_CheckExact(v))
        return NOT_HERE;
    int overflow = 0;
    long e = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow || e < 0 || e > ncomp) {
        if (PyErr_Occurred())
            PyErr_Clear();
        return NOT_HERE;
    }
    *out = e;
    return 1;
}

/* The recorded classes of an exact Classes of 4 exact floats into c[4]: 1, or NOT_HERE. */
static int classes_of(PyObject *rec, PyObject *classes_type, double c[4]) {
    if (Py_TYPE(rec) != (PyTypeObject *)classes_type || PyTuple_GET_SIZE(rec) != 4)
        return NOT_HERE;
    for (int i = 0; i < 4; i++)
        if (!exact_float(PyTuple_GET_ITEM(rec, i), &c[i]))
            return NOT_HERE;
    return 1;
}

/* An exact float, or an exact int as the double `float(v)` and `x + v` (x a float) take it: int's
 * correctly rounded PyLong_AsDouble. 1 with *out, or NOT_HERE (a bool, a subclass, an int too large
 * for a float: Python's, which raises OverflowError for that). */
static int float_or_int(PyObject *v, double *out) {
    if (exact_float(v, out))
        return 1;
    if (!PyLong_CheckExact(v))
        return NOT_HERE;
    double d = PyLong_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NOT_HERE;
    }
    *out = d;
    return 1;
}

/* `rec_cost[bi] if bi in rec_cost` (the Python loop's two lookups): 1 with *out, 0 when absent,
 * NOT_HERE for a value that is no exact float, FAILED. */
static int recorded_cost_of(PyObject *rec_cost, PyObject *bi, double *out) {
    int has = PyDict_Contains(rec_cost, bi);
    if (has <= 0)
        return has < 0 ? FAILED : 0;
    PyObject *v = PyDict_GetItemWithError(rec_cost, bi);
    if (v == NULL)
        return PyErr_Occurred() ? FAILED : NOT_HERE;
    return exact_float(v, out) ? 1 : NOT_HERE;
}

/* run.compactions[i]'s `overhead + summary_tokens + kept_tokens` of an exact SimCompaction: each
 * added to a float (`overhead` is one), so an exact int is taken as float + int takes it (Claude
 * Code's compactions keep 0 tokens, an int). 1 with *out, NOT_HERE, FAILED. */
static int kept_prefix(PyObject *compactions, Py_ssize_t i, PyObject *comp_type, double overhead, double *out) {
    static PyObject *summary_name, *kept_name;
    if (summary_name == NULL && (summary_name = PyUnicode_InternFromString("summary_tokens")) == NULL)
        return FAILED;
    if (kept_name == NULL && (kept_name = PyUnicode_InternFromString("kept_tokens")) == NULL)
        return FAILED;
    if (i >= PyList_GET_SIZE(compactions))
        return NOT_HERE;
    PyObject *comp = PyList_GET_ITEM(compactions, i);
    if (Py_TYPE(comp) != (PyTypeObject *)comp_type)
        return NOT_HERE;
    PyObject *s = PyObject_GetAttr(comp, summary_name);
    if (s == NULL)
        return FAILED;
    PyObject *k = PyObject_GetAttr(comp, kept_name);
    if (k == NULL) {
        Py_DECREF(s);
        return FAILED;
    }
    double sv, kv;
    int r = float_or_int(s, &sv) == 1 && float_or_int(k, &kv) == 1 ? 1 : NOT_HERE;
    Py_DECREF(s);
    Py_DECREF(k);
    if (r == 1)
        *out = overhead + sv + kv;
    return r;
}

/* `bust[i] = v`: 1, or FAILED. */
static int set_float(PyObject *list, Py_ssize_t i, double v) {
    PyObject *f = PyFloat_FromDouble(v);
    return f != NULL && PyList_SetItem(list, i, f) == 0 ? 1 : FAILED;
}

typedef struct {
    int caching, write, priced;
    double ttl, hit, after_bust, input_floor, overhead, p_in, p_read, p_write, p_out, miss;
} Terms;

typedef struct {
    double t_in, t_read, t_write, t_out, rejected, agent;
} Sums;

/* The loop: `cost._price_loop`, line by line. 1 (sums and bust filled), NOT_HERE or FAILED. */
static int price_loop(PyObject *requests, PyObject *compactions, PyObject *recorded, PyObject *rec_cost,
                      Kinds *k, const Terms *t, Sums *sum, PyObject *bust) {
    Py_ssize_t ncomp = PyList_GET_SIZE(bust);
    PyObject *prev = NULL, *prev_seconds_of = NULL; /* strong references (Python's variables) */
    double prev_truth = 0.0, prev_seconds = 0.0;
    int prev_known = 0;
    long prev_epoch = 0;
    int r = 1;
    /* by index, the length read at each step: a list's iterator (a callback could change the list) */
    for (Py_ssize_t i = 0; r == 1 && i < PyList_GET_SIZE(requests); i++) {
        PyObject *p = PyList_GET_ITEM(requests, i);
        Py_INCREF(p);
        r = NOT_HERE;
        if (Py_TYPE(p) != (PyTypeObject *)k->point_type || PyTuple_GET_SIZE(p) != N_FIELDS)
            goto next;
        PyObject **f = &PyTuple_GET_ITEM(p, 0);
        double truth, c_in, c_read, c_write, c_out, cost = 0.0;
        int overflow = exact_bool(f[F_OVERFLOW]), in_context = exact_bool(f[F_RECORDED]), has_cost = 0;
        long epoch;
        if (overflow == NOT_HERE || !exact_float(f[F_TRUTH], &truth))
            goto next;
        if (overflow) {
            sum->rejected += truth;
            r = 1;
            goto next;
        }
        if (in_context == NOT_HERE || !PyLong_CheckExact(f[F_BASE]) || epoch_of(f[F_EPOCH], ncomp, &epoch) != 1)
            goto next;
        PyObject *rec = NULL;
        if (!in_context && (in_context = is_recorded_source(f[F_SOURCE], k->recorded_source)) == NOT_HERE)
            goto next;
        if (in_context) {
            rec = PyDict_GetItemWithError(recorded, f[F_BASE]); /* `recorded.get(p.base_index)` */
            if (rec == NULL && PyErr_Occurred()) {
                r = FAILED;
                goto next;
            }
            rec = rec == Py_None ? NULL : rec;
        }
        if (rec != NULL) {
            double c[4];
            if (classes_of(rec, k->classes_type, c) != 1)
                goto next;
            c_in = c[0], c_read = c[1], c_write = c[2], c_out = c[3];
            if (t->priced && (has_cost = recorded_cost_of(rec_cost, f[F_BASE], &cost)) < 0) {
                r = has_cost;
                goto next;
            }
        } else {
            if (float_or_int(f[F_OUTPUT], &c_out) != 1) /* float(p.output) */
                goto next;
            double read = 0.0;
            if (t->caching && prev != NULL) {
                if (prev_seconds_of != prev) {
                    int got = seconds_of(k, PyTuple_GET_ITEM(prev, F_STAMP), &prev_seconds, &prev_known);
                    if (got != 1) {
                        r = got;
                        goto next;
                    }
                    Py_INCREF(prev);
                    Py_XSETREF(prev_seconds_of, prev);
                }
                double t1;
                int known1 = 0, got = seconds_of(k, f[F_STAMP], &t1, &known1);
                if (got != 1) {
                    r = got;
                    goto next;
                }
                Py_INCREF(p);
                Py_XSETREF(prev_seconds_of, p);
                double t0 = prev_seconds;
                int known0 = prev_known;
                prev_seconds = t1, prev_known = known1;
                if (known0 && known1 && t1 - t0 > t->ttl)
                    read = 0.0;
                else if (epoch != prev_epoch)
                    read = t->after_bust;
                else
                    read = t->hit * prev_truth;
            }
            double m = truth < read ? truth : read; /* max(0.0, min(read, truth)) */
            read = m > 0.0 ? m : 0.0;
            double rest = truth - read;
            if (t->write) {
                c_in = t->input_floor < rest ? t->input_floor : rest; /* min(rest, input_floor) */
                c_read = read, c_write = rest - c_in;
            } else
                c_in = rest, c_read = read, c_write = 0.0;
        }
        sum->t_in += c_in;
        sum->t_read += c_read;
        sum->t_write += c_write;
        sum->t_out += c_out;
        if (t->priced) {
            sum->agent += has_cost ? cost : c_in * t->p_in + c_read * t->p_read + c_write * t->p_write + c_out * t->p_out;
            long last_epoch = prev != NULL ? prev_epoch : 0;
            if (epoch > last_epoch) { /* compactions [last_epoch, epoch) came before this request */
                double prefix, b;
                int got = kept_prefix(compactions, epoch - 1, k->comp_type, t->overhead, &prefix);
                if (got != 1) {
                    r = got;
                    goto next;
                }
                for (long j = last_epoch; j < epoch - 1; j++) {
                    if ((r = set_float(bust, j, 0.0)) != 1)
                        goto next;
                }
                double kept = prefix < truth ? prefix : truth; /* min(p.truth, ...) */
                double d = kept - c_read;
                b = (d > 0.0 ? d : 0.0) * (t->miss - t->p_read);
                if ((r = set_float(bust, epoch - 1, b)) != 1)
                    goto next;
            }
        }
        Py_INCREF(p);
        Py_XSETREF(prev, p);
        prev_truth = truth, prev_epoch = epoch;
        r = 1;
    next:
        Py_DECREF(p);
    }
    Py_XDECREF(prev);
    Py_XDECREF(prev_seconds_of);
    return r;
}

PyObject *price_sums(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 17 || !PyTuple_Check(args[5]) || PyTuple_GET_SIZE(args[5]) != 5 || !PyLong_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "price_sums(requests, compactions, recorded, rec_cost, memo, kinds, flags, "
                                         "ttl, hit, after_bust, input_floor, overhead, p_in, p_read, p_write, p_out, miss)");
        return NULL;
    }
    PyObject *requests = args[0], *compactions = args[1], *recorded = args[2], *rec_cost = args[3];
    Kinds k = {PyTuple_GET_ITEM(args[5], 0), PyTuple_GET_ITEM(args[5], 1), PyTuple_GET_ITEM(args[5], 2),
               PyTuple_GET_ITEM(args[5], 3), PyTuple_GET_ITEM(args[5], 4), args[4]};
    long flags = PyLong_AsLong(args[6]);
    if (flags == -1 && PyErr_Occurred())
        return NULL;
    Terms t = {flags & 1, (flags >> 1) & 1, (flags >> 2) & 1};
    double *terms[] = {&t.ttl, &t.hit, &t.after_bust, &t.input_floor, &t.overhead, &t.p_in, &t.p_read,
                       &t.p_write, &t.p_out, &t.miss};
    for (int i = 0; i < 10; i++)
        if (!exact_float(args[7 + i], terms[i]))
            Py_RETURN_NONE;
    if (!PyList_CheckExact(requests) || !PyList_CheckExact(compactions) || !PyDict_CheckExact(recorded) ||
        !PyDict_CheckExact(rec_cost) || !PyDict_CheckExact(k.memo) || !PyType_Check(k.point_type) ||
        !PyType_Check(k.classes_type) || !PyType_Check(k.comp_type) || !PyUnicode_Check(k.recorded_source) ||
        !PyType_IsSubtype((PyTypeObject *)k.point_type, &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)k.classes_type, &PyTuple_Type))
        Py_RETURN_NONE;
    Py_ssize_t ncomp = PyList_GET_SIZE(compactions);
    PyObject *bust = PyList_New(ncomp); /* `[None] * len(run.compactions)` */
    if (bust == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < ncomp; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(bust, i, Py_None);
    }
    Sums s = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    Py_INCREF(requests);
    Py_INCREF(compactions);
    int r = price_loop(requests, compactions, recorded, rec_cost, &k, &t, &s, bust);
    Py_DECREF(requests);
    Py_DECREF(compactions);
    if (r != 1) {
        Py_DECREF(bust);
        if (r == FAILED)
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(ddddddN)", s.t_in, s.t_read, s.t_write, s.t_out, s.rejected, s.agent, bust);
}

/* point_sources(requests, RequestPoint, members) -> `tuple(points.count(m) for m in members)` of
 * `points = [r.truth_source for r in requests]` (`replay.run_document.source_counts`, a run record's
 * requests_from_...), or None. Counted by identity, which is the count where every point is an exact
 * RequestPoint whose truth source is one of `members` (distinct TruthSource members: str equality,
 * so a member equals itself only); anything else (an equal str, another object) says None. */
PyObject *point_sources(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_CheckExact(args[2]) || PyTuple_GET_SIZE(args[2]) > 8) {
        PyErr_SetString(PyExc_TypeError, "point_sources(requests, point_type, members: tuple of at most 8)");
        return NULL;
    }
    PyObject *requests = args[0], *members = args[2];
    Py_ssize_t n = PyTuple_GET_SIZE(members), counts[8] = {0};
    if (!PyList_CheckExact(requests) || !PyType_Check(args[1]) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type))
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(requests); i++) {
        PyObject *p = PyList_GET_ITEM(requests, i);
        if (Py_TYPE(p) != (PyTypeObject *)args[1] || PyTuple_GET_SIZE(p) != N_FIELDS)
            Py_RETURN_NONE;
        PyObject *source = PyTuple_GET_ITEM(p, F_SOURCE);
        Py_ssize_t m = 0;
        while (m < n && PyTuple_GET_ITEM(members, m) != source)
            m++;
        if (m == n)
            Py_RETURN_NONE;
        counts[m]++;
    }
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t m = 0; out != NULL && m < n; m++) {
        PyObject *c = PyLong_FromSsize_t(counts[m]);
        if (c == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, m, c);
    }
    return out;
}
