"""Replay one workload under one setting: where Pi would compact, and what it would cost.

The walk follows the base path entry by entry. At each request it knows the simulated context
(the newest compaction's summary, then the base entries from its first kept entry on) and so the
truth U (recorded while the context is the recorded one, else the truth model). At each check
point of the policy it computes Pi's own view (from the usage Pi would have seen, plus Pi's
chars/4 for trailing messages, or Pi's projected estimate where Pi uses it) and compacts when Pi
would. Compactions themselves run the exact port of `prepareCompaction` on the simulated path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.policies.pi.prepare import NoCompaction, Preparation, prepare_compaction
from sessiontools.policies.pi.serialize import (
    FileOps,
    compute_file_lists,
    convert_to_llm,
    extract_file_ops,
    format_file_operations,
    serialize_conversation,
)
from sessiontools.policies.pi.settings import CompactionSettings
from sessiontools.policies.pi.usage import current_system_message
from sessiontools.read.pi.entries import Entry
from sessiontools.replay.truth import TruthModel, entry_messages
from sessiontools.replay.workload import RecordedCompaction, Workload
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens

POLICIES = ("pi-0", "pi-1")


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int
    policy: str

    @property
    def threshold(self) -> int:
        return self.context_window - self.reserve_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "context_window": self.context_window,
            "reserve_tokens": self.reserve_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
            "policy": self.policy,
        }


@dataclass(slots=True)
class SimCompaction:
    """A compaction the replay decided on."""

    reason: str  # threshold | overflow
    parent_entry_id: str | None
    parent_base_index: int
    first_kept_entry_id: str | None
    first_kept_base_index: int
    tokens_before: int  # Pi's own tokensBefore
    truth_at_trigger: float
    pi_view_at_trigger: float
    is_split_turn: bool
    messages_summarized: int
    turn_prefix_messages: int
    kept_tokens: float
    summary_tokens: float
    summary_source: str  # recorded | model
    summarization_input_tokens: float
    summarization_output_tokens: float
    matches_recorded: bool
    early: bool = False
    thrash: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "parent_entry_id": self.parent_entry_id,
            "first_kept_entry_id": self.first_kept_entry_id,
            "tokens_before": self.tokens_before,
            "truth_at_trigger": round(self.truth_at_trigger),
            "pi_view_at_trigger": round(self.pi_view_at_trigger),
            "early": self.early,
            "thrash": self.thrash,
            "is_split_turn": self.is_split_turn,
            "messages_summarized": self.messages_summarized,
            "turn_prefix_messages": self.turn_prefix_messages,
            "kept_tokens": round(self.kept_tokens),
            "summary_tokens": round(self.summary_tokens),
            "summary_source": self.summary_source,
            "matches_recorded": self.matches_recorded,
        }


@dataclass(slots=True)
class RequestPoint:
    """One simulated request (for the timeline)."""

    base_index: int
    entry_id: str | None
    truth: float
    truth_source: str  # recorded | model
    pi_view: float | None  # Pi's view at the check point before/after it, if one
    overflow: bool


@dataclass(slots=True)
class ReplayRun:
    settings: ReplaySettings
    compactions: list[SimCompaction] = field(default_factory=list)
    requests: list[RequestPoint] = field(default_factory=list)
    early: int = 0
    late: int = 0
    check_points: int = 0
    check_points_over: int = 0
    mid_run_crossings: int = 0
    overflows: int = 0
    failed_recoveries: int = 0
    thrash: int = 0
    peak_truth: float = 0.0
    billed_input: float = 0.0
    output_tokens: int = 0
    summarization_input: float = 0.0
    summarization_output: float = 0.0
    no_compaction: list[str] = field(default_factory=list)  # reasons Pi declined to compact
    recorded_match: dict[str, int] = field(default_factory=dict)


def _with_usage(e: Entry, prompt: int, output: int) -> Entry:
    """A copy of an assistant entry carrying the usage a provider would report for `prompt` tokens."""
    msg = dict(e.message or {})
    msg["usage"] = {"input": prompt, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": prompt + output}
    return Entry(e.type, e.id, e.parent_id, e.line, e.index, {**e.data, "message": msg})


def _shared(wl: Workload, truth: TruthModel, v: str) -> tuple[Any, ...]:
    """What every setting of a grid needs and can share: id positions, prefix sums of truth and of
    Pi's chars/4 per base entry, and the compaction state Pi really had before each entry."""
    base = wl.base
    id_pos = {e.id: i for i, e in enumerate(base) if e.id is not None}
    reuse = truth.counter_is_chars4_of == v
    T = [0.0]
    C = [0]
    for e in base:
        T.append(T[-1] + truth.entry_tokens(e))
        c = truth.counted.get(id(e), 0) if reuse else sum(estimate_tokens(m, v) for m in entry_messages(e, v))
        C.append(C[-1] + c)
    by_parent: dict[int, list[RecordedCompaction]] = {}
    for rc in wl.recorded_compactions:
        by_parent.setdefault(rc.parent_base_index, []).append(rc)
    state: tuple[int | None, int] = (None, 0)
    rec_at = []
    for i in range(len(base) + 1):
        for rc in by_parent.get(i - 1, []):
            state = (id(rc.entry), id_pos.get(rc.first_kept_entry_id, i))  # retain-none keeps nothing before
        rec_at.append(state)
    # calculateContextTokens of each reply's recorded usage, where Pi trusts it.
    rec_total = {}
    for r in wl.requests:
        u = assistant_usage(base[r.base_index].message or {}, v)
        if u is not None:
            rec_total[r.base_index] = calculate_context_tokens(u)
    return id_pos, T, C, rec_at, rec_total


