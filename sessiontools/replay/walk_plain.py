"""The one walk's spans of plain requests in bulk, at any point of a setting's walk (`replay.walk`), after
its compactions too (`replay.walk_bulk` answers only the events before a setting's first of its own).

A plain request is an answered model call (`Request`, with its usage, at its own workload message)
that needs nothing of the step: no recorded user compaction comes before it, it fits the window, and
neither the policy's check point before it (`CheckPoint.BETWEEN_TURNS`) nor the one after it, when it
ends its run (`CheckPoint.RUN_END`), fires. A run's first request is one too unless the policy checks
before sampling (`BEFORE_SAMPLING`, whose place depends on the agent's `Policy.pre_turn_recorded`) or
the kept messages leave at that prompt (`Kept.until_next_prompt`). For a plain request the step
decides nothing: its truth is its recorded prompt while the simulated context is the recorded one
(`_Walk.diverged`), else the truth model's running sum of the context; above the threshold it is a
mid-run crossing; the agent's recovery hears its stop reason; the run bills it and makes its request
point; it is the newest reply. At a check point that does not fire, the truth of the context and the
policy's count are classified as the step classifies them (`CheckStep.checked`, `settled`).

So a span of consecutive plain requests is answered in one pass over the grid's columns (`Plain`,
made once per grid: each request's place, prompt, output, stop reason and reply end, and the prefix
sums of the policy's count terms over the workload, `Policy.count_columns`), without the step's
views, lists and dispatch: each check point's count is `combine(the newest usage total, the terms
of the messages after it)` by two lookups, each truth the step's own running sum (the same float
additions in the same order), and the step's own `checked` and `settled` count the check points.
Each request is decided before anything of it is applied; the first that is not plain ends the span
and the step takes it. A policy without `count_columns` gets spans without check points only.
`tests/replay/test_walk_bulk.py` compares the walk with the step alone on every field. Nothing here
names a policy: it reads `Policy.check_points`, `count_columns`, `fires`, `reply_ends_run`,
`counts_own_reply` and the agent's `Policy.recovery`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import reduce
from operator import add
from typing import TYPE_CHECKING, Any

from sessiontools.policies.base import CheckPoint
from sessiontools.replay.records import CheckAt, RequestPoint, TruthSource
from sessiontools.transcript.model import Overflow, Request

if TYPE_CHECKING:
    from sessiontools.replay.walk import _Walk

_RECORDED, _MODEL = TruthSource.RECORDED, TruthSource.MODEL


class Plain:
    """A grid's per-event and per-position columns for spans of plain requests (module docstring)."""

    def __init__(self, walk: _Walk) -> None:
        g, policy = walk.grid, walk.policy
        events, starts, pos = g.events, g.run_starts, g.pos_of
        cps = policy.check_points
        self.between = CheckPoint.BETWEEN_TURNS in cps
        self.run_end = CheckPoint.RUN_END in cps
        before = CheckPoint.BEFORE_SAMPLING in cps
        n = len(events)
        #: ok[j]: event j may be a plain request (whether it is depends on the setting's state).
        self.ok = [isinstance(ev, Request) and ev.usage is not None and ev.index in pos and not (starts[j] and before)
                   for j, ev in enumerate(events)] + [False]
        #: last[j]: event j ends its run (the walk's rule, `_Walk.walk`).
        self.last = [j + 1 == n or starts[j + 1] or policy.reply_ends_run(
            None if isinstance(ev, Overflow) else ev.stop_reason, isinstance(ev, Overflow)) for j, ev in enumerate(events)]
        msgs = walk.path.messages
        own = policy.counts_own_reply
        self.k, self.prompt, self.output, self.stop, self.ids, self.stamps, self.usage_at, self.end = (
            [], [], [], [], [], [], [], [])
        for ev, ok in zip(events, self.ok, strict=False):
            req: Any = ev if ok else None
            self.k.append(pos[ev.index] if req is not None else 0)
            self.prompt.append(float(req.usage.prompt) if req is not None else 0.0)
            self.output.append(req.usage.output if req is not None else 0)
            self.stop.append(ev.stop_reason if req is not None else None)  # type: ignore[union-attr]
            self.ids.append(msgs[ev.index].id if req is not None else None)
            self.stamps.append(msgs[ev.index].timestamp if req is not None else None)
            end = walk.event_end(ev)  # type: ignore[arg-type]
            self.end.append(end)
            self.usage_at.append(ev.index if own else end)
        cols = None if policy.count_reads_messages else policy.count_columns()
        #: terms[p]: the policy's count terms of work positions [0, p) (None: no `count_columns`).
        self.terms: list[int] | None = None
        self.combine: Any = None
        if cols is not None:
            term, self.combine = cols
            acc = 0
            self.terms = [0]
            for size in g.work_sizes:
                acc += term(size)
                self.terms.append(acc)
        else:  # a request with a check point before or after it is never plain
            self.ok = [ok and not ((self.between and not starts[j]) or (self.run_end and self.last[j]))
                       for j, ok in enumerate(self.ok[:n])] + [False]


def plain_run(walk: _Walk, n: int) -> int:
    """Answer the span of plain requests from event `n` (module docstring); the event after it (`n`:
    none answered, the step walks event `n`)."""
    p = walk.plain
    if p is None:
        from sessiontools.replay import walk_bulk
        from sessiontools.replay.walk import _Walk

        if not walk_bulk.ENABLED or type(walk) is not _Walk:  # a subclass (the trace, a test's oracle) steps
            walk.plain = False
            return n
        p = walk.plain = walk.grid.shared.get("plain") or walk.grid.shared.setdefault("plain", Plain(walk))
    if p is False or not p.ok[n]:
        return n
    return _span(walk, p, n)


