"""The loop of a span of plain requests (`replay.walk_plain._span`) in C (`read._native.walk_span`,
_walk_span.c), where the extension is built and the grid's values are those it takes exactly.

`Columns` packs a grid's `walk_plain.Plain` columns once (machine ints and doubles, and the objects
a request point is made of), each event marked safe only when its values are exact ints small
enough for a double, exact floats; the workload's truths must be exact floats and the count's prefix
sums exact small ints, else the grid has no columns and `_span` walks every span. Per span, `span`
passes the walk's state; the C takes it only when the policy's `fires` and `combine` are ones it
does exactly (the base `Policy.fires` under either `fires_at_threshold`, and `_COMBINE`: the base's
combines, checked by identity; nothing here names an agent) and the agent's recovery is one whose
calls in a span are a column (`Recovery.clears_only`, `Columns.clears`: whether each reply clears
`Recovery.tried`, found by calling `replied` itself; a run's start always clears it; nothing asks
`may_retry` in a span). Otherwise, or when the state holds a value of another type, `span` returns
None and `_span` walks the span; an event the C cannot take exactly, it leaves to `_span`, which goes
on from there. tests/replay/test_walk_span_native.py holds the runs equal to `_span`'s.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import Any

from sessiontools.policies.base import Policy, count_plus, count_plus_quarter, count_usage_alone
from sessiontools.policies.recovery import Recovery
from sessiontools.replay import walk_plain
from sessiontools.replay.records import CheckAt, RequestPoint, TruthSource

try:
    from sessiontools.read._native import walk_span as _c_span
except ImportError:  # the extension is optional: `_span` walks every span
    _c_span = None

#: Set False to walk every span by `walk_plain._span` (the tests' other side).
ENABLED = True


#: The `count_columns` combines the C does: 0 last + terms, 1 last + terms / 4, 2 float(last) (last is
#: a float here).
_COMBINE: dict[Any, int] = {count_plus: 0, count_plus_quarter: 1, count_usage_alone: 2}


def fires_op(policy: Any) -> int | None:
    """How the C does the policy's `fires`: 0 `count > T`, 1 `count >= T` (`Policy.fires_at_threshold`);
    None when the policy has its own `fires`."""
    if type(policy).fires is not Policy.fires:
        return None
    return 1 if policy.fires_at_threshold is True else 0 if policy.fires_at_threshold is False else None


def span_recovery(t: type) -> bool:
    """Whether the C takes recovery class `t`: one that says so itself (`Recovery.clears_only`), its
    `run_started` the base's (clears `tried`)."""
    return vars(t).get("clears_only") is True and t.run_started is _RUN_STARTED


_RUN_STARTED = Recovery.run_started
_EXACT = 1 << 53  # every int below it is a double exactly
_INF = float("inf")


def _int(v: Any, lo: int = -_EXACT, hi: int = _EXACT) -> bool:
    return type(v) is int and lo <= v < hi


def _ints(col: list[Any], lo: int = -_EXACT, hi: int = _EXACT) -> bool:
    """Every value of `col` an exact int in [lo, hi) (a column at once: the common case)."""
    return not col or (set(map(type, col)) == {int} and lo <= min(col) and max(col) < hi)


def _num(v: Any) -> float | None:
    """`v` as the double the C compares, when that is exact (an exact float, a small exact int)."""
    if type(v) is float:
        return v
    return float(v) if _int(v) else None


def columns(walk: Any, p: walk_plain.Plain) -> Columns | None:
    """The grid's packed columns, or None where the C takes no span of it."""
    if _c_span is None:
        return None
    fires_ge = fires_op(walk.policy)
    op = -1 if p.terms is None else _COMBINE.get(p.combine)
    g = walk.grid
    if (fires_ge is None or op is None or not set(map(type, g.work_tokens)) <= {float} or not _ints(g.work)
            or (p.terms is not None and not _ints(p.terms, -(1 << 52), 1 << 52))):
        return None
    return Columns(walk, p, fires_ge, op)