class _Sim:
    def __init__(self, wl: Workload, truth: TruthModel, s: ReplaySettings) -> None:
        self.wl, self.truth, self.s = wl, truth, s
        self.v = "1" if s.policy == "pi-1" else "0"
        self.cs = CompactionSettings(True, s.reserve_tokens, s.keep_recent_tokens)
        shared = truth.shared.get(self.v)
        if shared is None:
            shared = truth.shared[self.v] = _shared(wl, truth, self.v)
        self.id_pos, self.T, self.C, self.rec_comp_at, self.rec_total = shared
        self.synthetic: list[Entry] = []
        self.usage_override: tuple[int, int, int] | None = None  # (synthetic index, prompt, output) of the newest reply
        self.fk_syn = 0  # index in `synthetic` of the newest compaction's first kept entry
        self.comp: Entry | None = None  # newest compaction in the simulated path
        self.fk = 0  # base index of the first kept entry
        self.summary_truth = 0.0
        self.summary_est = 0
        self.last_usage: tuple[int, float] | None = None  # (base index, usage total) after the newest compaction
        self.run = ReplayRun(s)
        self.pending_thrash: SimCompaction | None = None
        # Recorded state, to tell whether the simulated context equals the recorded one.
        self.rec_by_parent: dict[int, list[RecordedCompaction]] = {}
        for rc in wl.recorded_compactions:
            self.rec_by_parent.setdefault(rc.parent_base_index, []).append(rc)
        self.used_recorded: set[int] = set()

    # ------------------------------------------------------------------ truth and view
    def truth_before(self, i: int) -> float:
        """Truth of the simulated context before base entry i."""
        return self.truth.overhead + self.summary_truth + self.T[i] - self.T[self.fk]

    def same_as_recorded(self, i: int) -> bool:
        cur = (id(self.comp) if self.comp is not None else None, self.fk if self.comp is not None else 0)
        return cur == self.rec_comp_at[i]

    def pi_estimate_before(self, i: int) -> float:
        """Pi's estimateContextTokens / projected estimate of the context before base entry i."""
        if self.last_usage is not None:
            j, total = self.last_usage
            return total + self.C[i] - self.C[j + 1]
        est = self.summary_est + self.C[i] - self.C[self.fk]
        if self.v == "1":
            system = current_system_message([m for e in self.wl.base[:i] if e.role == "system" for m in entry_messages(e, "1")])
            if system is not None:
                est += estimate_tokens(system, "1")
                est -= sum(estimate_tokens(m, "1") for e in self.wl.base[self.fk:i] if e.role == "system"
                           for m in entry_messages(e, "1"))
        return est

    # ------------------------------------------------------------------ compaction
    def compact(self, reason: str, parent: int, truth_now: float, view: float) -> SimCompaction | None:
        # Everything before the newest compaction's first kept entry is outside Pi's context and
        # outside the range prepareCompaction looks at: starting the path there gives the same answer.
        start = self.fk_syn
        path = self.synthetic[start:]
        if self.usage_override is not None and start <= self.usage_override[0] < len(self.synthetic):
            # Only the newest usage counts in Pi's estimates: give that one entry its simulated usage.
            k, prompt, output = self.usage_override
            path[k - start] = _with_usage(path[k - start], prompt, output)
        prep = prepare_compaction(path, self.cs, self.v, estimate=self.estimate, file_ops=self.file_ops)
        if isinstance(prep, NoCompaction):
            self.run.no_compaction.append(f"after {self.wl.base[parent].id}: {prep.reason}")
            return None
        assert isinstance(prep, Preparation)
        fk = self.id_pos.get(prep.first_kept_entry_id)
        if fk is None:  # cut at an entry outside the base (should not happen)
            self.run.no_compaction.append(f"after {self.wl.base[parent].id}: first kept entry not in the workload")
            return None
        recorded = next(
            (rc for rc in self.rec_by_parent.get(parent, [])
             if rc.first_kept_entry_id == prep.first_kept_entry_id and id(rc.entry) not in self.used_recorded),
            None,
        )
        read, modified = compute_file_lists(prep.file_ops)
        if recorded is not None:
            entry = recorded.entry
            self.used_recorded.add(id(entry))
            summary_truth = self.truth.entry_tokens(entry)
            summary_est = estimate_tokens({"role": "compactionSummary", "summary": entry.data.get("summary") or ""}, self.v)
            source = "recorded"
            matches = recorded.tokens_before == prep.tokens_before
        else:
            chars = int(self.truth.summary_tokens * self.truth.summary_chars_per_token)
            summary = "s" * chars + format_file_operations(read, modified)
            entry = Entry("compaction", f"replay-{len(self.run.compactions) + 1}", self.wl.base[parent].id, 0, -1,
                          {"type": "compaction", "id": f"replay-{len(self.run.compactions) + 1}",
                           "parentId": self.wl.base[parent].id, "summary": summary,
                           "firstKeptEntryId": prep.first_kept_entry_id, "tokensBefore": prep.tokens_before,
                           "details": {"readFiles": read, "modifiedFiles": modified}})
            summary_truth = self.truth.summary_tokens + self.truth.text_tokens(len(summary) - chars)
            summary_est = estimate_tokens({"role": "compactionSummary", "summary": summary}, self.v)
            source = "model"
            matches = False
        # The summariser's bill: the serialized conversation (+ previous summary and prompt), then the summary.
        serialized_chars = self.serialized_chars(prep.messages_to_summarize) + len(str(prep.previous_summary or "")) + 2500
        sum_in = self.truth.text_tokens(serialized_chars)
        sum_out = summary_truth
        if prep.is_split_turn and prep.turn_prefix_messages:
            sum_in += self.truth.text_tokens(self.serialized_chars(prep.turn_prefix_messages) + 1200)
        self.synthetic.append(entry)
        self.fk_syn = next(k for k in range(len(self.synthetic) - 1, -1, -1)
                           if self.synthetic[k].id == prep.first_kept_entry_id)
        self.comp, self.fk = entry, fk
        self.summary_truth, self.summary_est = summary_truth, summary_est
        self.last_usage = None
        kept = self.T[parent + 1] - self.T[fk]
        sc = SimCompaction(
            reason=reason,
            parent_entry_id=self.wl.base[parent].id,
            parent_base_index=parent,
            first_kept_entry_id=prep.first_kept_entry_id,
            first_kept_base_index=fk,
            tokens_before=prep.tokens_before,
            truth_at_trigger=truth_now,
            pi_view_at_trigger=view,
            is_split_turn=prep.is_split_turn,
            messages_summarized=len(prep.messages_to_summarize),
            turn_prefix_messages=len(prep.turn_prefix_messages),
            kept_tokens=kept,
            summary_tokens=summary_truth,
            summary_source=source,
            summarization_input_tokens=sum_in,
            summarization_output_tokens=sum_out,
            matches_recorded=matches,
            early=reason == "threshold" and truth_now <= self.s.threshold,
        )
        self.run.compactions.append(sc)
        self.run.summarization_input += sum_in
        self.run.summarization_output += sum_out
        self.pending_thrash = sc
        return sc

    def estimate(self, m: Any) -> int:
        """Pi's estimateTokens, memoised across the settings of a grid (messages kept alive in the memo)."""
        memo = self.truth.shared.setdefault(("estimate", self.v), {})
        hit = memo.get(id(m))
        if hit is None or hit[0] is not m:
            hit = memo[id(m)] = (m, estimate_tokens(m, self.v))
        return hit[1]

    def file_ops(self, m: Any, ops: FileOps, version: str) -> None:
        """`extract_file_ops`, with each message's operations found once per grid."""
        memo = self.truth.shared.setdefault(("file_ops", version), {})
        hit = memo.get(id(m))
        if hit is None or hit[0] is not m:
            one = FileOps()
            extract_file_ops(m, one, version)
            found = (tuple(one.read), tuple(one.written), tuple(one.edited)) if (one.read or one.written or one.edited) else None
            hit = memo[id(m)] = (m, found)
        if hit[1] is None:
            return
        read, written, edited = hit[1]
        for f in read:
            ops.read[f] = None
        for f in written:
            ops.written[f] = None
        for f in edited:
            ops.edited[f] = None

    def serialized_chars(self, messages: Sequence[Any]) -> int:
        """Length of Pi's serializeConversation of `messages`, from per-message parts shared by a grid."""
        memo = self.truth.shared.setdefault(("serialized", self.v), {})
        total = parts = 0
        for m in messages:
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m:
                text = serialize_conversation(convert_to_llm([m], self.v), self.v)
                hit = memo[id(m)] = (m, len(text))  # the message is kept so that its id stays unique
            if hit[1]:
                total += hit[1]
                parts += 1
        return total + 2 * max(0, parts - 1)

    def check(self, parent: int, view: float, truth_now: float) -> None:
        """A check point of the policy: classify, and compact when Pi would."""
        r = self.run
        r.check_points += 1
        over = truth_now > self.s.threshold
        if self.pending_thrash is not None:
            if over:
                self.pending_thrash.thrash = True
                r.thrash += 1
            self.pending_thrash = None
        if over:
            r.check_points_over += 1
        decide = view > self.s.threshold
        if decide:
            sc = self.compact("threshold", parent, truth_now, view)
            if sc is not None and sc.early:
                r.early += 1
            if sc is None and over:
                r.late += 1
        elif over:
            r.late += 1

    # ------------------------------------------------------------------ the walk
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

    def walk(self) -> ReplayRun:
        wl, s, r = self.wl, self.s, self.run
        window, threshold = s.context_window, s.threshold
        truth_before, add_request, synthetic = self.truth_before, r.requests.append, self.synthetic
        recovery_tried_run: set[int] = set()
        skip_until = -1
        pos = 0  # next base entry not yet on the simulated path
        for req in wl.requests:
            i = req.base_index
            if i <= skip_until:
                continue
            self._append_between(max(pos, skip_until + 1), i)
            pos = i + 1
            e = wl.base[i]
            if self.v == "1" and not req.first_in_run and i > 0:
                # 1.x: between turns, before the next request, Pi checks its projected estimate.
                self.check(i - 1, self.pi_estimate_before(i), truth_before(i))
            same = self.same_as_recorded(i)
            u = truth_before(i)
            source = "model"
            if same and req.recorded_prompt is not None:
                u, source = float(req.recorded_prompt), "recorded"
            if u > window or (req.failed_overflow and same):
                # The provider rejects the request (not billed); Pi compacts once per run and retries.
                r.overflows += 1
                r.peak_truth = max(r.peak_truth, u)
                add_request(RequestPoint(i, e.id, u, source, None, True))
                if req.failed_overflow:
                    # Pi's path holds the failed attempt (and 1.x's omission edits) when it compacts.
                    synthetic.extend(wl.base[i: req.group_end + 1])
                    parent, skip_until = req.group_end, req.group_end
                else:
                    parent = i - 1
                if req.run in recovery_tried_run:
                    r.failed_recoveries += 1
                    if req.failed_overflow:
                        continue
                else:
                    recovery_tried_run.add(req.run)
                    self.compact("overflow", parent, u, self.pi_estimate_before(i))
                    if req.failed_overflow:
                        continue  # the retry is the next recorded request (1.x) or was never saved (0.x)
                u, source = truth_before(i), "model"
                if u > window:
                    r.overflows += 1
                    r.failed_recoveries += 1
            elif req.failed_overflow:
                # Here the request fits: it would have succeeded, but its reply was never recorded.
                r.billed_input += u
                r.peak_truth = max(r.peak_truth, u)
                add_request(RequestPoint(i, e.id, u, "model", None, False))
                self.last_usage = (i, u)
                skip_until = req.group_end
                if req.last_in_run:
                    self.check(i, u, truth_before(i))
                    r.requests[-1].pi_view = u
                continue
            elif u > threshold and not req.first_in_run:
                r.mid_run_crossings += 1
            r.peak_truth = max(r.peak_truth, u)
            r.billed_input += u
            r.output_tokens += req.output
            add_request(RequestPoint(i, e.id, u, source, None, False))
            usable = req.stop_reason not in ("aborted", "error")
            usage_total = u + req.output
            if source == "recorded":
                synthetic.append(e)
                if usable:
                    self.usage_override = None
                rec_total = self.rec_total.get(i)
                if rec_total is not None:
                    usage_total = rec_total
            else:
                # Pi would have seen the provider's usage for the simulated context.
                synthetic.append(e)
                if usable:
                    self.usage_override = (len(synthetic) - 1, round(u), req.output)
            if usable:
                self.last_usage = (i, usage_total)
            if req.last_in_run:
                if usable:
                    view = usage_total
                elif req.stop_reason == "aborted" and self.v == "0":
                    # 0.x checks an aborted reply (before the next prompt) by its own, usually empty, usage.
                    raw = (e.message or {}).get("usage")
                    view = calculate_context_tokens(raw) if isinstance(raw, dict) else 0
                else:
                    # Errors (and 1.x zero usage): Pi estimates from the last valid usage plus trailing.
                    view = self.pi_estimate_before(i + 1)
                self.check(i, view, truth_before(i + 1))
                r.requests[-1].pi_view = view
        self._append_between(max(pos, skip_until + 1), len(wl.base))
        matched = sum(1 for c in r.compactions if c.matches_recorded)
        recorded = len([rc for rc in wl.recorded_compactions if rc.kind in ("threshold", "overflow")])
        r.recorded_match = {
            "recorded": recorded,
            "matched": matched,
            "missed": max(0, recorded - matched),
            "extra": len(r.compactions) - matched,
        }
        return r


