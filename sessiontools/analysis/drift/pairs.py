"""Drift between the two summaries of a pair: item changes, literals, goal similarity, file lists."""

from __future__ import annotations

from dataclasses import dataclass

from sessiontools.analysis.drift.chain import SummaryPair
from sessiontools.analysis.drift.literals import contains
from sessiontools.analysis.drift.matching import ItemChange, match_items
from sessiontools.analysis.drift.sections import FUZZY_THRESHOLD, GOAL
from sessiontools.analysis.drift.summary import ParsedSummary
from sessiontools.analysis.drift.text import text_similarity

CHANGE_KINDS = ("kept", "dropped", "added", "changed", "moved")


@dataclass(frozen=True, slots=True)
class FileListViolation:
    """A file Pi carries forward that the newer summary's lists lack."""

    list: str  # "read-files" | "modified-files": the older list it was in
    file: str
    now_in: str  # "read-files" | "neither"


@dataclass(frozen=True, slots=True, eq=False)
class PairDrift:
    """Drift between the two summaries of a pair."""

    pair: SummaryPair
    changes: tuple[ItemChange, ...]
    literals_kept: tuple[tuple[str, str], ...]  # (value, kind)
    literals_dropped: tuple[tuple[str, str], ...]
    literals_added: tuple[tuple[str, str], ...]
    goal_similarity: float | None
    file_list_violations: tuple[FileListViolation, ...]

    @property
    def growth_tokens(self) -> int:
        return self.pair.new.tokens - self.pair.old.tokens

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    def by_section(self) -> dict[str, dict[str, int]]:
        """Counts per section; moved items count in the section they left."""
        order: list[str] = list(self.pair.old.parsed.sections) + [
            s for s in self.pair.new.parsed.sections if s not in self.pair.old.parsed.sections
        ]
        out = {s: dict.fromkeys(CHANGE_KINDS, 0) for s in order}
        for c in self.changes:
            out.setdefault(c.section, dict.fromkeys(CHANGE_KINDS, 0))
            out[c.section][c.kind] += 1
        return out

    @property
    def literal_retention(self) -> float | None:
        n = len(self.literals_kept) + len(self.literals_dropped)
        return round(len(self.literals_kept) / n, 4) if n else None


def _file_list_violations(old: ParsedSummary, new: ParsedSummary) -> list[FileListViolation]:
    """Files Pi carries forward (it merges the previous compaction's lists) that the new lists lack."""
    out: list[FileListViolation] = []
    new_read = set(new.read_files or ())
    new_mod = set(new.modified_files or ())
    for f in old.read_files or ():
        if f not in new_read and f not in new_mod:
            out.append(FileListViolation("read-files", f, "neither"))
    for f in old.modified_files or ():
        if f not in new_mod:
            out.append(FileListViolation("modified-files", f, "read-files" if f in new_read else "neither"))
    return out


def pair_drift(pair: SummaryPair, threshold: float = FUZZY_THRESHOLD) -> PairDrift:
    """Item changes, literal retention, goal similarity and file-list violations of one pair."""
    a, b = pair.old.parsed, pair.new.parsed
    changes = match_items(a.items, b.items, threshold)
    kept, dropped = [], []
    for v, k in a.literals.items():
        (kept if v in b.literals or contains(b.text, v) else dropped).append((v, k))
    added = [(v, k) for v, k in b.literals.items() if v not in a.literals and not contains(a.text, v)]
    goal = None
    if a.sections.get(GOAL) and b.sections.get(GOAL):
        goal = round(text_similarity(a.section_text(GOAL), b.section_text(GOAL)), 4)
    violations = _file_list_violations(a, b) if pair.relation == "update" else []
    return PairDrift(pair, tuple(changes), tuple(kept), tuple(dropped), tuple(added), goal, tuple(violations))


