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
additions in the same order), whether the context is the recorded one two comparisons (`_Walk.diverged`
does not change in a span), and the check points are counted as `CheckStep.checked` and `settled`
count them, the run's counters added to once the span ends (`_Counters`). Each request is decided
before anything of it is applied; the first that is not plain ends the span and the step takes it. A policy without `count_columns` gets spans without check points only.
`tests/replay/test_walk_bulk.py` compares the walk with the step alone on every field. Where the C
extension is built, the loop runs in C (`replay.walk_span`, read/_walk_span.c; measured on the 25-setting
Pi grid of bench/corpus/s0049.jsonl: 617M -> 500M instructions, the spans ~21% of its CPU -> ~3%):
`_span` is its rule, its fallback for what it does not take exactly, and its tests' oracle. Nothing here
names a policy: it reads `Policy.check_points`, `count_columns`, `fires`, `reply_ends_run`,
`counts_own_reply` and the agent's `Policy.recovery`.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import reduce
from itertools import accumulate
from operator import add
from typing import TYPE_CHECKING, Any

from sessiontools.policies.base import CheckPoint
from sessiontools.replay.records import CheckAt, RequestPoint, TruthSource
from sessiontools.transcript.model import Request

if TYPE_CHECKING:
    from sessiontools.replay.walk import _Walk

_RECORDED, _MODEL = TruthSource.RECORDED, TruthSource.MODEL
_INF = float("inf")
_new = tuple.__new__


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
        #: last[j]: event j ends its run; end[j]: its last message (the grid's, as the step reads them).
        self.last, self.end = g.ends_run, g.ends
        msgs = walk.path.messages
        reqs: list[Any] = [ev if ok else None for ev, ok in zip(events, self.ok, strict=False)]
        self.k = [pos[r.index] if r is not None else 0 for r in reqs]
        self.prompt = [float(r.usage.prompt) if r is not None else 0.0 for r in reqs]
        self.output = [r.usage.output if r is not None else 0 for r in reqs]
        self.stop = [r.stop_reason if r is not None else None for r in reqs]
        self.ids = [msgs[r.index].id if r is not None else None for r in reqs]
        self.stamps = [msgs[r.index].timestamp if r is not None else None for r in reqs]
        self.usage_at = [ev.index for ev in events] if policy.counts_own_reply else self.end
        #: lo_at[j]: the work positions up to the message of event j's usage (`bisect_right`).
        self.lo_at = [bisect_right(g.work, at) for at in self.usage_at]
        cols = None if policy.count_reads_messages else policy.count_columns()
        #: terms[p]: the policy's count terms of work positions [0, p) (None: no `count_columns`).
        self.terms: list[int] | None = None
        self.combine: Any = None
        if cols is not None:
            term, self.combine = cols
            self.terms = list(accumulate(map(term, g.work_sizes), initial=0))
        else:  # a request with a check point before or after it is never plain
            self.ok = [ok and not ((self.between and not starts[j]) or (self.run_end and self.last[j]))
                       for j, ok in enumerate(self.ok[:n])] + [False]
        from sessiontools.replay import walk_span  # (it reads these columns)

        #: The columns packed for the C's span loop (`replay.walk_span`); None: `_span` walks every span.
        self.native = walk_span.columns(walk, self)


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
    if p.native is not None:
        m = p.native.span(walk, p, n)
        if m is not None:
            return m
    return _span(walk, p, n)


def _recorded_between(walk: _Walk) -> tuple[float, float, float]:
    """`_Walk.diverged` for the span (no compaction is made in it) as bounds: the context before
    message i is the recorded one iff lo < i <= hi (its newest compaction reproduces the recording's
    newest before i exactly) or i <= upto (no recorded compaction before i was missed, none made at
    no recorded place)."""
    if walk.resized:
        return 0, -1, -1
    recorded, exact = walk.recorded, walk.exact
    lo, hi = (recorded[exact], recorded[exact + 1] if exact + 1 < len(recorded) else _INF) if exact is not None else (0, -1)
    unmatched = [rec for k, rec in enumerate(recorded) if k not in walk.matched]
    upto = -1 if walk.unmatched > 0 else (min(unmatched) if unmatched else _INF)
    return lo, hi, upto


