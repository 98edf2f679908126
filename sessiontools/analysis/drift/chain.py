"""The summaries on one transcript path, and which summary each compaction was written from.

Agent-neutral: the chain comes from `TranscriptPath.compactions` (summary, writer, trigger, kept
messages) and from the path's other summary messages (`Role.SUMMARY` that no compaction wrote: Pi's
branch summaries). Pi, Claude Code and Codex summaries need nothing else here.

Pairing rule: each compaction is compared with what it was written from: the previous compaction on
the path (Pi's `previousSummary`; relation `update`) and every branch summary inside its summarised
span (relation `absorbed`). The summarised span of compaction C starts where the previous
compaction kept from (its first kept message; else the message after its summary; else the start
of the path) and ends before C's first kept message (else before C's summary). On a path without
branch summaries the pairs are exactly the consecutive S(k) -> S(k+1). A branch summary is never
the `to` side: it is written from another branch, not from the summary before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessiontools.analysis.drift.counting import TokenCounter, chars4_tokens
from sessiontools.analysis.drift.summary import ParsedSummary, parse_summary
from sessiontools.transcript.model import Compaction, Role, TranscriptPath, Unit, UnitKind


@dataclass(frozen=True, slots=True, eq=False)
class ChainSummary:
    """One summary on a path, parsed."""

    position: int  # 1-based place in the chain: S(position)
    entry_id: str | None  # the file's id of the summary (Pi entry id, Claude Code uuid, ...)
    line: int  # 1-based line in the file
    index: int  # position of the summary message in TranscriptPath.messages
    kind: str  # "compaction" | "branch_summary"
    previous_summary_id: str | None  # for a compaction: the previous compaction on the path
    kept_from: int | None  # for a compaction: index of its first kept message (None: nothing kept)
    parsed: ParsedSummary
    tokens: int
    writer: str = "agent"  # who wrote it: "agent", "hook" (an extension or hook), "provider"
    compaction: Compaction | None = None  # the recorded compaction (None for a branch summary)

    @property
    def label(self) -> str:
        return f"S{self.position}"


def _summary_text(units: Sequence[Unit]) -> str:
    return "\n".join(u.text for u in units if u.kind == UnitKind.SUMMARY)


def summary_chain(path: TranscriptPath, counter: TokenCounter | None = None, agent: str | None = None) -> list[ChainSummary]:
    """The compaction and branch summaries on a path, in path order, parsed and counted."""
    counter = counter or TokenCounter("chars4", chars4_tokens)
    compactions = {c.index: c for c in path.compactions}
    out: list[ChainSummary] = []
    prev: str | None = None
    for m in path.messages:
        c = compactions.get(m.index)
        if c is not None:
            text = c.summary or ""
            kept = c.kept[0][0] if c.kept else None
            parsed = parse_summary(text, "compaction", writer=c.writer, agent=agent)
            out.append(ChainSummary(len(out) + 1, c.id, c.line, c.index, "compaction", prev, kept, parsed,
                                    counter.count(text), c.writer, c))
            prev = c.id
        elif m.role == Role.SUMMARY:
            text = _summary_text(m.units)
            parsed = parse_summary(text, "branch_summary", agent=agent)
            out.append(ChainSummary(len(out) + 1, m.id, m.line, m.index, "branch_summary", None, None, parsed,
                                    counter.count(text)))
    return out


@dataclass(frozen=True, slots=True, eq=False)
class SummaryPair:
    """Two summaries compared: `old` is what `new` was written from."""

    old: ChainSummary
    new: ChainSummary
    relation: str  # "update" (old was the previous summary) | "absorbed" (old, a branch summary, was summarised)


def span_start(prev: ChainSummary | None) -> int:
    """First message of the span a compaction after `prev` summarised (see the module docstring)."""
    if prev is None:
        return 0
    return prev.kept_from if prev.kept_from is not None else prev.index + 1


def span_end(s: ChainSummary) -> int:
    """End (exclusive) of the span compaction `s` summarised: its first kept message, else its summary."""
    return s.kept_from if s.kept_from is not None and s.kept_from <= s.index else s.index


def summary_pairs(chain: Sequence[ChainSummary]) -> list[SummaryPair]:
    """Each compaction with its previous compaction and with every branch summary it summarised."""
    pairs: list[SummaryPair] = []
    prev: ChainSummary | None = None
    for s in chain:
        if s.kind != "compaction":
            continue
        start, end = span_start(prev), span_end(s)
        found: list[SummaryPair] = []
        if prev is not None:
            found.append(SummaryPair(prev, s, "update"))
        for b in chain:
            if b.kind == "branch_summary" and start <= b.index < end:
                found.append(SummaryPair(b, s, "absorbed"))
        found.sort(key=lambda p: p.old.position)
        pairs.extend(found)
        prev = s
    return pairs
