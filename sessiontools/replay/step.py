"""The check point of a compaction rule, classified once (`replay.walk` and its bulk paths).

At a check point the walk knows the truth of the context and the policy's own verdict (`Policy.fires`).
`CheckStep.checked` counts the point (peak truth, over the threshold, the thrash of the compaction
before it) and `CheckStep.settled` what came of it: a threshold compaction at or below the threshold
is `early`; a point over the threshold where the policy does not compact, or whose compaction fails,
is `late`.
"""

from __future__ import annotations

from sessiontools.replay.records import ReplayRun, SimCompaction


class CheckStep:
    """The run's counters of check points, shared by the walks (they set `run`)."""

    run: ReplayRun
    #: The newest compaction, until the next check point tells whether it was in vain (`thrash`).
    pending_thrash: SimCompaction | None

    def checked(self, truth_now: float, threshold: float) -> bool:
        """Count a check point whose context's truth is `truth_now`; whether it is over the threshold."""
        r = self.run
        r.check_points += 1
        if truth_now > r.peak_truth:  # the peak is the largest truth reported anywhere
            r.peak_truth = truth_now
        over = truth_now > threshold
        pending = self.pending_thrash
        if pending is not None:
            if over:
                pending.thrash = True
                r.thrash += 1
            self.pending_thrash = None
        if over:
            r.check_points_over += 1
        return over

    def settled(self, fired: bool, sc: SimCompaction | None, over: bool) -> None:
        """What came of a check point: the policy fired (and compacted, `sc`, or failed: None) or not."""
        r = self.run
        if fired:
            if sc is not None and sc.early:
                r.early += 1
            if sc is None and over:
                r.late += 1
        elif over:
            r.late += 1