class Columns:
    """A grid's `Plain` columns as the C reads them (module docstring)."""

    def __init__(self, walk: Any, p: walk_plain.Plain, fires_ge: int, op: int) -> None:
        g = walk.grid
        starts, nw, n = g.run_starts, len(g.work), len(g.events)
        self.fires_ge, self.op, self.stop, self.policy = fires_ge, op, p.stop, walk.policy
        self.idx_obj = [ev.index for ev in g.events]
        cols = (self.idx_obj, p.k, p.usage_at, p.lo_at, p.output)
        if (_ints(cols[0]) and _ints(p.k, 0, max(nw, 1)) and _ints(p.usage_at) and _ints(p.lo_at, 0, nw + 1)
                and _ints(p.output) and set(map(type, p.prompt)) <= {float}):
            # Every event safe, checked a column at once (measured on s0049's grid: the packing 0.35 ms
            # a grid, by the loop below 0.6).
            flags = bytes([(9 | (2 if s else 0) | (4 if e else 0)) if o else 0
                           for o, s, e in zip(p.ok, starts, p.last, strict=False)] + [0])
            q = [array("q", [*c, 0]).tobytes() for c in cols]
            self._pack(walk, p, q, array("d", [*p.prompt, 0.0]).tobytes(), flags)
            return
        flags = bytearray(n + 1)
        idx, k, uat, lo, out, prompt = ([0] * n for _ in range(6))
        for j in range(n):
            if not p.ok[j]:
                continue
            ev = g.events[j]
            vals = (ev.index, p.k[j], p.usage_at[j], p.lo_at[j], p.output[j])
            safe = (_int(vals[0]) and _int(vals[1], 0, nw) and _int(vals[2]) and _int(vals[3], 0, nw + 1)
                    and _int(vals[4]) and type(p.prompt[j]) is float)
            flags[j] = 1 | (2 if starts[j] else 0) | (4 if p.last[j] else 0) | (8 if safe else 0)
            if safe:
                idx[j], k[j], uat[j], lo[j], out[j] = vals
                prompt[j] = p.prompt[j]
        q = [array("q", c + [0]).tobytes() for c in (idx, k, uat, lo, out)]
        self._pack(walk, p, q, array("d", prompt + [0.0]).tobytes(), bytes(flags))

    def _pack(self, walk: Any, p: walk_plain.Plain, q: list[bytes], prompt: bytes, flags: bytes) -> None:
        g = walk.grid
        self.head = (*q, prompt, flags)
        self.tail = (array("q", g.work).tobytes(), array("d", g.work_tokens).tobytes(),
                     None if p.terms is None else array("q", p.terms).tobytes(),
                     self.idx_obj, p.k, p.ids, p.stamps, p.output, p.usage_at, p.prompt, g.work,
                     RequestPoint, CheckAt, TruthSource.RECORDED, TruthSource.MODEL)
        self._by_recovery: dict[type, tuple[Any, ...] | None] = {}

    def packed(self, rec: Any) -> tuple[Any, ...] | None:
        """The columns with those of recovery `rec`'s kind (`clears`), or None: not one the C does."""
        t = type(rec)
        if t not in self._by_recovery:
            self._by_recovery[t] = None
            clears = self.clears(rec)
            if clears is not None:
                self._by_recovery[t] = (*self.head, clears, *self.tail)
        return self._by_recovery[t]

    def clears(self, rec: Any) -> bytes | None:
        """Per event, whether the agent's recovery (of `rec`'s kind) is clear after `replied` of its
        stop reason, whatever it was before: a fresh recovery of the policy's, asked event by event."""
        t = type(rec)
        if not span_recovery(t):
            return None
        probe = self.policy.recovery()  # (the walk's recovery is its policy's too: `_Walk`)
        if type(probe) is not t or getattr(rec, "policy", self.policy) is not self.policy:
            return None
        out = bytearray(len(self.stop) + 1)
        for j, stop in enumerate(self.stop):
            probe.tried = True
            probe.replied(stop)
            out[j] = not probe.tried
        return bytes(out)

    def span(self, walk: Any, p: walk_plain.Plain, n: int) -> int | None:
        """`walk_plain._span(walk, p, n)` by the C; None: not taken (nothing done)."""
        cols = self.packed(walk.recovery) if ENABLED else None
        if cols is None:
            return None
        users, r = walk.by_user, walk.run
        limit = walk.path.compactions[users[walk.next_user]].index if walk.next_user < len(users) else _INF
        nums = (_num(walk.T), _num(walk.W), _num(limit), *map(_num, walk_plain._recorded_between(walk)))
        if None in nums:
            return None
        resume, kept, last, acc = walk.resume, walk.prefix_truth, walk.last_usage, walk._ctx_sum
        hi, val = (acc[2], acc[3]) if acc[0] == resume and acc[1] == kept else (resume, kept)
        flags = (bool(p.between) | bool(p.run_end) << 1 | bool(walk.prefix_until_prompt) << 2
                 | bool(walk.truth.anchored) << 3 | self.fires_ge << 4)
        res = _c_span(cols, n, nums, flags, self.op, walk.off_from, resume, max(walk.prefix) if walk.prefix else -1,
                      kept, walk.truth.overhead + walk.summary, hi, val, walk.anchor, last,
                      bisect_right(walk.work, last[0]) if last is not None else 0, walk.pending_thrash,
                      r.requests, r.check_counts, len(r.compactions), r.peak_truth, r.billed_input, r.output_tokens)
        if res is None:
            return None
        j, handoff, walk.anchor, walk.last_usage, hi, val, points, over, mid, *rest = res
        r.peak_truth, r.billed_input, r.output_tokens, cleared, first, reply, pending, thrash = rest
        walk._ctx_sum = (resume, kept, hi, val)
        r.check_points += points
        r.check_points_over += over
        r.late += over  # no check point in a span fires
        r.mid_run_crossings += mid
        if thrash:  # the compaction before the span's first check point was in vain (`CheckStep.checked`)
            walk.pending_thrash.thrash = True
            r.thrash += 1
        walk.pending_thrash = pending
        if cleared:
            walk.recovery.tried = False
        if first >= 0:
            walk.run_start = bisect_right(walk.work, p.end[first - 1] if first else -1)
        if reply is not None:
            walk.reply = reply
        return walk_plain._span(walk, p, j) if handoff else j
