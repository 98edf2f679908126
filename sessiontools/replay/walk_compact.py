"""The compactions of the transcript walk (`replay.walk`): the policy's own (by its compactor,
`Policy.compactor`, or by `keep_for` on the neutral messages), the summarisation request that may
fail, the summary's size, and the recorded compactions of the user or an extension applied where
they were recorded. A mixin of `replay.walk._Walk`: it reads and sets the walk's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.policies.base import (
    CompactionAsk,
    Compactor,
    CountView,
    GivenSummary,
    Kept,
    Plan,
    Policy,
    PolicySettings,
)
from sessiontools.replay.neutral import NeutralTruth
from sessiontools.replay.path_grid import PathGrid
from sessiontools.replay.records import CompactionReason, ReplayRun, SimCompaction, TruthSource
from sessiontools.replay.step import CheckStep
from sessiontools.transcript.model import TranscriptPath


class CompactionStep(CheckStep):
    """How the walk compacts (see the module docstring); the state is `replay.walk._Walk`'s."""

    path: TranscriptPath
    policy: Policy
    truth: NeutralTruth
    grid: PathGrid
    s: PolicySettings
    T: int
    W: int
    work: list[int]
    pos_of: dict[int, int]
    recorded: list[int]
    matched: set[int]
    by_user: list[int]
    by_user_set: frozenset[int]
    applied: set[int]
    next_user: int
    unmatched: int
    exact: int | None
    sizes: Sequence[float | GivenSummary | None]
    resized: bool
    summary: float
    prefix_until_prompt: bool
    last_usage: tuple[int, float] | None
    anchor: tuple[int, float] | None
    reply: tuple[int, float, int, bool] | None
    compactor: Compactor | None
    run: ReplayRun
    tokens_of: Any  # message index -> its truth (`PathGrid.tokens_of`)
    # and the walk's `context`, `truth_at`, `view` and `set_prefix`

    def _peak(self, u: float) -> None:
        if u > self.run.peak_truth:  # the peak is the largest truth reported anywhere
            self.run.peak_truth = u

    def compact(self, reason: CompactionReason, upto: int, truth_now: float, view: CountView,
                count: float | None = None, before_call: bool = False) -> SimCompaction | None:
        """Compact before work position `upto` (`count`: the policy's count there, when it is not
        `Policy.count` of `view`; `before_call`: right before the model call there, `CompactionAsk`);
        None when the summarisation request fails."""
        ctx = self.context(upto)
        after = ctx[-1] if ctx else -1
        r = self.run
        hit = next((k for k, rec in enumerate(self.recorded) if rec == after and k not in self.matched), None)
        if hit is not None and hit in self.by_user_set:
            # The user (or an extension) compacted right here in the recording: that compaction is
            # applied, the policy's is not made on top of it.
            return self.apply_user(hit, upto)
        plan = self._plan(reason, ctx, after, before_call or reason == CompactionReason.OVERFLOW)
        if isinstance(plan, str):
            return None
        if plan is not None:
            kept, sum_in, hit = Kept(plan.kept), plan.summarization_input, plan.recorded
        else:
            kept = self.policy.keep_for(reason.value, self.grid.candidates(ctx), self.s)
            if self.policy.summary_request_sends_kept:
                sum_in = truth_now  # the context (and the summary prompt)
            else:  # the summarised messages and the previous summary
                keep = set(kept.indices)
                sum_in = self.summary + sum(self.tokens_of(i) for i in ctx if i not in keep)
        if sum_in > self.W and hit is not None:
            sum_in = float(self.W)  # the agent recorded this compaction: its summariser's prompt fitted
        elif sum_in > self.W:
            if not self.policy.trims_summary_request:
                r.overflows += 1  # the provider rejects the summarisation request
                self._peak(sum_in)
                failed = self._record(reason, after, kept.indices if plan is not None else (), view, truth_now, sum_in,
                                      0.0, False, count=count)
                if plan is not None:  # what the agent's code would have compacted (its summariser was rejected)
                    _planned(failed, plan)
                    failed.matches_recorded = False
                r.failed_compactions.append(failed)
                r.no_compaction.append(f"after {failed.parent_entry_id or 'the start'}: the summarisation request "
                                       f"({round(sum_in):,} tokens) is larger than the window ({self.W:,})")
                return None
            sum_in = float(self.W)  # the oldest items dropped until it fits
        if hit is None:
            self.unmatched += 1
            self.exact = None
        else:
            self.matched.add(hit)
            self.exact = hit if plan is not None else None
        n = len(r.compactions)  # a caller's summary for this compaction (`resummarize`), else the model's
        given = self.sizes[n] if n < len(self.sizes) else None
        text = given.text if isinstance(given, GivenSummary) else None
        if text is not None and plan is not None and self.compactor.keeps_recorded(plan, text):  # type: ignore[union-attr]
            given = text = None  # the recorded summary itself: the recorded context goes on
        if isinstance(given, GivenSummary):
            given = given.tokens if given.tokens is not None else self.truth.text_tokens(len(given.text))
        size = given if given is not None else self._summary_size(plan, upto)
        if given is not None:
            self.resized = True  # another summary than the recorded one: the context is no longer the recorded one
        sc = self._record(reason, after, kept.indices, view, truth_now, sum_in, size,
                          hit is not None, len(ctx) - len(kept.indices), count)
        if plan is not None:
            self.compactor.made(plan, summary=text)  # type: ignore[union-attr]
            _planned(sc, plan)
            if plan.recorded is not None and given is None:  # the recorded compaction, its summary taken
                sc.summary_source = TruthSource.RECORDED
        r.compactions.append(sc)
        r.summarization_input += sum_in
        r.summarization_output += sc.summarization_output_tokens
        self.pending_thrash = sc
        self.set_prefix(kept.indices, upto)
        self.summary = size
        self.prefix_until_prompt = kept.until_next_prompt
        # The newest reply keeps the usage the provider would have reported (`reply`): a kept reply
        # carries it into the next compaction's estimate, as on Pi's own path.
        self.last_usage = self.anchor = None
        return sc

    def _plan(self, reason: CompactionReason, ctx: list[int], after: int, before_call: bool) -> Plan | str | None:
        """The policy's own compactor's plan (`Policy.compactor`), a reason it makes none (noted), or
        None when the policy has no compactor (the walk keeps by `keep_for`)."""
        if self.compactor is None:
            return None
        recorded = tuple(k for k, rec in enumerate(self.recorded) if rec == after and k not in self.matched)
        plan = self.compactor.plan(CompactionAsk(reason.value, tuple(ctx), self.reply, recorded, before_call))
        if isinstance(plan, str):
            m = self.path.messages[after] if after >= 0 else None
            named = self.compactor.asked_after() or (m.id if m else None)
            self.run.no_compaction.append(f"after {named or 'the start'}: {plan}")
        return plan

    def _summary_size(self, plan: Plan | None, upto: int) -> float:
        """The new summary's truth: the recorded one's where the plan is a recorded compaction, the
        plan's own, else the policy's model (`summary_tokens`)."""
        if plan is not None and plan.recorded is not None:
            return self.recorded_summary(plan.recorded)
        if plan is not None and plan.summary_tokens is not None:
            return plan.summary_tokens
        return self.summary_tokens(upto)

    def recorded_summary(self, k: int) -> float:
        """The truth of recorded compaction k's summary, as its recorded usage tells it if it does."""
        own = self.compactor.recorded_summary(k) if self.compactor is not None else None
        if own is not None:
            return own
        c = self.path.compactions[k]
        got = self.truth.attributed.get(c.index)
        return got if got is not None else self.truth.text_tokens(len(c.summary or ""))

    def summary_tokens(self, upto: int) -> float:
        """The modelled summary of a compaction before work position `upto`, the policy's
        (`Policy.summary_tokens`) from the workload's tokens so far and the recorded compactions'."""
        g = self.grid
        return self.policy.summary_tokens(self.truth.summary_tokens, g.summary_points(), g.history[min(upto, len(g.work))])

    def _record(self, reason: CompactionReason, after: int, kept: tuple[int, ...], view: CountView, truth_now: float,
                sum_in: float, summary: float, matches: bool, summarized: int = 0,
                count: float | None = None) -> SimCompaction:
        msgs = self.path.messages
        m = msgs[after] if 0 <= after < len(msgs) else None
        return SimCompaction(
            reason=reason, parent_entry_id=m.id if m else None, parent_base_index=after,
            first_kept_entry_id=msgs[kept[0]].id if kept else None, first_kept_base_index=kept[0] if kept else -1,
            tokens_before=self.policy.tokens_before(view), truth_at_trigger=truth_now,
            count_at_trigger=self.policy.count(view) if count is None else count, is_split_turn=False, messages_summarized=summarized,
            turn_prefix_messages=0, kept_tokens=self._kept_tokens(kept), summary_tokens=summary,
            summary_source=TruthSource.MODEL, summarization_input_tokens=sum_in, summarization_output_tokens=summary,
            matches_recorded=matches, early=reason == CompactionReason.THRESHOLD and truth_now <= self.T, kept=kept)

    def _kept_tokens(self, kept: tuple[int, ...]) -> float:
        """The truth of the kept messages: by the prefix sums (`PathGrid.history`) when they are a run of
        workload positions, as the truth of the context is summed (the same float whichever walk)."""
        pos = self.grid.pos_of
        a, b = (pos.get(kept[0]), pos.get(kept[-1])) if kept else (None, None)
        if a is not None and b is not None and b - a + 1 == len(kept):
            h = self.grid.history
            return h[b + 1] - h[a]
        return sum(self.tokens_of(i) for i in kept)

    def user_compactions(self, before: int) -> None:
        """Apply the recorded user/extension compactions that come before message `before`."""
        while self.next_user < len(self.by_user) and self.path.compactions[self.by_user[self.next_user]].index < before:
            k = self.by_user[self.next_user]
            self.next_user += 1
            if k not in self.applied:
                c = self.path.compactions[k]
                self.apply_user(k, len([i for i in self.work if i < c.index]))

    def apply_user(self, k: int, upto: int) -> SimCompaction:
        """Apply recorded user/extension compaction `k` before work position `upto`, with its recorded
        kept messages and summary (the summary's tokens as its recorded usage tells them, if it does)."""
        c = self.path.compactions[k]
        self.applied.add(k)
        kept = tuple(i for a, b in c.kept for i in range(a, b) if i in self.pos_of)
        self.matched.add(k)
        self.exact = k if self.compactor is not None else None
        truth_now = self.truth_at(upto)
        self._peak(truth_now)
        summary = self.recorded_summary(k)
        sc = self._record(CompactionReason.USER, self.work[upto - 1] if upto else -1, kept, self.view(upto),
                          truth_now, 0.0, summary, True)
        sc.summarization_output_tokens = 0.0
        sc.tokens_before = c.tokens_before if isinstance(c.tokens_before, int) else 0
        self.run.compactions.append(sc)
        if self.compactor is not None:
            self.compactor.made(None, k, kept)
        self.set_prefix(kept, upto)
        self.summary, self.last_usage, self.anchor = summary, None, None
        self.prefix_until_prompt = False
        return sc


def _planned(sc: SimCompaction, plan: Plan) -> None:
    """A compaction's record as the agent's own code planned it (`Compactor.plan`)."""
    sc.tokens_before, sc.matches_recorded, sc.is_split_turn = plan.tokens_before, plan.matches_recorded, plan.is_split_turn
    sc.messages_summarized, sc.turn_prefix_messages = plan.messages_summarized, plan.turn_prefix_messages
    sc.preparation = plan.preparation
    if plan.parent_id is not None:
        sc.parent_entry_id = plan.parent_id
    if plan.first_kept_id is not None:
        sc.first_kept_entry_id = plan.first_kept_id
