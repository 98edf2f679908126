"""Replay one Pi workload under one setting: where Pi would compact, and what it would cost.

The walk follows the base path entry by entry. At each request it knows the simulated context
(the newest compaction's summary, then the base entries from its first kept entry on) and so the
truth U (recorded while the context is the recorded one, else the truth model). At each check
point of the policy (`policies.pi.policy`) it computes Pi's own view (from the usage Pi would have
seen, plus Pi's chars/4 for trailing messages, or Pi's projected estimate where Pi uses it) and
compacts when Pi would. Compactions themselves run the exact port of `prepareCompaction` on the
simulated path (`replay.pi_compact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.policies.base import CheckPoint, PolicyName
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.policies.pi.settings import CompactionSettings
from sessiontools.policies.pi.usage import current_system_message
from sessiontools.read.pi.entries import Entry
from sessiontools.replay.memo import PiMemo
from sessiontools.replay.pi_compact import apply_recorded, compact
from sessiontools.replay.plain import walk_plain
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
from sessiontools.replay.shared import seed_estimates, shared_grid
from sessiontools.replay.step import CheckStep
from sessiontools.replay.truth import TruthModel, entry_messages
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.model import Trigger
from sessiontools.transcript.pi.usage import calculate_context_tokens
from sessiontools.transcript.pi.workload import RecordedCompaction, Request, Workload

POLICIES = (PolicyName.PI_0.value, PolicyName.PI_1.value)
# Enum members read once: a member lookup on the class costs more than the rest of a request's step.
_RECORDED, _MODEL, _PROVIDER = TruthSource.RECORDED, TruthSource.MODEL, TruthSource.PROVIDER


class SimState(CheckStep):
    """The simulated path and Pi's state along it (shared with `pi_compact.compact`)."""

    def __init__(self, wl: Workload, truth: TruthModel, s: ReplaySettings) -> None:
        self.wl, self.truth, self.s = wl, truth, s
        self.policy = pi_policy(s.policy)
        self.v = self.policy.version
        self.cs = CompactionSettings(True, s.reserve_tokens, s.keep_recent_tokens)
        grid = truth.shared.get(self.v)
        self.memo = PiMemo(truth.shared, self.v, None if wl.artefacts else wl.base)
        if grid is None:
            grid = truth.shared[self.v] = shared_grid(wl, truth, self.v)
            seed_estimates(wl, truth, self.v, self.memo)
        self.grid = grid
        self.synthetic: list[Entry] = []
        #: Summaries the caller wrote, by compaction ordinal (`pi_compact.GivenSummary`; None: not given).
        self.given: tuple[Any, ...] = ()
        self.usage_override: tuple[int, int, int] | None = None  # (synthetic index, prompt, output) of the newest reply
        self.fk_syn = 0  # index in `synthetic` of the newest compaction's first kept entry
        self.comp: Entry | None = None  # newest compaction in the simulated path
        self.fk = 0  # base index of the first kept entry
        self.summary_truth = 0.0
        self.summary_est = 0
        self.last_usage: tuple[int, float] | None = None  # (base index, usage total) after the newest compaction
        self.run = ReplayRun(s)
        self.pending_thrash: SimCompaction | None = None
        self.rec_by_parent: dict[int, list[RecordedCompaction]] = {}
        for rc in wl.recorded_compactions:
            self.rec_by_parent.setdefault(rc.parent_base_index, []).append(rc)
        self.used_recorded: set[int] = set()
        # One window throughout (no model switch): the window and threshold need no lookup per request.
        self.window = None if s.window_changes else s.context_window
        self.threshold = None if s.window_changes else s.context_window - s.reserve_tokens

    def truth_before(self, i: int) -> float:
        """Truth of the simulated context before base entry i."""
        T = self.grid.truth_prefix
        return self.truth.overhead + self.summary_truth + T[i] - T[self.fk]

    def pi_estimate_before(self, i: int) -> float:
        """Pi's estimateContextTokens / projected estimate of the context before base entry i."""
        C = self.grid.chars4_prefix
        if self.last_usage is not None:
            j, total = self.last_usage
            return total + C[i] - C[j + 1]
        est = self.summary_est + C[i] - C[self.fk]
        if self.v == "1":
            base = self.wl.base
            system = current_system_message([m for e in base[:i] if e.role == "system" for m in entry_messages(e, "1")])
            if system is not None:
                est += estimate_tokens(system, "1")
                est -= sum(estimate_tokens(m, "1") for e in base[self.fk:i] if e.role == "system"
                           for m in entry_messages(e, "1"))
        return est


