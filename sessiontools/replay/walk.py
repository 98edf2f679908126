"""Replay any compaction `Policy` over any agent's `TranscriptPath`, into the one run record (`ReplayRun`).

The workload is the path's messages without the recorded compactions' summary messages, in order;
the model calls are the path's real requests (`TranscriptPath.requests`: pseudo-replies, aborted and
failed calls are not among them), its rejections (`overflows`) and the calls answered without a usage
the agent trusts (`unusable`: aborted, or an error that is no overflow; billed at the truth of their
context, never the newest usage, and counted after a run's final one by `Policy.unusable_count`).
A run starts at a user message. Walking the calls:

- before a request: `BEFORE_SAMPLING` (a run's first request) and `BETWEEN_TURNS` (the others) are
  check points; after a run's final reply: `RUN_END`;
- the truth U of a request is its recorded usage while the simulated context is the recorded one,
  else `NeutralTruth` (`replay.neutral`). One rule says when it is (`_Walk.diverged`): when the
  newest compaction reproduces the recording's newest before the request exactly (made by the
  policy's own compactor at the recorded place with the recorded first kept entry: what follows is
  the recorded context, whatever came before: Pi's exact walk's rule), or else when no recorded
  compaction so far was missed and none made at no recorded place (a rule whose kept messages the
  walk cannot prove equal to the recording's);
- at a check point the policy's `count` sees the newest usage total the agent would have (U + output
  of its newest reply since the last compaction) and the (chars, bytes) of the messages after it;
  it compacts when `fires(count, threshold)`: the policy's `keep` chooses which messages stay, and a
  summary of `summary_tokens` replaces the rest; a policy with its own compactor for the path
  (`Policy.compactor`: Pi's `prepareCompaction` on the entries a Pi transcript carries) decides the
  kept messages, tokens before, summarisation request and summary instead. The summarisation request sends the context; a
  policy that trims its summarisation request (`Policy.trims_summary_request`: Codex, Claude Code)
  drops the oldest items until it fits (billed at the window), any other's is rejected (an
  overflow) and the compaction fails (`ReplayRun.failed_compactions`, the context left as it was);
- U > W is an overflow: a reactive policy compacts and retries when its `Policy.recovery` allows, else the
  request fails (counted, not billed); a rejection recorded in the recorded context whose truth fits
  W is a provider rejection (`provider_rejections`), handled the same way but not an overflow;
- recorded compactions the user or an extension made (trigger `manual`, writer `hook`) are applied
  where they were recorded, with their recorded kept messages and summary, whatever the policy.

A grid's settings take the events before their first of their own from one shared trace
(`replay.walk_bulk`), and spans of plain requests, after compactions too, in one pass over the grid's
columns (`replay.walk_plain`); the step walks the rest.

The run has every counter, request point and compaction Pi's exact walk had (deleted in session 10;
`tests/replay/test_walk_reference.py` keeps its answers), so
pricing, the cache model, the timeline and the invariants (`replay.invariants`) serve every agent.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import replace
from functools import reduce
from operator import add
from typing import Any

from sessiontools.policies.base import (
    CheckPoint,
    CountView,
    GivenSummary,
    Policy,
    PolicySettings,
)
from sessiontools.replay.neutral import NeutralTruth, fit_neutral_truth
from sessiontools.replay.path_grid import PathGrid
from sessiontools.replay.records import (
    CheckAt,
    CompactionReason,
    RecordedMatch,
    ReplayRun,
    ReplaySettings,
    RequestPoint,
    SimCompaction,
    TruthSource,
)
from sessiontools.replay.walk_compact import CompactionStep
from sessiontools.transcript.model import Overflow, Request, Role, TranscriptPath, UnusableReply


class _Walk(CompactionStep):
    def __init__(self, path: TranscriptPath, policy: Policy, settings: ReplaySettings, truth: NeutralTruth,
                 grid: PathGrid | None = None) -> None:
        self.path, self.policy, self.settings, self.truth = path, policy, settings, truth
        g = self.grid = grid if grid is not None and grid.fits(path, policy, truth) else PathGrid(path, policy, truth)
        self.s = policy_settings(settings)
        self.T = settings.threshold
        self.W = settings.context_window
        self.changes = settings.window_changes  # each model's window from its first request (`window_at`)
        self.work, self.pos_of, self.recorded = g.work, g.pos_of, g.recorded
        self.tokens_of, self.size_of = g.tokens_of, g.size_of
        self.prefix: tuple[int, ...] = ()  # kept messages of the newest simulated compaction
        self.prefix_truth = 0.0  # their truth, added in order
        self.prefix_sizes: list[tuple[int, int]] = []  # their (chars, bytes)
        self.prefix_until_prompt = False  # they leave the context at the next user prompt (`Kept`)
        self.resume = 0  # work position from which messages follow the prefix
        self.summary = 0.0  # truth of the simulated summary (0 before any)
        self.sizes: Sequence[float | None] = ()  # the n-th summary's truth when the caller knows it
        self.resized = False  # a compaction got the caller's summary (not the recorded one)
        self.keep_path = False  # the run keeps the agent's own simulated path (`resummarize`)
        self.before_start = g.before_start
        self.matched: set[int] = set(g.before_start)  # positions in `recorded` reproduced so far
        self.by_user, self.by_user_set = g.by_user, g.by_user_set
        self.next_user = 0
        self.unmatched = 0  # simulated compactions at no recorded place
        #: The recorded compaction the simulated context's newest compaction reproduces exactly (the
        #: policy's own compactor made it with the recorded first kept entry, or it is a recorded one
        #: applied under such a compactor): its position in `recorded`; None: none (`diverged`).
        self.exact: int | None = None
        self.last_usage: tuple[int, float] | None = None  # (last message of the reply, usage total)
        #: (message index, prompt, output, recorded) of the newest answered reply (a compaction keeps
        #: it: its usage stays on the agent's path), for the policy's own compactor (`Policy.compactor`: Pi's prepareCompaction on Pi's entries).
        self.reply: tuple[int, float, int, bool] | None = None
        self.compactor = policy.compactor(path, truth, self.s)
        self.starts = g.starts
        self.run_start = 0  # work position where the current run's input begins
        self.run = ReplayRun(settings)
        self.recovery = policy.recovery()  # the agent's rule after a rejected request (`Policy.recovery`)
        self.off_from = g.off_from  # message index where auto-compact was off
        self.pending_thrash: SimCompaction | None = None
        #: (work position, recorded prompt) of the newest request answered in the recorded context
        #: since the last compaction (`truth_at`); None after a compaction.
        self.anchor: tuple[int, float] | None = None
        self.applied: set[int] = set()  # recorded user compactions applied (`apply_user`)
        #: The newest running sums of `truth_at` (work positions [lo, hi) after a start), extended in
        #: order as the walk moves on: (lo, start, hi, value).
        self._ctx_sum: tuple[int, float, int, float] = (0, 0.0, 0, 0.0)
        self._anchor_sum: tuple[int, float, int, float] = (0, 0.0, 0, 0.0)
        self.plain: Any = None  # the grid's columns for runs of plain requests (`replay.walk_plain`); False: none

    def set_prefix(self, kept: tuple[int, ...], resume: int) -> None:
        """The newest compaction keeps `kept` and the workload follows from work position `resume`."""
        self.prefix, self.resume = kept, resume
        self.prefix_truth = reduce(add, map(self.tokens_of, kept), 0.0)
        self.prefix_sizes = list(map(self.size_of, kept))

    def _running(self, acc: tuple[int, float, int, float], lo: int, start: float, hi: int) -> tuple[int, float, int, float]:
        """`start` plus the truth of work positions [lo, hi), from the running sum `acc` when it is one
        of the same (lo, start) that has not gone past `hi` (the same additions in the same order)."""
        hi = max(hi, lo)
        if acc[0] == lo and acc[1] == start and acc[2] <= hi:
            return lo, start, hi, self.grid.work_sum(acc[2], hi, acc[3])
        return lo, start, hi, self.grid.work_sum(lo, hi, start)

    def context(self, upto: int) -> list[int]:
        """Message indices of the simulated context before work position `upto`."""
        return [*self.prefix, *self.work[self.resume:upto]]

    def truth_at(self, upto: int, index: int | None = None) -> float:
        """Truth of the simulated context before work position `upto`: while it is the recorded one,
        the newest recorded prompt plus the messages since (an agent's unrecorded edits, such as
        cleared tool results, are in that prompt), else the truth model's sum. `index`: the message
        whose context it is (a request's own), when a recorded compaction may lie between it and the
        last message before `upto`; by default that last message (a check point, which decides the
        compaction recorded right there)."""
        a = self.anchor
        at = index if index is not None else (self.work[upto - 1] if upto else 0)
        if a is not None and a[0] <= upto and self.truth.anchored and not self.diverged(at):
            acc = self._anchor_sum = self._running(self._anchor_sum, a[0], 0.0, upto)
            return a[1] + acc[3]
        acc = self._ctx_sum = self._running(self._ctx_sum, self.resume, self.prefix_truth, upto)
        t = self.truth
        return t.overhead + self.summary + acc[3]

    def view(self, upto: int) -> CountView:
        work_sizes, resume = self.grid.work_sizes, self.resume
        size = [*self.prefix_sizes, *work_sizes[resume:upto]]
        # The context's messages only for a rule that reads them (Codex's past reasoning).
        msgs = [self.path.messages[i] for i in self.context(upto)] if self.policy.count_reads_messages else ()
        if self.last_usage is None:
            if self.compactor is not None:  # the agent's own count of a context without usage (Pi's summary)
                size = list(self.compactor.context_sizes(self.context(upto), size))
            return CountView(None, (), size, msgs)
        last = self.last_usage[0]
        trailing = [sz for i, sz in zip(self.prefix, self.prefix_sizes, strict=True) if i > last]
        trailing += work_sizes[bisect_right(self.work, last, resume, max(upto, resume)):upto]
        return CountView(self.last_usage[1], trailing, size, msgs)

    def diverged(self, index: int) -> bool:
        """Whether the simulated context before message `index` differs from the recorded one."""
        if self.resized:
            return True
        if self.exact is not None and self.exact == bisect_left(self.recorded, index) - 1:
            # Its newest compaction is the recording's newest before `index`, reproduced exactly: what
            # follows it is the recorded context, whatever came before (Pi's exact walk's rule).
            return False
        missed = any(r < index and k not in self.matched for k, r in enumerate(self.recorded))
        return self.unmatched > 0 or missed

    def check(self, upto: int, after: UnusableReply | None = None, before_call: bool = False) -> float:
        """A check point: classify it (over T, late, thrash) and compact when the policy fires; the count.
        `after`: the run's final reply, when its usage is not one the agent trusts (`Policy.unusable_count`);
        `before_call`: the check before the model call at `upto` (not after a run's final reply)."""
        r = self.run
        truth_now = self.truth_at(upto)
        over = self.checked(truth_now, self.T)
        view = self.view(upto)
        count = self.policy.count(view) if after is None else self.policy.unusable_count(view, after)
        if r.requests and r.requests[-1].policy_count is None:  # the check point after that request: its count
            r.requests[-1] = r.requests[-1]._replace(policy_count=count)
        work = self.work
        r.check_counts.append(CheckAt(work[min(upto, len(work)) - 1] if upto > 0 and work else -1, count, truth_now,
                                      len(r.requests)))
        fired = self.policy.fires(count, self.T) and not self.switched_off(upto)
        sc = self.compact(CompactionReason.THRESHOLD, upto, truth_now, view, count, before_call) if fired else None
        self.settled(fired, sc, over)
        return count

    def window_at(self, index: int) -> None:
        """The window and threshold of the model that answers the call at message `index` (the session
        switched models, `ReplaySettings.window_changes`): the policy's threshold at that window."""
        self.W = self.settings.window_at(index)
        self.T = self.policy.threshold(replace(self.s, context_window=self.W))

    def switched_off(self, upto: int) -> bool:
        """Whether the check point before work position `upto` lies where the recording shows the
        agent's threshold compaction switched off (`Policy.threshold_off_from`)."""
        return self.off_from is not None and (upto >= len(self.work) or self.work[upto] >= self.off_from)

    def _before(self, k: int, first: bool) -> None:
        """The policy's check point before a request at work position k, if it has one there."""
        cps = self.policy.check_points
        if CheckPoint.BEFORE_SAMPLING in cps and first:
            msgs = self.path.messages
            new = [msgs[i] for i in self.work[self.run_start:k]]
            before = msgs[new[0].index - 1] if new and new[0].index > 0 else None
            self.check(self.run_start + self.policy.pre_turn_recorded(new, before), before_call=True)
        elif CheckPoint.BETWEEN_TURNS in cps and not first:
            self.check(k, before_call=True)

    def _point(self, index: int, u: float, source: TruthSource, overflow: bool, output: int, same: bool) -> None:
        m = self.path.messages[index] if 0 <= index < len(self.path.messages) else None
        self.run.requests.append(RequestPoint(index, m.id if m else None, u, source, None, overflow, output,
                                              m.timestamp if m else None, len(self.run.compactions), same))

    def request(self, req: Request | UnusableReply, first: bool, last: bool) -> None:
        """A model call: answered with a usage (`Request`), or without one the agent trusts
        (`UnusableReply`: its truth is the model's whatever the context)."""
        k = self.pos_of.get(req.index, 0)
        if self.changes:
            self.window_at(req.index)
        self._before(k, first)
        same = not self.diverged(req.index)
        usage = req.usage if isinstance(req, Request) else None
        if same and usage is not None:
            u, source = float(usage.prompt), TruthSource.RECORDED
        else:
            u, source = self.truth_at(k, req.index), TruthSource.MODEL
        output = usage.output if usage is not None else req.output  # type: ignore[union-attr]
        r = self.run
        if u > self.W:
            if not self.reject(req.index, u, source, k):
                self.failed(k, req.index, u, output, last, False)
                return
            u, source, same = self.truth_at(k), TruthSource.MODEL, False
            if u > self.W:  # the retry is rejected too
                r.rejected(u, self.W)
                r.failed_recoveries += 1
                self.failed(k, req.index, u, output, last, True)
                return
        elif u > self.T and not first:
            r.mid_run_crossings += 1
        self.recovery.replied(req.stop_reason)
        if isinstance(req, UnusableReply):
            self.unusable(k, req, u, last, same)
        else:
            self.answered(k, req.index, u, output, last, source, same)

    def unusable(self, k: int, reply: UnusableReply, u: float, last: bool, same: bool) -> None:
        """A call answered without a usage the agent trusts (aborted, or an error that is no overflow):
        billed at the truth `u` of its context, a request point; the newest usage the agent has stays
        the one before it, and its count at the check after a run's final reply is the policy's
        (`Policy.unusable_count`)."""
        r = self.run
        self._peak(u)
        r.billed_input += u
        r.output_tokens += reply.output
        self._point(reply.index, u, TruthSource.MODEL, False, reply.output, same)
        if last and CheckPoint.RUN_END in self.policy.check_points:
            self.check(k + 1, reply)

    def failed(self, k: int, index: int, u: float, output: int, last: bool, point: bool) -> None:
        """A request the provider rejected with the agent's recovery spent (`point`: a retry, not yet
        a request point). Where the policy keeps it as a reply (`Policy.failed_reply_counts`), its
        rejected prompt and output are the newest usage and the run's final check follows it."""
        if not self.policy.failed_reply_counts:
            return
        if point:
            self._point(index, u, TruthSource.MODEL, True, output, False)
        self.reply = (index, u, output, False)
        self.last_usage = (index, u + output)
        if last and CheckPoint.RUN_END in self.policy.check_points:
            self.check(k + 1)

    def answered(self, k: int, index: int, u: float, output: int, last: bool, source: TruthSource,
                 same: bool) -> None:
        """A request the provider answered (prompt U, `output` tokens out)."""
        r = self.run
        self._peak(u)
        r.billed_input += u
        r.output_tokens += output
        self._point(index, u, source, False, output, same)
        if source == TruthSource.RECORDED:
            self.anchor = (k, u)
        self.reply = (index, u, output, same)
        self.last_usage = (index if self.policy.counts_own_reply else self.grid.reply_end(index), u + output)
        if last and CheckPoint.RUN_END in self.policy.check_points:
            self.check(k + 1)

    def overflow(self, ovf: Overflow, first: bool, last: bool) -> None:
        """A request the provider rejected in the recording. In a changed context its truth decides (it
        may fit); in the recorded one the provider rejects it again: an overflow when its truth (the
        provider's own count, when the error gave one) exceeds W, else a provider rejection."""
        k = self.pos_of.get(ovf.index, 0)
        if self.changes:
            self.window_at(ovf.index)
        self._before(k, first)
        if self.diverged(ovf.index):
            u, source = self.truth_at(k, ovf.index), TruthSource.MODEL
            if u <= self.W:
                # Answered, by a reply the file never recorded: on the agent's path with the usage the
                # provider would report (its omission edits, the agent's recovery, are not).
                self.recovery.replied(None)
                self.answered(k, ovf.index, u, 0, last, source, False)
                return
        elif ovf.provider_tokens:
            u, source = float(ovf.provider_tokens), TruthSource.PROVIDER
        else:
            u, source = self.truth_at(k), TruthSource.MODEL
        # The failed attempt is on the agent's path when it compacts (it is summarised or dropped).
        if self.compactor is not None:
            self.compactor.rejected(ovf.index)
        self.reject(ovf.index, u, source, k + 1, ovf.provider_limit)

    def reject(self, index: int, u: float, source: TruthSource, upto: int, stated_limit: int | None = None) -> bool:
        """The provider rejects the request at message `index` (an overflow, or a provider rejection
        below the window, `ReplayRun.rejected`); a reactive policy compacts before work position `upto`.
        Whether it compacted (the request is retried)."""
        r = self.run
        r.rejected(u, self.W, stated_limit)
        self._point(index, u, source, True, 0, False)
        if not self.recovery.may_retry():
            r.failed_recoveries += 1
            return False
        self.recovery.retrying()
        self.compact(CompactionReason.OVERFLOW, upto, u, self.view(upto))
        return True

    def _trailing_check(self, prev: int) -> None:
        """The agent's check point before a request the file does not hold: an agent's own recorded
        compaction after the last request (it checks before sampling, and the file ends with the
        compaction) is where it checked; no other check point of the walk is there. A policy that checks
        after the run's final reply (`RUN_END`, Pi) checked there already."""
        cps = self.policy.check_points
        if CheckPoint.RUN_END in cps or not {CheckPoint.BEFORE_SAMPLING, CheckPoint.BETWEEN_TURNS} & cps:
            return
        tail = [k for k, rec in enumerate(self.recorded)
                if rec >= prev and k not in self.matched and k not in self.by_user_set]
        if not tail:
            return
        c = self.path.compactions[tail[0]]
        self.user_compactions(c.index)
        rec = self.recorded[tail[0]]
        msgs = self.path.messages
        first = any(msgs[i].role == Role.USER for i in self.work if prev < i <= rec)
        if first:
            self.run_start = bisect_right(self.work, prev)
        self._before(bisect_right(self.work, rec), first)

    def walk(self) -> ReplayRun:
        g = self.grid
        events, starts, ends, ends_run = g.events, g.run_starts, g.ends, g.ends_run
        from sessiontools.replay.walk_bulk import fast_forward  # (its trace is a `_Walk`)
        from sessiontools.replay.walk_plain import plain_run

        # The events the grid's other settings walked alike (`replay.walk_bulk`), then runs of plain
        # requests in bulk (`replay.walk_plain`); neither under window changes, whose threshold moves
        # with the model.
        n = 0 if self.changes else fast_forward(self)
        prev = ends[n - 1] if n else -1
        while n < len(events):
            m = n if self.changes else plain_run(self, n)
            if m > n:
                n, prev = m, ends[m - 1]
                continue
            ev = events[n]
            self.user_compactions(ev.index)
            if starts[n]:
                self.recovery.run_started()
                self.run_start = bisect_right(self.work, prev)
                if self.prefix_until_prompt and any(self.policy.new_process(self.path.messages[i])
                                                    for i in self.work[self.run_start:self.pos_of.get(ev.index, 0)]
                                                    if self.path.messages[i].role == Role.USER):
                    # The recorded prompts so far measured a context holding them: no anchor until
                    # the next recorded one (`truth_at`).
                    self.set_prefix((), self.resume)
                    self.prefix_until_prompt, self.anchor = False, None
            prev = ends[n]
            if isinstance(ev, Overflow):
                self.overflow(ev, starts[n], ends_run[n])
            else:
                self.request(ev, starts[n], ends_run[n])
            n += 1
        self._trailing_check(prev)
        self.user_compactions(len(self.path.messages) + 1)  # a /compact after the last request
        r = self.run
        users = set(self.by_user)
        # The policy's compactions that reproduce a recorded one (a compactor's plan: its tokens before too).
        own = [c for c in r.compactions if c.reason != CompactionReason.USER]
        matched, policy = sum(1 for c in own if c.matches_recorded), len(own)
        r.recorded_match = RecordedMatch(len(self.recorded) - len(users | self.before_start), matched, policy - matched)
        if self.keep_path and self.compactor is not None:
            r.path = self.compactor.simulated_path()
        return r


def policy_settings(s: ReplaySettings) -> PolicySettings:
    """The `PolicySettings` a policy reads, from a replay setting."""
    return PolicySettings(s.context_window, s.reserve_tokens, s.keep_recent_tokens, s.extra)


def replay_settings(policy: Policy, window: int, reserve: int = 0, keep: int = 0,
                    extra: tuple[tuple[str, object], ...] = ()) -> ReplaySettings:
    """A replay setting of `policy`, its threshold the policy's own."""
    t = policy.threshold(PolicySettings(window, reserve, keep, extra))
    return ReplaySettings(window, reserve, keep, policy.name, extra=extra, policy_threshold=t)


def simulate_path(path: TranscriptPath, policy: Policy, settings: ReplaySettings | PolicySettings,
                  truth: NeutralTruth | None = None, summary_sizes: Sequence[float | GivenSummary | None] = (),
                  grid: PathGrid | None = None, keep_path: bool = False) -> ReplayRun:
    """Replay `policy` over `path` under `settings` (see the module docstring; a `PolicySettings` or a
    setting without the policy's threshold gets the policy's own). `summary_sizes`: the n-th
    compaction's summary where the caller knows it (`resummarize`'s regenerated summaries: its truth,
    or its text and truth, which the policy's own compactor counts from then on); `keep_path`: the run
    keeps the policy's compactor's simulated path of the agent's own records (`ReplayRun.path`)."""
    if isinstance(settings, PolicySettings) or (settings.policy_threshold is None and not settings.window_changes):
        settings = replay_settings(policy, settings.context_window, settings.reserve_tokens,
                                   settings.keep_recent_tokens, settings.extra)
    walk = _Walk(path, policy, settings, truth or fit_neutral_truth(path), grid)
    walk.sizes = tuple(summary_sizes)
    walk.keep_path = keep_path
    return walk.walk()
