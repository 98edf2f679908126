"""The one walk's runs of plain requests in bulk, at any point of a setting's walk (`replay.walk`), after
its compactions too (`replay.walk_bulk` answers only the events before a setting's first of its own).

A plain request is an answered model call (`Request`, with its usage) that starts no run, before
which the policy has no check point (`CheckPoint.BETWEEN_TURNS` not among `Policy.check_points`) and
after which none (it does not end its run, or `CheckPoint.RUN_END` is not among them), at its own
workload message. For such a request the step (`_Walk.request`) decides nothing: its truth is its
recorded prompt while the simulated context is the recorded one (`_Walk.diverged`), else the truth
model's sum of the context; above the window it overflows (the run of plain requests ends before
it, the step takes it); above the threshold it is a mid-run crossing; then the agent's recovery
hears its stop reason, the run bills it, its request point is made, and it is the newest reply.

So a run of consecutive plain requests, none past the next recorded user compaction, is answered
with numpy over the grid's columns (`Plain`, made once per grid): which of them diverge, their
truths (the context's running sum continued from the walk's own, `np.add.accumulate` adding in the
step's order), the first above the window (the run ends there), the crossings, peak, billed input and
output over the columns, the request points in one pass, and the walk's state after the last. The
values, their types and the order of every float addition are the step's; `tests/replay/test_walk_bulk.py`
compares the two on every field. Nothing here names a policy: it reads `Policy.check_points`,
`Policy.reply_ends_run`, `Policy.counts_own_reply` and the agent's `Policy.recovery`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiontools.policies.base import CheckPoint
from sessiontools.replay.records import RequestPoint, TruthSource
from sessiontools.transcript.model import Overflow, Request

if TYPE_CHECKING:
    from sessiontools.replay.walk import _Walk

#: The shortest run answered in bulk (below it, numpy's fixed cost is more than the step's).
MIN_RUN = 4
_RECORDED, _MODEL = TruthSource.RECORDED, TruthSource.MODEL


class Plain:
    """A grid's per-event columns for runs of plain requests (see the module docstring)."""

    def __init__(self, walk: _Walk) -> None:
        import numpy as np

        g, policy = walk.grid, walk.policy
        events, starts, pos = g.events, g.run_starts, g.pos_of
        cps = policy.check_points
        n = len(events)
        plain = []
        for j, ev in enumerate(events):
            last = j + 1 == n or starts[j + 1] or policy.reply_ends_run(
                None if isinstance(ev, Overflow) else ev.stop_reason, isinstance(ev, Overflow))
            plain.append(isinstance(ev, Request) and ev.usage is not None and not starts[j] and ev.index in pos
                         and CheckPoint.BETWEEN_TURNS not in cps and not (last and CheckPoint.RUN_END in cps))
        #: end[j]: the first event at or after j that is not plain (a run of plain requests is [j, end[j])).
        self.end = [n] * (n + 1)
        for j in range(n - 1, -1, -1):
            self.end[j] = self.end[j + 1] if plain[j] else j
        msgs = walk.path.messages
        reqs: list[Any] = [ev if p else None for ev, p in zip(events, plain, strict=True)]
        self.index = np.array([ev.index if ev is not None else -1 for ev in reqs], dtype=np.int64)
        self.k = np.array([pos[ev.index] if ev is not None else 0 for ev in reqs], dtype=np.int64)
        self.k_list = self.k.tolist()
        self.prompt = [float(ev.usage.prompt) if ev is not None else 0.0 for ev in reqs]
        self.output = [ev.usage.output if ev is not None else 0 for ev in reqs]
        self.output_np = np.array(self.output, dtype=np.int64)
        self.stop = [ev.stop_reason if ev is not None else None for ev in reqs]
        self.ids = [msgs[ev.index].id if ev is not None else None for ev in reqs]
        self.stamps = [msgs[ev.index].timestamp if ev is not None else None for ev in reqs]
        self.ends = [walk.reply_end(ev.index) if ev is not None else -1 for ev in reqs]
        self.work_tokens = np.array(g.work_tokens, dtype=np.float64)
        self.recorded = np.array(g.recorded, dtype=np.int64)