def _span(walk: _Walk, p: Plain, n: int) -> int:
    """Walk the plain requests from event `n` on; the first event that is not plain (returned) is the
    step's. Each request as the step makes it (`_Walk.walk`, `request`, `answered`, `check`), the run's
    counters kept aside until the span ends (`_Counters`: the same additions in the same order)."""
    g, r, T, W = walk.grid, walk.run, walk.T, walk.W
    events, starts, work, wt = g.events, g.run_starts, walk.work, g.work_tokens
    ok, pk, prompt, output, usage_at, lo_at = p.ok, p.k, p.prompt, p.output, p.usage_at, p.lo_at
    users = walk.by_user
    limit = walk.path.compactions[users[walk.next_user]].index if walk.next_user < len(users) else _INF
    a_lo, a_hi, f_hi = _recorded_between(walk)
    fires, combine, terms, between, run_end = walk.policy.fires, p.combine, p.terms, p.between, p.run_end
    resume, anchored, until_prompt = walk.resume, walk.truth.anchored, walk.prefix_until_prompt
    prefix_last = max(walk.prefix) if walk.prefix else -1
    ctx = _ContextSum(walk, wt)
    rec, reqs, checks, anchor, last = walk.recovery, r.requests, r.check_counts, walk.anchor, walk.last_usage
    last_lo = bisect_right(work, last[0]) if last is not None else 0
    st = _Counters(r, walk.pending_thrash, T)
    held: list[Any] | None = None  # the newest request's point, until its check point after it (if any) is known
    ncomp, j = len(r.compactions), n
    while ok[j]:
        ev, first, k = events[j], starts[j], pk[j]
        if ev.index > limit or (first and until_prompt):
            break
        before = None
        if between and not first:  # `check` before the call: its count and truth, if it does not fire
            if terms is None or last is None or prefix_last > last[0]:
                break
            lo = last_lo if last_lo > resume else resume
            c = combine(last[1], terms[k] - terms[lo] if k > lo else 0)
            if fires(c, T) and not walk.switched_off(k):
                break
            at = work[k - 1] if k else 0
            if anchor is not None and anchor[0] <= k and anchored and ((a_lo < at <= a_hi) or at <= f_hi):
                before = (anchor[1] + reduce(add, wt[anchor[0]:k], 0.0), c, k)
            else:
                before = (ctx.at(k), c, k)
        i = ev.index
        same = (a_lo < i <= a_hi) or i <= f_hi
        u = prompt[j] if same else ctx.at(k)
        if u > W:
            break
        out = output[j]
        new_last = (usage_at[j], u + out)
        new_anchor = (k, u) if same else anchor
        after = None
        if run_end and p.last[j]:
            if terms is None or prefix_last > new_last[0]:
                break
            lo = lo_at[j] if lo_at[j] > resume else resume
            c = combine(new_last[1], terms[k + 1] - terms[lo] if k + 1 > lo else 0)
            if fires(c, T) and not walk.switched_off(k + 1):
                break
            if new_anchor is not None and new_anchor[0] <= k + 1 and anchored and ((a_lo < i <= a_hi) or i <= f_hi):
                after = (new_anchor[1] + reduce(add, wt[new_anchor[0]:k + 1], 0.0), c, k + 1)
            else:
                after = (ctx.at(k + 1), c, k + 1)
        # Plain: applied as the step applies it.
        if first:
            rec.run_started()
            walk.run_start = bisect_right(work, p.end[j - 1] if j else -1)
        if before is not None:
            held = st.check(before, held, reqs, checks, work)
        if u > T and not first:
            st.mid += 1
        rec.replied(p.stop[j])
        st.request(u, out)
        if held is not None:
            reqs.append(_new(RequestPoint, held))
        held = [i, p.ids[j], u, _RECORDED if same else _MODEL, None, False, out, p.stamps[j], ncomp, same]
        anchor, last, last_lo = new_anchor, new_last, lo_at[j]
        walk.reply = (i, u, out, same)
        if after is not None:
            held = st.check(after, held, reqs, checks, work)
        j += 1
    if held is not None:
        reqs.append(_new(RequestPoint, held))
    walk.anchor, walk.last_usage, walk._ctx_sum = anchor, last, ctx.running()
    st.done(walk)
    return j


