"""The replay walk's common case in bulk: runs of ordinary requests between the events that need the
step of `replay.simulate` (a check point where Pi compacts, an overflow, an aborted or failed reply).

Between two such events nothing the walk decides changes: every request's truth U is its recorded
prompt while the context is the recorded one, else overhead + summary + the truth of base entries
[first kept, i); Pi's view at a check point is the reply's recorded usage or U + output. So a run of
requests is found with numpy over the per-request columns of the workload (`PlainRows`, built once
per workload and Pi version and shared by the settings of a grid), and its counters, request points
and Pi's state after it are set at once, with the same values, types and order of float additions as
the step gives one request at a time (`tests/replay/test_fast_walk.py` compares the two).
"""

from __future__ import annotations

from functools import reduce
from itertools import repeat
from operator import add
from typing import TYPE_CHECKING, Any

from sessiontools.replay.records import CheckAt, RequestPoint, TruthSource

if TYPE_CHECKING:
    from sessiontools.replay.shared import SharedGrid
    from sessiontools.replay.simulate import _Sim
    from sessiontools.transcript.pi.workload import Workload

#: Requests looked ahead at once (a session that overflows at every request stays linear).
CHUNK = 512
_RECORDED, _MODEL = TruthSource.RECORDED, TruthSource.MODEL
_new_tuple = tuple.__new__


class PlainRows:
    """Per-request columns of a workload, as numpy arrays (for the search) and lists (for the points)."""

    def __init__(self, wl: Workload, g: SharedGrid) -> None:
        import numpy as np

        reqs = wl.requests
        self.n = len(reqs)
        self.idx = [r.base_index for r in reqs]
        idx = np.array(self.idx, dtype=np.int64)
        self.first = np.array([r.first_in_run for r in reqs], dtype=bool)
        self.last = np.array([r.last_in_run for r in reqs], dtype=bool)
        self.has_rp = np.array([r.recorded_prompt is not None for r in reqs], dtype=bool)
        self.rp = np.array([r.recorded_prompt or 0 for r in reqs], dtype=np.float64)
        self.out = [r.output for r in reqs]
        self.out_f = np.array(self.out, dtype=np.float64)
        self.usable = np.array([r.stop_reason != "aborted" and r.stop_reason != "error" for r in reqs], dtype=bool)
        self.rec_total: list[Any] = [g.recorded_total.get(i) for i in self.idx]
        self.has_rt = np.array([t is not None for t in self.rec_total], dtype=bool)
        self.rt = np.array([t or 0 for t in self.rec_total], dtype=np.float64)
        self.T = np.array(g.truth_prefix, dtype=np.float64)
        self.t_at, self.t_next = self.T[idx], self.T[idx + 1]
        self.state_id = np.array([s[0] or 0 for s in g.recorded_state], dtype=np.int64)[idx]
        self.state_fk = np.array([s[1] for s in g.recorded_state], dtype=np.int64)[idx]
        self.ids = [g.entry_ids[i] for i in self.idx]
        self.stamps = [g.timestamps[i] for i in self.idx]
        #: Some request's recorded context follows a recorded compaction (else, once the replay has
        #: compacted, no context is the recorded one).
        self.recorded_after = bool(self.state_id.any() or self.state_fk.any())
        self._initial: tuple[Any, ...] | None = None

    def initial(self, overhead: float) -> tuple[Any, ...]:
        """(same, rec, u, view) of every request while no compaction was made (no summary, nothing
        cut): the same for every setting of a grid, so computed once."""
        import numpy as np

        if self._initial is None or self._initial[0] != overhead:
            same = (self.state_id == 0) & (self.state_fk == 0)
            rec = same & self.has_rp
            u = np.where(rec, self.rp, ((overhead + 0.0) + self.t_at) - self.T[0])
            view = np.where(rec & self.has_rt, self.rt, u + self.out_f)
            self._initial = (overhead, same, rec, u, view)
        return self._initial[1:]


def plain_rows(sim: _Sim) -> PlainRows:
    key = ("plain rows", sim.v)
    rows = sim.truth.shared.get(key)
    if rows is None:
        rows = sim.truth.shared[key] = PlainRows(sim.wl, sim.grid)
    return rows