def simulate(workload: Workload, truth: TruthModel, settings: ReplaySettings) -> ReplayRun:
    """Replay `workload` under `settings` with the fitted `truth`."""
    if settings.policy not in POLICIES:
        raise ValueError(f"unknown policy {settings.policy!r}")
    return _Sim(workload, truth, settings).walk()


def run_metrics(run: ReplayRun, prices: dict[str, float] | None = None) -> dict[str, Any]:
    """The per-setting metrics of the replay JSON contract."""
    n_threshold = sum(1 for c in run.compactions if c.reason == "threshold")
    cost = None
    if prices:
        cost = round(
            (run.billed_input + run.summarization_input) * prices.get("input", 0.0)
            + (run.output_tokens + run.summarization_output) * prices.get("output", 0.0),
            6,
        )
    return {
        "compactions": len(run.compactions),
        "threshold_compactions": n_threshold,
        "overflow_compactions": len(run.compactions) - n_threshold,
        "early": run.early,
        "late": run.late,
        "mid_run_crossings": run.mid_run_crossings,
        "overflows": run.overflows,
        "failed_recoveries": run.failed_recoveries,
        "thrash": run.thrash,
        "check_points": run.check_points,
        "early_rate": round(run.early / n_threshold, 6) if n_threshold else 0.0,
        "late_rate": round(run.late / run.check_points_over, 6) if run.check_points_over else 0.0,
        "peak_truth_tokens": round(run.peak_truth),
        "billed_input_tokens": round(run.billed_input + run.summarization_input),
        "summarization_input_tokens": round(run.summarization_input),
        "summarization_output_tokens": round(run.summarization_output),
        "cost": cost,
    }


def grid(
    workload: Workload, truth: TruthModel, windows: Sequence[int], reserves: Sequence[int], keeps: Sequence[int],
    policy: str,
) -> list[ReplayRun]:
    """Every combination of the lists; parsing, token counts and prefix sums are shared."""
    return [
        simulate(workload, truth, ReplaySettings(w, r, k, policy)) for w in windows for r in reserves for k in keeps
    ]
