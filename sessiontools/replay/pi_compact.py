"""A compaction decided by the replay of a Pi workload, with the exact port of `prepareCompaction`.

The cut (first kept entry, split turn, Pi's tokensBefore) is Pi's own; the summary is the recorded
one when Pi recorded a compaction at the same place with the same cut, else a placeholder of the
size the truth model predicts (`TruthModel.summary_tokens`), with Pi's file lists appended. A
caller that wrote the n-th compaction's summary itself (`resummarize`: `GivenSummary`) has that text
put on the path, sized by its own tokens, so later check points count it and not the placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sessiontools.policies.pi.compactor import modelled_summary, summarization_input, with_usage
from sessiontools.policies.pi.prepare import NoCompaction, Preparation, prepare_compaction
from sessiontools.read.pi.entries import Entry
from sessiontools.replay.records import CompactionReason, SimCompaction, TruthSource
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.workload import RecordedCompaction

if TYPE_CHECKING:
    from sessiontools.replay.simulate import SimState


@dataclass(frozen=True, slots=True)
class NewSummary:
    """The summary entry a compaction puts on the simulated path, and its sizes."""

    entry: Entry
    truth: float
    estimate: int
    source: TruthSource
    matches_recorded: bool
    #: The recorded summary a user or an extension wrote (`RecordedCompaction.by_user`): the compaction
    #: is the user's at every setting, whoever decided it here.
    by_user: bool = False


@dataclass(frozen=True, slots=True)
class GivenSummary:
    """The summary of one compaction written by the caller (`simulate(summaries=...)`)."""

    text: str
    tokens: float | None = None  # its truth (tokens as the endpoint counted them); None: the truth model's


def _given(st: SimState, new: NewSummary, given: GivenSummary) -> NewSummary:
    """`new` with the caller's summary text and size (the recorded one stays when the texts are equal)."""
    if new.source == TruthSource.RECORDED and given.text == (new.entry.data.get("summary") or ""):
        return new
    e = new.entry
    entry = Entry("compaction", e.id, e.parent_id, 0, -1, {**e.data, "summary": given.text})
    truth = given.tokens if given.tokens is not None else st.truth.text_tokens(len(given.text))
    est = estimate_tokens({"role": "compactionSummary", "summary": given.text}, st.v)
    return NewSummary(entry, truth, est, TruthSource.MODEL, new.matches_recorded)


def _prepare(st: SimState, parent: int) -> Preparation | None:
    # Everything before the newest compaction's first kept entry is outside Pi's context and
    # outside the range prepareCompaction looks at: starting the path there gives the same answer.
    start = st.fk_syn
    path = st.synthetic[start:]
    if st.usage_override is not None and start <= st.usage_override[0] < len(st.synthetic):
        # Only the newest usage counts in Pi's estimates: give that one entry its simulated usage.
        k, prompt, output = st.usage_override
        original = path[k - start]
        path[k - start] = copy = with_usage(original, prompt, output)
        if original.message is not None and copy.message is not None:
            # estimateTokens reads an assistant message's content, never its usage: the copy's is the original's.
            st.memo.same_estimate(copy.message, original.message)
    prep = prepare_compaction(path, st.cs, st.v, estimate=st.memo.estimate, file_ops=st.memo.file_ops)
    if isinstance(prep, NoCompaction):
        st.run.no_compaction.append(f"after {st.wl.base[parent].id}: {prep.reason}")
        return None
    assert isinstance(prep, Preparation)
    if st.grid.id_pos.get(prep.first_kept_entry_id) is None:  # cut outside the base (should not happen)
        st.run.no_compaction.append(f"after {st.wl.base[parent].id}: first kept entry not in the workload")
        return None
    return prep


def _summary(st: SimState, prep: Preparation, parent: int) -> NewSummary:
    recorded = next(
        (rc for rc in st.rec_by_parent.get(parent, [])
         if rc.first_kept_entry_id == prep.first_kept_entry_id and id(rc.entry) not in st.used_recorded),
        None,
    )
    if recorded is not None:
        entry = recorded.entry
        st.used_recorded.add(id(entry))
        est = estimate_tokens({"role": "compactionSummary", "summary": entry.data.get("summary") or ""}, st.v)
        return NewSummary(entry, st.truth.entry_tokens(entry), est, TruthSource.RECORDED,
                          recorded.tokens_before == prep.tokens_before, recorded.by_user)
    entry, truth = modelled_summary(st.truth, prep, len(st.run.compactions) + 1, st.wl.base[parent].id)
    summary = entry.data["summary"]
    est = estimate_tokens({"role": "compactionSummary", "summary": summary}, st.v)
    return NewSummary(entry, truth, est, TruthSource.MODEL, False)


def _summarization_input(st: SimState, prep: Preparation) -> float:
    """The summariser's prompt (`policies.pi.compactor.summarization_input`, the one rule)."""
    return summarization_input(st.truth, prep, st.memo.serialized_chars)