def walk_plain(sim: _Sim) -> None:
    """Every request of the workload: runs in bulk (`_bulk`), the events by the general step (`_Sim._request`)."""
    import numpy as np

    rows = plain_rows(sim)
    window, threshold = sim.window, sim.threshold
    assert window is not None and threshold is not None
    k, n = 0, rows.n
    while k < n:
        fk = sim.fk
        c = sim.truth.overhead + sim.summary_truth  # `truth_before`: (overhead + summary + T[i]) - T[fk]
        t_fk = rows.T[fk]
        if sim.comp is None:  # no compaction yet: summary 0, first kept 0 (`PlainRows.initial`)
            hi = n
            same, rec, u, view = (a[k:] for a in rows.initial(sim.truth.overhead))
        else:
            hi = min(n, k + CHUNK)
            if rows.recorded_after:
                same = (rows.state_id[k:hi] == id(sim.comp)) & (rows.state_fk[k:hi] == fk)
                rec = same & rows.has_rp[k:hi]
                u = np.where(rec, rows.rp[k:hi], (c + rows.t_at[k:hi]) - t_fk)
                view = np.where(rec & rows.has_rt[k:hi], rows.rt[k:hi], u + rows.out_f[k:hi])
            else:  # no recorded context after the replay's compaction
                same = rec = np.zeros(hi - k, dtype=bool)
                u = (c + rows.t_at[k:hi]) - t_fk
                view = u + rows.out_f[k:hi]
        last = rows.last[k:hi]
        stop = (u > window) | ~rows.usable[k:hi] | (last & (view > threshold))
        b = k + int(stop.argmax()) if stop.any() else hi
        if b > k:
            m = b - k
            at_check = (c + rows.t_next[k:b]) - t_fk  # the truth at the check point after each request
            over = last[:m] & (at_check > threshold)
            _bulk(sim, rows, k, b, u[:m], rec[:m], same[:m], last[:m], over, at_check)
        if b < hi:
            sim._request(sim.wl.requests[b])
            b += 1
        k = b


def _column(flags: Any, yes: Any, no: Any) -> Any:
    """`[yes if f else no for f in flags]` as an iterable, without the list when every flag agrees."""
    if not flags.any():
        return repeat(no)
    if flags.all():
        return repeat(yes)
    return [yes if f else no for f in flags.tolist()]


def _bulk(sim: _Sim, rows: PlainRows, k: int, b: int, u_a: Any, rec_a: Any, same_a: Any, last: Any,
          over: Any, at_check: Any) -> None:
    """Requests k..b-1 (none overflows, none compacts, every reply is usable), as the step would."""
    import numpy as np

    r = sim.run
    out = rows.out[k:b]
    u: list[float] = u_a.tolist()
    rec: list[bool] = rec_a.tolist()
    mid = sim.window - sim.s.reserve_tokens  # type: ignore[operator]
    r.mid_run_crossings += int(np.count_nonzero((u_a > mid) & ~rows.first[k:b]))
    top = max(u)
    if top > r.peak_truth:
        r.peak_truth = top
    r.billed_input = reduce(add, u, r.billed_input)  # in order, as the step adds them
    r.output_tokens += sum(out)
    views: list[Any] = [None] * (b - k)
    checks = np.flatnonzero(last).tolist()
    for j in checks:
        t = rows.rec_total[k + j]
        views[j] = t if rec[j] and t is not None else u[j] + out[j]
    if checks:
        top_check = float(at_check[checks].max())  # `check`: the peak includes every check point's truth
        if top_check > r.peak_truth:
            r.peak_truth = top_check
        n_over = int(np.count_nonzero(over))
        if sim.pending_thrash is not None:
            if over[checks[0]]:
                sim.pending_thrash.thrash = True
                r.thrash += 1
            sim.pending_thrash = None
        r.check_points += len(checks)
        idx, n = rows.idx, len(r.requests) + 1  # (the requests k..b-1 are added below)
        r.check_counts.extend([CheckAt(idx[k + j], views[j], float(at_check[j]), n + j) for j in checks])
        r.check_points_over += n_over
        r.late += n_over  # a check point over the threshold where Pi does not compact
    # `RequestPoint(*fields)` built by `tuple.__new__` over zipped columns: no Python call per point.
    r.requests.extend(map(_new_tuple, repeat(RequestPoint), zip(
        rows.idx[k:b], rows.ids[k:b], u, _column(rec_a, _RECORDED, _MODEL), views, repeat(False), out,
        rows.stamps[k:b], repeat(len(r.compactions)), _column(same_a, True, False))))
    # Pi's state after the run's newest reply.
    i = rows.idx[b - 1]
    sim.synthetic.extend(sim.wl.base[sim.pos:i + 1])
    sim.pos = i + 1
    sim.recovery.tried = False  # every usable 0.x reply clears it (`PiRecovery.replied`)
    sim._same = bool(same_a[-1])
    t = rows.rec_total[b - 1]
    if rec[-1]:
        sim.usage_override = None
        total = t if t is not None else u[-1] + out[-1]
    else:
        sim.usage_override = (len(sim.synthetic) - 1, int(u[-1] + 0.5), out[-1])  # JS's Math.round, as `_reply`
        total = u[-1] + out[-1]
    sim.last_usage = (i, total)