class _Sim(SimState):
    def __init__(self, wl: Workload, truth: TruthModel, s: ReplaySettings) -> None:
        super().__init__(wl, truth, s)
        self.recovery = self.policy.recovery()  # Pi's _overflowRecoveryAttempted (`PiRecovery`)
        self._same = False  # the current request's context is the recorded one
        self.user_compactions = sorted((rc for rc in wl.recorded_compactions if rc.by_user),
                                       key=lambda rc: rc.parent_base_index)
        self.next_user = 0
        self.skip_until = -1
        self.pos = 0  # next base entry not yet on the simulated path
        self.between_turns = CheckPoint.BETWEEN_TURNS in self.policy.check_points

    def check(self, parent: int, view: float, truth_now: float) -> None:
        """A check point of the policy: classify, and compact when Pi would."""
        threshold = self.threshold if self.threshold is not None else self.s.threshold_at(parent + 1)
        over = self.checked(truth_now, threshold)
        self.run.check_counts.append(CheckAt(parent, view, truth_now, len(self.run.requests)))
        fired = self.policy.fires(view, threshold)
        self.settled(fired, compact(self, CompactionReason.THRESHOLD, parent, truth_now, view) if fired else None, over)

    def _append_between(self, lo: int, hi: int) -> None:
        """Put the non-request base entries [lo, hi) on the simulated path (recovery edits excepted:
        they belong to their failed attempt, replayed with it or not at all)."""
        if lo >= hi:
            return
        base, artefacts = self.wl.base, self.wl.artefacts
        if artefacts:
            self.synthetic.extend(base[j] for j in range(lo, hi) if j not in artefacts)
        else:
            self.synthetic.extend(base[lo:hi])

    def _user_compactions(self, upto: int) -> None:
        """Apply the user's recorded compactions that come before base entry `upto`."""
        while self.next_user < len(self.user_compactions) and self.user_compactions[self.next_user].parent_base_index < upto:
            rc = self.user_compactions[self.next_user]
            self.next_user += 1
            self._append_between(max(self.pos, self.skip_until + 1), rc.parent_base_index + 1)
            self.pos = max(self.pos, rc.parent_base_index + 1)
            apply_recorded(self, rc)

    def walk(self) -> ReplayRun:
        users = self.user_compactions
        if self._plain():
            self._walk_plain()
        else:
            for req in self.wl.requests:
                if req.base_index > self.skip_until:
                    if self.next_user < len(users):
                        self._user_compactions(req.base_index)
                    self._request(req)
        self._user_compactions(len(self.wl.base))
        self._append_between(max(self.pos, self.skip_until + 1), len(self.wl.base))
        r = self.run
        policy = [c for c in r.compactions if c.reason != CompactionReason.USER]
        matched = sum(1 for c in policy if c.matches_recorded)
        # The policy's to reproduce: threshold and overflow compactions, and a user's or extension's
        # compaction that the policy made itself at the same point (an extension's summary of Pi's own).
        recorded = len([rc for rc in self.wl.recorded_compactions
                        if rc.kind in (Trigger.THRESHOLD, Trigger.OVERFLOW) and not rc.by_user])
        r.recorded_match = RecordedMatch(recorded, matched, len(policy) - matched)
        return r

    def _plain(self) -> bool:
        """The common case `_walk_plain` covers: one window, no between-turns check (0.x), no recovery
        artefacts, no recorded overflow failures, no user compactions."""
        return (self.window is not None and not self.between_turns and not self.wl.artefacts
                and not self.user_compactions and not self.grid.any_failed)

    def _walk_plain(self) -> None:
        """The common case: runs of ordinary requests in bulk (`replay.plain`), each other request (a
        check point where Pi compacts, an overflow, an unusable reply) by the general `_request`."""
        walk_plain(self)

    def _request(self, req: Request) -> None:
        i = req.base_index
        first = req.first_in_run
        if first:
            self.recovery.run_started()  # cleared when a user message starts
        lo = self.skip_until + 1
        if self.pos > lo:
            lo = self.pos
        if lo < i:
            if self.wl.artefacts:
                self._append_between(lo, i)
            else:
                self.synthetic.extend(self.wl.base[lo:i])
        self.pos = i + 1
        if not first and i > 0 and self.between_turns:
            # 1.x: between turns, before the next request, Pi checks its projected estimate.
            view = self.pi_estimate_before(i)
            self.check(i - 1, view, self.truth_before(i))
            r = self.run
            if r.requests and r.requests[-1].policy_count is None:  # the check point after it: its count (as the walk's)
                r.requests[-1] = r.requests[-1]._replace(policy_count=view)
        comp = self.comp  # the context is the recorded one when (newest compaction, first kept) match the recording's
        same = self._same = (
            self.grid.recorded_initial[i] if comp is None else (id(comp), self.fk) == self.grid.recorded_state[i]
        )
        if same and req.recorded_prompt is not None:
            u, source = float(req.recorded_prompt), _RECORDED
        elif same and req.provider_tokens is not None:
            # The provider's own count in its overflow error is the truth for the rejected request.
            u, source = float(req.provider_tokens), _PROVIDER
        else:
            u, source = self.truth_before(i), _MODEL
        window = self.window if self.window is not None else self.s.window_at(i)
        if u > window or (req.failed_overflow and same):
            retried = self.recovery.may_retry()
            if self._overflow(req, u, source):
                return
            if not retried:  # Pi already tried since the last user message: the request fails
                self._failed(req, u, False)
                return
            u, source = self.truth_before(i), _MODEL
            self._same = False  # the retry's context is the compacted one, not the recorded one
            if u > window:  # the retry is rejected too
                self.run.rejected(u, window)
                self.run.failed_recoveries += 1
                self._failed(req, u, True)
                return
        elif req.failed_overflow:
            self._fits_unrecorded(req, u)
            return
        elif u > window - self.s.reserve_tokens and not first:
            self.run.mid_run_crossings += 1
        self._reply(req, u, source)

    def _point(self, req: Request, u: float, source: TruthSource, overflow: bool, output: int = 0) -> None:
        i, g, r = req.base_index, self.grid, self.run
        r.requests.append(RequestPoint(i, g.entry_ids[i], u, source, None, overflow, output, g.timestamps[i],
                                       len(r.compactions), self._same and not overflow))

    def _overflow(self, req: Request, u: float, source: TruthSource) -> bool:
        """The provider rejects the request; Pi compacts and retries unless it already tried with no
        successful reply since (`Policy.recovery`, `PiRecovery`). True when the walk is done with it.

        A recorded rejection of the recorded context whose truth fits this setting's window (a server
        limit below the model's window) is a provider rejection, not an overflow: rejected all the same."""
        r, i, wl = self.run, req.base_index, self.wl
        r.rejected(u, self.window if self.window is not None else self.s.window_at(i), req.provider_limit)
        self._point(req, u, source, True)
        if req.failed_overflow:
            # Pi's path holds the failed attempt (and 1.x's omission edits) when it compacts.
            self.synthetic.extend(wl.base[i: req.group_end + 1])
            parent = self.skip_until = req.group_end
        else:
            parent = i - 1
        if not self.recovery.may_retry():
            r.failed_recoveries += 1
            return req.failed_overflow
        self.recovery.retrying()
        compact(self, CompactionReason.OVERFLOW, parent, u, self.pi_estimate_before(i))
        # A recorded failure: the retry is the next recorded request (1.x) or was never saved (0.x).
        return req.failed_overflow

    def _fits_unrecorded(self, req: Request, u: float) -> None:
        """A recorded overflow that fits here: it would have succeeded, but its reply was never recorded.
        It is on Pi's path with the usage the provider would report (as the count after it says: the
        tokens before of a compaction right after it are that usage; its omission edits are not)."""
        r, i = self.run, req.base_index
        r.billed_input += u
        r.peak_truth = max(r.peak_truth, u)
        self._point(req, u, TruthSource.MODEL, False)
        self.synthetic.append(self.wl.base[i])
        self.usage_override = (len(self.synthetic) - 1, int(u + 0.5), 0)
        self.last_usage = (i, u)
        self.skip_until = req.group_end
        if req.last_in_run:
            self.check(i, u, self.truth_before(i))
            r.requests[-1] = r.requests[-1]._replace(policy_count=u)

    def _failed(self, req: Request, u: float, point: bool) -> None:
        """A request the provider rejects with Pi's recovery spent (a retry that overflows again, or any
        overflow after one until the next user message): an error message in Pi, so
        `_overflowRecoveryAttempted` stays set and Pi does not compact again before the next user
        message (`agent-session.js`, 0.73.1 and 1.6.0). Counted as an overflow, not billed; the recorded
        run goes on after it, the walk's state (Pi's usage of it, the check after the run's final
        reply) as `bench/pi_replay.mjs` keeps it."""
        r, i, output = self.run, req.base_index, req.output
        if point:
            self._point(req, u, _MODEL, True, output)
        self.synthetic.append(self.wl.base[i])
        self.usage_override = (len(self.synthetic) - 1, int(u + 0.5), output)
        view = u + output
        self.last_usage = (i, view)
        if req.last_in_run:
            self.check(i, view, self.truth_before(i + 1))
            r.requests[-1] = r.requests[-1]._replace(policy_count=view)

    def _reply(self, req: Request, u: float, source: TruthSource) -> None:
        r, i, g, output = self.run, req.base_index, self.grid, req.output
        if u > r.peak_truth:
            r.peak_truth = u
        r.billed_input += u
        r.output_tokens += output
        r.requests.append(RequestPoint(i, g.entry_ids[i], u, source, None, False, output, g.timestamps[i],
                                       len(r.compactions), self._same))  # `_point`
        stop = req.stop_reason
        usable = stop != "aborted" and stop != "error"
        self.recovery.replied(stop)
        usage_total = u + output
        e = self.wl.base[i]
        self.synthetic.append(e)
        if source == _RECORDED:
            if usable:
                self.usage_override = None
            rec_total = g.recorded_total.get(i)
            if rec_total is not None:
                usage_total = rec_total
        elif usable:
            # Pi would have seen the provider's usage for the simulated context.
            # Rounded half up as JS's Math.round (Python's round() is half to even).
            self.usage_override = (len(self.synthetic) - 1, int(u + 0.5), output)
        if usable:
            self.last_usage = (i, usage_total)
        if req.last_in_run:
            if usable:
                view = usage_total
            elif stop == "aborted" and self.v == "0":
                # 0.x checks an aborted reply (before the next prompt) by its own, usually empty, usage.
                raw = (e.message or {}).get("usage")
                view = calculate_context_tokens(raw) if isinstance(raw, dict) else 0
            else:
                # Errors (and 1.x zero usage): Pi estimates from the last valid usage plus trailing.
                view = self.pi_estimate_before(i + 1)
            self.check(i, view, self.truth_before(i + 1))
            r.requests[-1] = r.requests[-1]._replace(policy_count=view)


def simulate(workload: Workload, truth: TruthModel, settings: ReplaySettings, *, keep_path: bool = False,
             summaries: Sequence[Any] = ()) -> ReplayRun:
    """Replay `workload` under `settings` with the fitted `truth`. `keep_path`: also return the
    simulated path (`ReplayRun.path`), which `resummarize` writes out with its own summaries.
    `summaries`: the n-th compaction's summary as the caller wrote it (`pi_compact.GivenSummary`, or
    None), put on the path and sized by its own tokens, so it moves the later compactions."""
    if settings.policy not in POLICIES:
        raise ValueError(f"unknown policy {settings.policy!r}")
    sim = _Sim(workload, truth, settings)
    sim.given = tuple(summaries)
    run = sim.walk()
    if keep_path:
        run.path = tuple(sim.synthetic)
    return run
