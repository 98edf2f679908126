"""The one walk's grid in bulk: what every setting of a grid walks alike, walked once (`replay.walk`).

Until a setting's walk first compacts, overflows, meets a recorded overflow or applies a user
compaction, its state is no setting's: the context is the workload so far, every request's truth,
every check point's truth and the policy's count there are the same at every window and threshold
(the policy's count sees only the `CountView`; its compactor is consulted only for the count of a
context without usage, which holds no summary yet). Only what the setting compares with them differs:
whether the policy fires at its threshold, whether a request exceeds its window, and the counters of
check points over the threshold, late check points and mid-run crossings.

So the grid's shared state (`PathGrid.shared`) holds one `Trace`: the walk of the path by the step
itself (`replay.walk._Walk`) under a setting that never fires and never overflows, recording before
each event (request or recorded overflow) the walk's state and counters, and at each check point and
request its truth and count, as numpy columns. Each later setting of the grid finds with them its
first event where something is its own (a check point where `Policy.fires` at its threshold, a request
above its window, or the trace's end: a recorded overflow, a user compaction, the path's end), takes
the trace's request points, counters and state before that event, counts its own threshold's
counters over the columns, replays the agent's recovery state (`Policy.recovery`: the same calls in
the same order), and the step walks on from there. The values, their types and the order of every
float addition are the step's own (the trace is the step's walk); `tests/replay/test_walk_bulk.py`
compares the two on every field.

When the grid knows its settings (`PathGrid.settings`) and has more than one, the trace is walked at
its first walk and only as far as its last setting's first event of its own; else a grid's first
walk takes the step alone (one setting needs no trace) and the trace, to its end, is walked at the
second. Nothing here names a policy: the trace reads only `Policy.fires`, `Policy.recovery` and the
walk's own records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sessiontools.replay.walk import _Walk
from sessiontools.transcript.model import Overflow, UnusableReply

#: A window and threshold no request or count reaches: the trace's walk never compacts or overflows.
NEVER = 1 << 62
#: Set False to walk every setting by the step alone, without this trace or the spans of `replay.walk_plain`
#: (the guard test's other side; `lab.walk_speed`'s "step alone").
ENABLED = True


@dataclass(frozen=True, slots=True)
class Before:
    """The walk's state and setting-free counters before one event of the trace."""

    anchor: Any
    reply: Any
    last_usage: Any
    run_start: int
    ctx_sum: tuple[int, float, int, float]
    anchor_sum: tuple[int, float, int, float]
    points: int  # request points made so far
    checks: int  # check points so far
    requests: int  # answered requests so far
    peak: float
    billed: float
    output: int


class Trace:
    """One path's walk under no setting, up to its first event that depends on one (module docstring)."""

    def __init__(self, before: list[Before], points: list[Any], set_at: list[int], check_event: list[int],
                 check_truth: list[float], check_count: list[float], check_off: list[bool],
                 req_event: list[int], req_u: list[float], req_first: list[bool],
                 check_at: list[Any]) -> None:
        import numpy as np

        self.before, self.points, self.set_at = before, points, set_at
        self.end = len(before) - 1  # events [0, end) are in the trace
        self.check_event = np.array(check_event, dtype=np.int64)
        self.check_truth = np.array(check_truth, dtype=np.float64)
        self.check_count, self.check_off = check_count, check_off
        self.check_at = check_at  # each check point's (position, count): `ReplayRun.check_counts`
        self.req_event = np.array(req_event, dtype=np.int64)
        self.req_u = np.array(req_u, dtype=np.float64)
        self.req_mid = ~np.array(req_first, dtype=bool)  # requests that may cross mid-run

    def stop(self, fires: Any, threshold: int, window: int) -> int:
        """The first event of the trace where a setting (its `fires` at `threshold`, its `window`) acts."""
        import numpy as np

        stop = self.end
        above = np.flatnonzero(self.req_u > window)
        if above.size:
            stop = min(stop, int(self.req_event[above[0]]))
        for j, (count, off) in enumerate(zip(self.check_count, self.check_off, strict=True)):
            if self.check_event[j] >= stop:
                break
            if not off and fires(count, threshold):
                return int(self.check_event[j])
        return stop