class _ContextSum:
    """`_Walk.truth_at`'s sum of the context (its `_running`), extended in order as the span moves on."""

    __slots__ = ("wt", "resume", "kept", "base", "hi", "val")

    def __init__(self, walk: _Walk, wt: list[float]) -> None:
        self.wt, self.resume, self.kept = wt, walk.resume, walk.prefix_truth
        self.base = walk.truth.overhead + walk.summary
        acc = walk._ctx_sum
        self.hi, self.val = (acc[2], acc[3]) if acc[0] == self.resume and acc[1] == self.kept else (self.resume, self.kept)

    def at(self, upto: int) -> float:
        hi = upto if upto > self.resume else self.resume
        c_hi, c_val = self.hi, self.val
        if c_hi > hi:
            c_hi, c_val = self.resume, self.kept
        wt = self.wt
        while c_hi < hi:
            c_val += wt[c_hi]
            c_hi += 1
        self.hi, self.val = c_hi, c_val
        return self.base + c_val

    def running(self) -> tuple[int, float, int, float]:
        return self.resume, self.kept, self.hi, self.val


class _Counters:
    """The run's counters a span adds to (`CheckStep.checked`, `settled`; `_Walk.answered`), kept here
    until it ends (`done`): the same additions in the same order."""

    __slots__ = ("r", "T", "pending", "points", "over", "late", "peak", "mid", "billed", "output")

    def __init__(self, r: Any, pending: Any, T: float) -> None:
        self.r, self.T, self.pending = r, T, pending
        self.points = self.over = self.late = self.mid = 0
        self.peak, self.billed, self.output = r.peak_truth, r.billed_input, r.output_tokens

    def check(self, point: tuple[float, float, int], held: list[Any] | None, reqs: list[Any], checks: list[Any],
              work: list[int]) -> list[Any] | None:
        """A check point that does not fire (`_Walk.check`): counted, its count given to the newest
        request (`held`, not yet in `reqs`, or the run's last) when it has none."""
        truth, c, upto = point
        self.points += 1
        if truth > self.peak:
            self.peak = truth
        over = truth > self.T
        if self.pending is not None:
            if over:
                self.pending.thrash = True
                self.r.thrash += 1
            self.pending = None
        if over:
            self.over += 1
            self.late += 1
        if held is not None:
            if held[4] is None:
                held[4] = c
            nreq = len(reqs) + 1
        else:
            if reqs and reqs[-1].policy_count is None:
                reqs[-1] = reqs[-1]._replace(policy_count=c)
            nreq = len(reqs)
        checks.append(_new(CheckAt, (work[min(upto, len(work)) - 1] if upto > 0 and work else -1, c, truth, nreq)))
        return held

    def request(self, u: float, out: int) -> None:
        if u > self.peak:
            self.peak = u
        self.billed += u
        self.output += out

    def done(self, walk: _Walk) -> None:
        r = self.r
        r.check_points += self.points
        r.check_points_over += self.over
        r.late += self.late
        r.mid_run_crossings += self.mid
        r.peak_truth, r.billed_input, r.output_tokens = self.peak, self.billed, self.output
        walk.pending_thrash = self.pending
