"""Replay any compaction `Policy` over any agent's `TranscriptPath` (the generic, agent-neutral simulator).

The workload is the path's messages without the recorded compactions' summary messages, in order;
the requests are the path's real requests (`TranscriptPath.requests`: pseudo-replies, aborted and
failed calls are not among them). A run starts at a user message. Walking the requests:

- before a request: `BEFORE_SAMPLING` (a run's first request) and `BETWEEN_TURNS` (the others) are
  check points; after a run's final reply: `RUN_END`;
- the truth U of a request is its recorded usage while the simulated context is the recorded one
  (no compaction differs so far), else `NeutralTruth`: overhead + ratio * chars/4 of each message
  (+ the simulated summaries), fitted on the path's own requests with `tokens.fit.least_squares`;
- at a check point the policy's `count` sees the newest usage total the agent would have (U + output
  of its newest reply since the last compaction) and the (chars, bytes) of the messages after it;
  it compacts when `fires(count, threshold)`: the policy's `keep` chooses which messages stay, and a
  summary of `summary_tokens` replaces the rest;
- U > W is an overflow: a reactive policy compacts and retries (`retries_after_overflow`), else the
  request fails (counted, not billed);
- recorded compactions the user or an extension made (trigger `manual`, writer `hook`) are applied
  where they were recorded, with their recorded kept messages and summary, whatever the policy.

Pi's exact replay (`replay.simulate`) uses Pi's own cut and estimates on Pi sessions; this one is the
common ground for Codex and Claude Code policies and for cross-agent what-ifs.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.policies.base import Candidate, CheckPoint, CountView, Policy, PolicySettings, chars4
from sessiontools.replay.priors import TruthPrior
from sessiontools.replay.records import CompactionReason
from sessiontools.transcript.model import Message, Overflow, Request, Role, TranscriptPath, Trigger

DEFAULT_SUMMARY_TOKENS = 1500
TURN_START_ROLES = (Role.USER, Role.ASSISTANT, Role.SUMMARY, Role.OTHER)


@dataclass(frozen=True, slots=True)
class NeutralTruth:
    """Truth of a context: overhead + each message's tokens (+ summaries). A message's tokens are
    what the recorded usage attributes to it (`attribute_messages`), else ratio * chars/4."""

    overhead: float
    ratio: float
    summary_tokens: float
    n: int  # requests fitted
    attributed: Mapping[int, float] = field(default_factory=dict)
    prior_dominated: bool = True  # too few requests for the data alone to decide (`fit_overhead_ratio`)
    prior: TruthPrior | None = None  # learnt from the run's other sessions (None: PRIOR_RATIO)

    def message_tokens(self, m: Message) -> float:
        got = self.attributed.get(m.index)
        return got if got is not None else self.ratio * chars4(len(m.text))


def attribute_messages(path: TranscriptPath) -> dict[int, float]:
    """Each message's tokens as the recorded usage tells them: between two requests of one context
    window (the later context holds the earlier one), the prompt grows by exactly the messages
    appended (the reply, tool outputs, a new prompt); that growth is split over them in proportion to
    chars/4. Messages never appended between two such requests are not in the result."""
    out: dict[int, float] = {}
    prev: set[int] | None = None
    prev_u = 0
    for r in path.requests:
        ctx = list(r.context_indices())
        if prev is not None and prev.issubset(ctx) and r.usage.prompt >= prev_u:
            new = [i for i in ctx if i not in prev]
            weights = [max(chars4(len(path.messages[i].text)), 1) for i in new]
            total = sum(weights)
            for i, w in zip(new, weights, strict=True):
                out.setdefault(i, (r.usage.prompt - prev_u) * w / total)
        prev, prev_u = set(ctx), r.usage.prompt
    return out


def fit_neutral_truth(path: TranscriptPath, summary_tokens: float | None = None,
                      prior: TruthPrior | None = None) -> NeutralTruth:
    """Fit overhead and ratio on the path's requests (A ~ O + r * chars/4 of the context) by the one
    truth-fit rule of every agent (`replay.truth.fit_overhead_ratio`: shrunk toward the prior when
    there are few requests, ratio and overhead within physical bounds; `prior`: a ratio learnt from the
    run's other sessions, `replay.priors`)."""
    from sessiontools.replay.truth import PRIOR_RATIO, fit_overhead_ratio

    prior_ratio = prior.ratio if prior is not None else PRIOR_RATIO
    if not path.requests:  # nothing to fit: the prior's ratio times chars/4, no overhead
        return NeutralTruth(0.0, prior_ratio, float(summary_tokens or DEFAULT_SUMMARY_TOKENS), 0, prior=prior)
    c4 = [chars4(len(m.text)) for m in path.messages]  # once per message, summed per request below
    xs = [float(sum(c4[i] for i in r.context_indices())) for r in path.requests]
    ys = [float(r.usage.prompt) for r in path.requests]
    fit = fit_overhead_ratio(xs, ys, prior_ratio)
    overhead, ratio = fit.overhead, fit.ratio
    if summary_tokens is None:
        # The summary message as the agent sent it (Codex: its fixed prefix + the summary). Not the
        # recorded tokens after: Codex and Claude Code record the whole new context there, whose kept
        # messages the simulator counts itself.
        sums = [len(path.messages[c.index].text) if c.index < len(path.messages) else len(c.summary or "")
                for c in path.compactions if c.summary]
        summary_tokens = ratio * chars4(int(statistics.median(sums))) if sums else DEFAULT_SUMMARY_TOKENS
    ratio = ratio if ratio > 0 else 1.0
    attributed = attribute_messages(path)
    if attributed:  # the overhead that, with the attributed messages, best explains every request
        plain = NeutralTruth(0.0, ratio, 0.0, fit.n, attributed)
        tok = [plain.message_tokens(m) for m in path.messages]
        overhead = max(statistics.median(
            r.usage.prompt - sum(tok[i] for i in r.context_indices()) for r in path.requests), 0.0)
    return NeutralTruth(overhead, ratio, float(summary_tokens), fit.n, attributed, fit.prior_dominated, prior)


@dataclass(slots=True)
class NeutralCompaction:
    reason: CompactionReason
    after_index: int  # the last message (path index) before it
    tokens_before: int  # the policy's own record
    truth_at_trigger: float
    count_at_trigger: float
    kept: tuple[int, ...]
    early: bool = False
    matches_recorded: bool = False


@dataclass(slots=True)
class NeutralRun:
    policy: str
    settings: PolicySettings
    compactions: list[NeutralCompaction] = field(default_factory=list)
    check_points: int = 0
    late: int = 0
    overflows: int = 0
    failed_recoveries: int = 0
    peak_truth: float = 0.0
    agent_prompt_tokens: float = 0.0  # sum of U over the requests that were sent and answered
    recorded: int = 0  # the policy's recorded compactions (user/extension ones excluded)
    matched: int = 0
    user_compactions: int = 0  # recorded user/extension compactions applied as recorded
    requests_recorded: int = 0  # requests whose truth is their recorded usage
    requests_modelled: int = 0  # requests whose truth is the fitted model (the context changed)


class _Walk:
    def __init__(self, path: TranscriptPath, policy: Policy, settings: PolicySettings, truth: NeutralTruth) -> None:
        self.path, self.policy, self.s, self.truth = path, policy, settings, truth
        self.T = policy.threshold(settings)
        # A compaction's own messages (its summary; Pi 1.x: also the system message it carries).
        # Codex: also the replacement history written on the compaction's own line (copies of kept items).
        ids = {c.id for c in path.compactions if c.id is not None}
        lines = {c.line for c in path.compactions}
        summaries = {c.index for c in path.compactions} | {m.index for m in path.messages
                                                           if m.id in ids or m.line in lines}
        self.work = [m.index for m in path.messages if m.index not in summaries]
        self.pos_of = {ix: k for k, ix in enumerate(self.work)}
        self.prefix: tuple[int, ...] = ()  # kept messages of the newest simulated compaction
        self.resume = 0  # work position from which messages follow the prefix
        self.summary = 0.0  # truth of the simulated summary (0 before any)
        self.recorded = [max((i for i in self.work if i < c.index), default=-1) for c in path.compactions]
        self.matched: set[int] = set()  # positions in `recorded` reproduced so far
        # Compactions the user or an extension made: applied where recorded, not the policy's to match.
        self.by_user = [k for k, c in enumerate(path.compactions)
                        if c.trigger == Trigger.MANUAL or c.writer == "hook"]
        self.next_user = 0
        self.unmatched = 0  # simulated compactions at no recorded place
        self.last_usage: tuple[int, float] | None = None  # (last message of the reply, usage total)
        self.starts = {e.index for e in (*path.requests, *path.overflows)}
        self.run_start = 0  # work position where the current run's input begins
        self.run = NeutralRun(policy.name.value, settings)
        # Each message's truth and policy size, computed once: every check point sums a whole context.
        self._tokens: list[float | None] = [None] * len(path.messages)
        self._sizes: list[Any] = [None] * len(path.messages)

    def tokens_of(self, i: int) -> float:
        got = self._tokens[i]
        if got is None:
            got = self._tokens[i] = self.truth.message_tokens(self.path.messages[i])
        return got

    def size_of(self, i: int) -> Any:
        got = self._sizes[i]
        if got is None:
            got = self._sizes[i] = self.policy.size(self.path.messages[i])
        return got

    def context(self, upto: int) -> list[int]:
        """Message indices of the simulated context before work position `upto`."""
        return [*self.prefix, *self.work[self.resume:upto]]

    def truth_at(self, upto: int) -> float:
        t = self.truth
        return t.overhead + self.summary + sum(map(self.tokens_of, self.context(upto)))

    def view(self, upto: int) -> CountView:
        ctx = self.context(upto)
        size = list(map(self.size_of, ctx))
        if self.last_usage is None:
            return CountView(None, (), size)
        after = [k for k, i in enumerate(ctx) if i > self.last_usage[0]]
        return CountView(self.last_usage[1], [size[k] for k in after], size)

    def compact(self, reason: CompactionReason, upto: int, truth_now: float, view: CountView) -> None:
        ctx = self.context(upto)
        msgs = self.path.messages
        cands = [Candidate(i, msgs[i].role.value, msgs[i].role in TURN_START_ROLES, self.tokens_of(i), msgs[i])
                 for i in ctx]
        kept = self.policy.keep_for(reason.value, cands, self.s)
        after = ctx[-1] if ctx else -1
        hit = next((k for k, r in enumerate(self.recorded) if r == after and k not in self.matched), None)
        if hit is None:
            self.unmatched += 1
        else:
            self.matched.add(hit)
        self.run.compactions.append(NeutralCompaction(
            reason, after, self.policy.tokens_before(view), truth_now, self.policy.count(view), kept.indices,
            early=reason == CompactionReason.THRESHOLD and truth_now <= self.T, matches_recorded=hit is not None))
        self.prefix, self.resume, self.summary = kept.indices, upto, self.truth.summary_tokens
        self.last_usage = None

    def diverged(self, index: int) -> bool:
        """Whether the simulated context before message `index` differs from the recorded one."""
        missed = any(r < index and k not in self.matched for k, r in enumerate(self.recorded))
        return self.unmatched > 0 or missed

    def check(self, upto: int) -> None:
        self.run.check_points += 1
        truth_now = self.truth_at(upto)
        view = self.view(upto)
        if self.policy.fires(self.policy.count(view), self.T):
            self.compact(CompactionReason.THRESHOLD, upto, truth_now, view)
        elif truth_now > self.T:
            self.run.late += 1

    def request(self, req: Request, first: bool, last: bool, state: dict[str, bool]) -> None:
        k = self.pos_of.get(req.index, 0)
        if CheckPoint.BEFORE_SAMPLING in self.policy.check_points and first:
            self.check(self.run_start if self.policy.pre_turn_excludes_input else k)
        elif CheckPoint.BETWEEN_TURNS in self.policy.check_points and not first:
            self.check(k)
        modelled = self.diverged(req.index)
        u = self.truth_at(k) if modelled else float(req.usage.prompt)
        self.run.requests_modelled += modelled
        self.run.requests_recorded += not modelled
        if u > self.s.context_window:
            self.run.overflows += 1
            self.run.peak_truth = max(self.run.peak_truth, u)
            if not self.policy.retries_after_overflow(state["recovered"], state["success"]):
                self.run.failed_recoveries += 1
                return
            state["recovered"], state["success"] = True, False
            self.compact(CompactionReason.OVERFLOW, k, u, self.view(k))
            u = self.truth_at(k)
            if u > self.s.context_window:
                self.run.overflows += 1
                self.run.failed_recoveries += 1
                return
        state["success"] = True
        self.answered(k, req.index, u, req.usage.output, last)

    def answered(self, k: int, index: int, u: float, output: int, last: bool) -> None:
        """A request the provider answered (prompt U, `output` tokens out)."""
        self.run.peak_truth = max(self.run.peak_truth, u)
        self.run.agent_prompt_tokens += u
        self.last_usage = (index if self.policy.counts_own_reply else self.reply_end(index), u + output)
        if last and CheckPoint.RUN_END in self.policy.check_points:
            self.check(k + 1)

    def reply_end(self, index: int) -> int:
        """The last message of the reply that starts at `index` (Codex writes one response as several
        items: reasoning, text, tool calls; the count's trailing items are those after all of them)."""
        msgs = self.path.messages
        while index + 1 < len(msgs) and msgs[index + 1].role == Role.ASSISTANT and index + 1 not in self.starts:
            index += 1
        return index

    def overflow(self, ovf: Overflow, first: bool, last: bool, state: dict[str, bool]) -> None:
        """A request the provider rejected in the recording: its own count (when it gave one) is the
        truth while the context is the recorded one; in a changed context it may fit."""
        k = self.pos_of.get(ovf.index, 0)
        if CheckPoint.BEFORE_SAMPLING in self.policy.check_points and first:
            self.check(self.run_start if self.policy.pre_turn_excludes_input else k)
        if self.diverged(ovf.index):
            u = self.truth_at(k)
        else:
            u = float(ovf.provider_tokens) if ovf.provider_tokens else max(self.truth_at(k), self.s.context_window + 1.0)
        if u <= self.s.context_window:
            self.answered(k, ovf.index, u, 0, last)
            state["success"] = True
            return
        self.run.overflows += 1
        self.run.peak_truth = max(self.run.peak_truth, u)
        if not self.policy.retries_after_overflow(state["recovered"], state["success"]):
            self.run.failed_recoveries += 1
            return
        state["recovered"], state["success"] = True, False
        # The failed attempt is on the agent's path when it compacts (it is summarised or dropped).
        self.compact(CompactionReason.OVERFLOW, k + 1, u, self.view(k + 1))

    def user_compactions(self, before: int) -> None:
        """Apply the recorded user/extension compactions that come before message `before`."""
        while self.next_user < len(self.by_user) and self.path.compactions[self.by_user[self.next_user]].index < before:
            k = self.by_user[self.next_user]
            self.next_user += 1
            c = self.path.compactions[k]
            upto = len([i for i in self.work if i < c.index])
            kept = tuple(i for a, b in c.kept for i in range(a, b) if i in self.pos_of)
            self.run.user_compactions += 1
            self.matched.add(k)
            summary = self.truth.ratio * chars4(len(c.summary or ""))
            self.prefix, self.resume, self.summary, self.last_usage = kept, upto, summary, None

    def walk(self) -> NeutralRun:
        events: list[Request | Overflow] = sorted([*self.path.requests, *self.path.overflows], key=lambda e: e.index)
        starts = _run_starts(self.path, events, self.pos_of)
        state = {"recovered": False, "success": False}
        prev = -1
        for n, ev in enumerate(events):
            self.user_compactions(ev.index)
            if starts[n]:
                state = {"recovered": False, "success": False}
                self.run_start = bisect_right(self.work, prev)
            prev = self.reply_end(ev.index) if isinstance(ev, Request) else ev.index
            last = n + 1 == len(events) or starts[n + 1]
            if isinstance(ev, Overflow):
                self.overflow(ev, starts[n], last, state)
            else:
                self.request(ev, starts[n], last, state)
        self.run.recorded = len(self.recorded) - len(self.by_user)
        self.run.matched = len(self.matched - set(self.by_user))
        return self.run


def _run_starts(path: TranscriptPath, reqs: Sequence[Request | Overflow], work: Container[int]) -> list[bool]:
    """Whether each request starts a run (a user message of the workload since the previous request;
    a compaction's own messages, such as the user messages Codex copies into its new history, are not)."""
    out = []
    prev = -1
    for r in reqs:
        out.append(prev < 0 or any(path.messages[i].role == Role.USER and i in work for i in range(prev + 1, r.index)))
        prev = r.index
    return out


def simulate_path(
    path: TranscriptPath, policy: Policy, settings: PolicySettings, truth: NeutralTruth | None = None
) -> NeutralRun:
    """Replay `policy` over `path` under `settings` (see the module docstring)."""
    return _Walk(path, policy, settings, truth or fit_neutral_truth(path)).walk()