def compact(st: SimState, reason: CompactionReason, parent: int, truth_now: float, view: float) -> SimCompaction | None:
    """Compact the simulated path after base entry `parent`, as Pi would; None when Pi declines, or
    when the summarisation request is larger than the window (the provider rejects it: a failed
    compaction, in `ReplayRun.failed_compactions` and `overflows`, not billed; the path is unchanged)."""
    prep = _prepare(st, parent)
    if prep is None:
        return None
    fk = st.grid.id_pos[prep.first_kept_entry_id]  # type: ignore[index]
    sum_in = _summarization_input(st, prep)
    window = st.s.window_at(parent + 1)
    if sum_in > window and any(rc.first_kept_entry_id == prep.first_kept_entry_id
                               for rc in st.rec_by_parent.get(parent, [])):
        sum_in = float(window)  # Pi recorded this compaction: its summariser's prompt fitted (the estimate is high)
    elif sum_in > window:
        T = st.grid.truth_prefix
        st.run.failed_compactions.append(SimCompaction(
            reason=reason, parent_entry_id=st.wl.base[parent].id, parent_base_index=parent,
            first_kept_entry_id=prep.first_kept_entry_id, first_kept_base_index=fk, tokens_before=prep.tokens_before,
            truth_at_trigger=truth_now, count_at_trigger=view, is_split_turn=prep.is_split_turn,
            messages_summarized=len(prep.messages_to_summarize), turn_prefix_messages=len(prep.turn_prefix_messages),
            kept_tokens=T[parent + 1] - T[fk], summary_tokens=0.0, summary_source=TruthSource.MODEL,
            summarization_input_tokens=sum_in, summarization_output_tokens=0.0, matches_recorded=False))
        st.run.overflows += 1
        if sum_in > st.run.peak_truth:  # a request the run reports: the peak includes it
            st.run.peak_truth = sum_in
        st.run.no_compaction.append(f"after {st.wl.base[parent].id}: the summarisation request "
                                    f"({round(sum_in):,} tokens) is larger than the window ({window:,})")
        return None
    new = _summary(st, prep, parent)
    k = len(st.run.compactions)
    if k < len(st.given) and st.given[k] is not None and not new.by_user:
        new = _given(st, new, st.given[k])  # type: ignore[arg-type]
    if new.by_user:  # the user's (an extension's) summary: its compaction, not the policy's, at every setting
        reason, sum_in = CompactionReason.USER, 0.0
    st.synthetic.append(new.entry)
    st.fk_syn = next(k for k in range(len(st.synthetic) - 1, -1, -1)
                     if st.synthetic[k].id == prep.first_kept_entry_id)
    st.comp, st.fk = new.entry, fk
    st.summary_truth, st.summary_est = new.truth, new.estimate
    st.last_usage = None
    T = st.grid.truth_prefix
    sc = SimCompaction(
        reason=reason,
        parent_entry_id=st.wl.base[parent].id,
        parent_base_index=parent,
        first_kept_entry_id=prep.first_kept_entry_id,
        first_kept_base_index=fk,
        tokens_before=prep.tokens_before,
        truth_at_trigger=truth_now,
        count_at_trigger=view,
        is_split_turn=prep.is_split_turn,
        messages_summarized=len(prep.messages_to_summarize),
        turn_prefix_messages=len(prep.turn_prefix_messages),
        kept_tokens=T[parent + 1] - T[fk],
        summary_tokens=new.truth,
        summary_source=new.source,
        summarization_input_tokens=sum_in,
        summarization_output_tokens=0.0 if new.by_user else new.truth,
        matches_recorded=new.matches_recorded,
        early=reason == CompactionReason.THRESHOLD and truth_now <= st.s.threshold_at(parent + 1),
        preparation=prep,
        entry=new.entry,
    )
    st.run.compactions.append(sc)
    st.run.summarization_input += sum_in
    st.run.summarization_output += sc.summarization_output_tokens
    st.pending_thrash = sc
    return sc


def apply_recorded(st: SimState, rc: RecordedCompaction) -> SimCompaction | None:
    """Apply a compaction the user or an extension made (`RecordedCompaction.by_user`) where it was
    recorded, with its recorded summary and first kept entry, whatever the policy would do. None when
    the policy already made it (an extension may write the summary of Pi's own threshold compaction:
    the policy compacted there and took that summary, `_summary`), or when its first kept entry is
    not in the workload."""
    if id(rc.entry) in st.used_recorded:
        return None
    fk = st.grid.id_pos.get(rc.first_kept_entry_id) if rc.first_kept_entry_id is not None else None
    parent = rc.parent_base_index
    if fk is None:
        st.run.no_compaction.append(f"recorded compaction {rc.entry.id}: first kept entry not in the workload")
        return None
    entry = rc.entry
    truth_now, view = st.truth_before(parent + 1), st.pi_estimate_before(parent + 1)
    if truth_now > st.run.peak_truth:  # the peak is the largest truth reported anywhere
        st.run.peak_truth = truth_now
    st.used_recorded.add(id(entry))
    st.synthetic.append(entry)
    st.fk_syn = next((k for k in range(len(st.synthetic) - 1, -1, -1) if st.synthetic[k].id == rc.first_kept_entry_id),
                     len(st.synthetic) - 1)
    st.comp, st.fk = entry, fk
    st.summary_truth = st.truth.entry_tokens(entry)
    st.summary_est = estimate_tokens({"role": "compactionSummary", "summary": entry.data.get("summary") or ""}, st.v)
    st.last_usage = None
    T = st.grid.truth_prefix
    tokens = rc.tokens_before if isinstance(rc.tokens_before, int) and not isinstance(rc.tokens_before, bool) else 0
    sc = SimCompaction(
        reason=CompactionReason.USER, parent_entry_id=st.wl.base[parent].id if parent >= 0 else None,
        parent_base_index=parent, first_kept_entry_id=rc.first_kept_entry_id, first_kept_base_index=fk,
        tokens_before=tokens, truth_at_trigger=truth_now, count_at_trigger=view, is_split_turn=False,
        messages_summarized=0, turn_prefix_messages=0, kept_tokens=T[parent + 1] - T[fk],
        summary_tokens=st.summary_truth, summary_source=TruthSource.RECORDED, summarization_input_tokens=0.0,
        summarization_output_tokens=0.0, matches_recorded=True, entry=entry,
    )
    st.run.compactions.append(sc)
    return sc