def _tools(walk: _Walk, p: Plain) -> tuple[Any, Any, Any, Any, Any]:
    """The span's view of the step (`_Walk`'s check, classification, divergence and context truth, as
    closures over its state), and a function giving the running context sum to hand back to the walk."""
    g = walk.grid
    work, wt = walk.work, g.work_tokens
    r, T = walk.run, walk.T
    fires, combine, terms = walk.policy.fires, p.combine, p.terms
    # `_Walk.diverged`'s state is the span's: no compaction is made in it.
    resized, exact, recorded = walk.resized, walk.exact, walk.recorded
    unmatched = [rec for k, rec in enumerate(recorded) if k not in walk.matched]
    first_unmatched = min(unmatched) if unmatched else None
    made_unmatched = walk.unmatched > 0

    def diverged(index: int) -> bool:
        if resized:
            return True
        if exact is not None and exact == bisect_left(recorded, index) - 1:
            return False
        return made_unmatched or (first_unmatched is not None and first_unmatched < index)

    prefix_last = max(walk.prefix) if walk.prefix else -1
    anchored = walk.truth.anchored
    resume, kept_truth = walk.resume, walk.prefix_truth
    base = walk.truth.overhead + walk.summary
    acc = walk._ctx_sum
    c_hi, c_val = (acc[2], acc[3]) if acc[0] == resume and acc[1] == kept_truth else (resume, kept_truth)

    def context_truth(upto: int) -> float:  # `_Walk.truth_at`'s sum of the context (its `_running`)
        nonlocal c_hi, c_val
        hi = max(upto, resume)
        if c_hi > hi:
            c_hi, c_val = resume, kept_truth
        while c_hi < hi:
            c_val += wt[c_hi]
            c_hi += 1
        return base + c_val

    def truth_at(upto: int, anchor: tuple[int, float] | None) -> float:  # `_Walk.truth_at` at a check point
        at = work[upto - 1] if upto else 0
        if anchor is not None and anchor[0] <= upto and anchored and not diverged(at):
            return anchor[1] + reduce(add, wt[anchor[0]:upto], 0.0)
        return context_truth(upto)

    def count(last: tuple[int, float], upto: int) -> float:  # `Policy.count` of `_Walk.view`, by the columns
        lo = bisect_right(work, last[0], resume, max(upto, resume))
        return combine(last[1], terms[upto] - terms[lo] if upto > lo else 0)  # type: ignore[index]

    def check(upto: int, last: tuple[int, float] | None,
              anchor: tuple[int, float] | None) -> tuple[float, float, int] | None:
        """(truth, count) of a check point that does not fire; None: the step must take it."""
        if terms is None or last is None or prefix_last > last[0]:
            return None
        c = count(last, upto)
        if fires(c, T) and not walk.switched_off(upto):
            return None
        return truth_at(upto, anchor), c, upto

    def classify(point: tuple[float, float, int]) -> None:  # `_Walk.check`, for a check point that does not fire
        truth, c, upto = point
        over = walk.checked(truth, T)
        if r.requests and r.requests[-1].policy_count is None:
            r.requests[-1] = r.requests[-1]._replace(policy_count=c)
        r.check_counts.append(CheckAt(work[min(upto, len(work)) - 1] if upto > 0 and work else -1, c, truth,
                                      len(r.requests)))
        walk.settled(False, None, over)

    def running() -> tuple[int, float, int, float]:
        return resume, kept_truth, c_hi, c_val

    return check, classify, diverged, context_truth, running


def _span(walk: _Walk, p: Plain, n: int) -> int:
    """Walk the plain requests from event `n` on; the first event that is not plain (returned) is the
    step's."""
    check, classify, diverged, context_truth, running = _tools(walk, p)
    g = walk.grid
    events, starts, work = g.events, g.run_starts, walk.work
    r, T, W = walk.run, walk.T, walk.W
    users = walk.by_user
    limit = walk.path.compactions[users[walk.next_user]].index if walk.next_user < len(users) else None
    ncomp = len(r.compactions)
    j = n
    while p.ok[j]:
        ev = events[j]
        first = starts[j]
        if (limit is not None and ev.index > limit) or (first and walk.prefix_until_prompt):
            break
        k = p.k[j]
        before = None
        if p.between and not first:
            before = check(k, walk.last_usage, walk.anchor)
            if before is None:
                break
        same = not diverged(ev.index)
        u = p.prompt[j] if same else context_truth(k)
        if u > W:
            break
        out = p.output[j]
        last = (p.usage_at[j], u + out)
        anchor = (k, u) if same else walk.anchor
        after = None
        if p.run_end and p.last[j]:
            after = check(k + 1, last, anchor)
            if after is None:
                break
        # Plain: applied as the step applies it (`_Walk.walk`, `request`, `answered`).
        if first:
            walk.recovery.run_started()
            walk.run_start = bisect_right(work, p.end[j - 1] if j else -1)
        if before is not None:
            classify(before)
        if u > T and not first:
            r.mid_run_crossings += 1
        walk.recovery.replied(p.stop[j])
        walk._peak(u)
        r.billed_input += u
        r.output_tokens += out
        r.requests.append(RequestPoint(ev.index, p.ids[j], u, _RECORDED if same else _MODEL, None, False, out,
                                       p.stamps[j], ncomp, same))
        walk.anchor, walk.reply, walk.last_usage = anchor, (ev.index, u, out, same), last
        if after is not None:
            classify(after)
        j += 1
    walk._ctx_sum = running()
    return j