def plain_run(walk: _Walk, n: int) -> int:
    """Answer the run of plain requests from event `n` in bulk (module docstring); the event after
    it (`n`: none taken, the step walks event `n`)."""
    p = walk.plain
    if p is None:
        from sessiontools.replay import walk_bulk
        from sessiontools.replay.walk import _Walk

        if not walk_bulk.ENABLED or type(walk) is not _Walk:  # a subclass (the trace, a test's oracle) steps
            walk.plain = False
            return n
        p = walk.plain = walk.grid.shared.get("plain") or walk.grid.shared.setdefault("plain", Plain(walk))
    elif p is False:
        return n
    m = p.end[n]
    if m - n < MIN_RUN:
        return n
    if walk.next_user < len(walk.by_user):  # none at or past the next recorded user compaction
        from bisect import bisect_right

        m = min(m, n + bisect_right(p.index[n:m].tolist(), walk.path.compactions[walk.by_user[walk.next_user]].index))
    if m - n < MIN_RUN:
        return n
    return _answer(walk, p, n, m)


def _diverged(walk: _Walk, idx: Any) -> Any:
    """`_Walk.diverged` of each message index of `idx` (a numpy array), as the walk's state has it now."""
    import numpy as np

    if walk.resized:
        return np.ones(idx.shape, dtype=bool)
    rec = walk.grid.shared["plain"].recorded
    unmatched = [r for k, r in enumerate(walk.recorded) if k not in walk.matched]
    missed = idx > min(unmatched) if unmatched else np.zeros(idx.shape, dtype=bool)
    out = missed | (walk.unmatched > 0)
    if walk.exact is not None:
        out &= np.searchsorted(rec, idx, side="left") - 1 != walk.exact
    return out


def _answer(walk: _Walk, p: Plain, n: int, m: int) -> int:
    import numpy as np

    idx, k = p.index[n:m], p.k[n:m]
    div = _diverged(walk, idx)
    u = np.array(p.prompt[n:m], dtype=np.float64)
    if div.any():
        # The context's running sum (`_Walk.truth_at`): start + the truth of work positions [resume, k).
        lo, start = walk.resume, walk.prefix_truth
        kd = np.maximum(k[div], lo)
        hi = int(kd[-1])
        acc = walk._ctx_sum
        if acc[0] == lo and acc[1] == start and acc[2] <= int(kd[0]):
            base, value = acc[2], acc[3]
        else:
            base, value = lo, start
        sums = np.add.accumulate(np.concatenate(([value], p.work_tokens[base:hi])))
        t = walk.truth
        u[div] = (t.overhead + walk.summary) + sums[kd - base]
    over = np.flatnonzero(u > walk.W)
    if over.size:  # the step takes the first request above the window
        m = n + int(over[0])
        if m - n < MIN_RUN:
            return n
        idx, k, div, u = idx[:m - n], k[:m - n], div[:m - n], u[:m - n]
    if div.any():
        last_div = int(np.flatnonzero(div)[-1])
        kl = max(int(k[last_div]), walk.resume)
        walk._ctx_sum = (walk.resume, walk.prefix_truth, kl, float(sums[kl - base]))
    r = walk.run
    r.mid_run_crossings += int(np.count_nonzero(u > walk.T))  # none starts its run
    top = float(u.max())
    if top > r.peak_truth:
        r.peak_truth = top
    r.billed_input = float(np.add.accumulate(np.concatenate(([r.billed_input], u)))[-1])
    r.output_tokens += int(p.output_np[n:m].sum())
    replied = walk.recovery.replied
    for s in p.stop[n:m]:
        replied(s)
    us = u.tolist()
    same = (~div).tolist()
    ncomp = len(r.compactions)
    out, ids, stamps = p.output, p.ids, p.stamps
    r.requests.extend([RequestPoint(int(i), ids[j], x, _MODEL if d else _RECORDED, None, False, out[j], stamps[j],
                                    ncomp, not d)
                       for j, i, x, d in zip(range(n, m), idx.tolist(), us, div.tolist(), strict=True)])
    recorded = np.flatnonzero(~div)
    if recorded.size:
        j = int(recorded[-1])
        walk.anchor = (p.k_list[n + j], us[j])
    j = m - 1
    walk.reply = (int(p.index[j]), us[-1], out[j], same[-1])
    walk.last_usage = (int(p.index[j]) if walk.policy.counts_own_reply else p.ends[j], us[-1] + out[j])
    return m