class _Shadow(_Walk):
    """The step, recording the trace (see the module docstring), until every setting of `pending`
    ((threshold, window) of each; None: unknown) met its first event of its own."""

    def __init__(self, walk: _Walk, pending: list[tuple[int, int]] | None) -> None:
        super().__init__(walk.path, walk.policy, replace(walk.settings, context_window=NEVER, policy_threshold=NEVER),
                         walk.truth, walk.grid)
        self.pending = pending
        self.event = 0
        self.before: list[Before] = []
        self.set_at: list[int] = []
        self.checks: tuple[list[int], list[float], list[float], list[bool]] = ([], [], [], [])
        self.reqs: tuple[list[int], list[float], list[bool]] = ([], [], [])
        self.first = False
        self.truth_now = 0.0

    def left(self) -> bool:
        """Whether the walk left the setting-free state (a safety net: it never compacts or overflows)."""
        r = self.run
        return bool(r.compactions or r.failed_compactions or r.overflows or r.provider_rejections
                    or r.failed_recoveries or r.no_compaction or self.applied or self.unmatched
                    or self.exact is not None or self.prefix or self.resume or self.resized)

    def user_compactions(self, before: int) -> None:
        # Called first for every event of `_Walk.walk`, and once after the last.
        n, r = self.event, self.run
        self.event += 1
        if self.left() or self.pending == []:
            self.before = self.before[:max(n - 1, 0) + 1]
            raise _End
        self.before.append(Before(self.anchor, self.reply, self.last_usage, self.run_start, self._ctx_sum,
                                  self._anchor_sum, len(r.requests), r.check_points, len(self.reqs[0]),
                                  r.peak_truth, r.billed_input, r.output_tokens))
        events = self.grid.events
        by_user, comps = self.by_user, self.path.compactions
        if (n >= len(events) or isinstance(events[n], Overflow | UnusableReply)
                or (self.next_user < len(by_user) and comps[by_user[self.next_user]].index < before)):
            raise _End
        super().user_compactions(before)

    def checked(self, truth_now: float, threshold: float) -> bool:
        self.truth_now = truth_now
        return super().checked(truth_now, threshold)

    def check(self, upto: int, after: UnusableReply | None = None, before_call: bool = False) -> float:
        r = self.run
        unset = bool(r.requests) and r.requests[-1].policy_count is None
        count = super().check(upto, after, before_call)
        if unset and r.requests[-1].policy_count is not None:
            self.set_at[len(r.requests) - 1] = self.event - 1
        ev, truth, counts, offs = self.checks
        ev.append(self.event - 1)
        truth.append(self.truth_now)
        counts.append(count)
        off = self.switched_off(upto)
        offs.append(off)
        if self.pending and not off:
            fires = self.policy.fires
            self.pending = [p for p in self.pending if not fires(count, p[0])]
        return count

    def request(self, req: Any, first: bool, last: bool) -> None:
        self.first = first
        super().request(req, first, last)

    def answered(self, k: int, index: int, u: float, output: int, last: bool, source: Any, same: bool) -> None:
        ev, us, firsts = self.reqs
        ev.append(self.event - 1)
        us.append(u)
        firsts.append(self.first)
        self.set_at.append(len(self.grid.events))  # no check point has set its count yet
        if self.pending:
            self.pending = [p for p in self.pending if u <= p[1]]
        super().answered(k, index, u, output, last, source, same)


def _build(walk: _Walk, pending: list[tuple[int, int]] | None) -> Trace | None:
    """The trace of `walk`'s grid: the step walked under a setting that never fires nor overflows,
    until every setting of `pending` ((threshold, window) of each; None: unknown) met its first event
    of its own."""
    shadow = _Shadow(walk, pending)
    try:
        shadow.walk()
    except _End:
        pass
    else:  # the walk ended without the hook's last call: no trace to trust
        return None
    if not shadow.before:
        return None
    return Trace(shadow.before, shadow.run.requests, shadow.set_at, *shadow.checks, *shadow.reqs,
                 shadow.run.check_counts)


class _End(Exception):
    """The trace's walk reached its first event that depends on a setting."""


def fast_forward(walk: _Walk) -> int:
    """Set `walk` (not walked yet) to its state before its first event that is its own, from its grid's
    trace; that event's index (0: the step walks every event)."""
    if not ENABLED:
        return 0
    g = walk.grid
    shared, known = g.shared, len(g.settings) > 1
    seen = shared.get("walks", 0)
    shared["walks"] = seen + 1
    if seen == 0 and not known:
        return 0
    if "trace" not in shared:
        shared["trace"] = None  # the trace's own walk takes the step
        pending = sorted({(s.threshold, s.context_window) for s in g.settings}) if known else None
        shared["trace"] = _build(walk, pending)
    trace: Trace | None = shared["trace"]
    if trace is None:
        return 0
    stop = trace.stop(walk.policy.fires, walk.T, walk.W)
    if stop > 0:
        _apply(walk, trace, stop)
    return stop


def _apply(walk: _Walk, trace: Trace, stop: int) -> None:
    """`walk`'s state and run after the trace's events before `stop` (see the module docstring)."""
    import numpy as np

    b = trace.before[stop]
    r, T = walk.run, walk.T
    points = trace.points[:b.points]
    if points and trace.set_at[b.points - 1] >= stop:  # its count is set by a check point of event `stop`
        points[-1] = points[-1]._replace(policy_count=None)
    r.requests.extend(points)
    r.check_points, r.peak_truth, r.billed_input, r.output_tokens = b.checks, b.peak, b.billed, b.output
    r.check_counts.extend(trace.check_at[:b.checks])
    over = int(np.count_nonzero(trace.check_truth[:b.checks] > T))
    r.check_points_over += over
    r.late += over  # no check point before `stop` compacted (`Trace.stop`)
    r.mid_run_crossings += int(np.count_nonzero((trace.req_u[:b.requests] > T) & trace.req_mid[:b.requests]))
    walk.anchor, walk.reply, walk.last_usage, walk.run_start = b.anchor, b.reply, b.last_usage, b.run_start
    walk._ctx_sum, walk._anchor_sum = b.ctx_sum, b.anchor_sum
    recovery, starts, events = walk.recovery, walk.grid.run_starts, walk.grid.events
    for n in range(stop):
        if starts[n]:
            recovery.run_started()
        recovery.replied(events[n].stop_reason)  # type: ignore[union-attr]  # a Request: the trace ends at an Overflow
