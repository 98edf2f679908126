"""Fact retention: which facts of its span each compaction's summary states, and how they decay.

A summary states a fact when the fact's key (`facts.fact_key`) occurs in the summary's normalised
text (the whole text, Pi's `<read-files>` / `<modified-files>` lists included): as a whole token for
files and identifiers, as a substring for errors and constraints (CJK has no word boundaries). A
path is also stated by its basename when no other path of the chain's spans has that basename.

A compaction whose summary is not readable (`Compaction.summary` None: an encrypted remote summary)
is left out: its span is not measured and it is no step of age.

Decay: the facts whose first span is compaction k form cohort k; survival at age a is the share of
the cohort stated by compaction k+a, pooled over the cohorts that reach that age (age 0 is the
retention at the first summary that could state them). A fact stated at j, not at j+1.., and stated
again at l is a return (`FactReturn`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sessiontools.analysis.drift.chain import ChainSummary, span_end, span_start
from sessiontools.analysis.drift.facts import CATEGORIES, Fact, basenames, fact_key, span_facts
from sessiontools.transcript.model import TranscriptPath

_WHOLE = frozenset({"files", "identifiers"})


@dataclass(frozen=True, slots=True)
class CategoryRetention:
    """One category of one compaction: facts in its span, how many the summary states, the lost ones."""

    in_span: int
    retained: int
    lost: tuple[Fact, ...]

    @property
    def rate(self) -> float | None:
        return round(self.retained / self.in_span, 4) if self.in_span else None


@dataclass(frozen=True, slots=True, eq=False)
class SummaryFacts:
    summary: ChainSummary
    categories: dict[str, CategoryRetention]
    stated: frozenset[Fact] = frozenset()  # every fact of this or an earlier span that the summary states


@dataclass(frozen=True, slots=True)
class FactReturn:
    """A fact stated by `last_seen`, not stated by `lost_in` (and maybe later ones), stated again by `back_in`."""

    fact: Fact
    last_seen: ChainSummary
    lost_in: ChainSummary
    back_in: ChainSummary


@dataclass(frozen=True, slots=True, eq=False)
class ChainFacts:
    """Fact retention of every compaction on a path, survival by age per category, and returns."""

    summaries: tuple[SummaryFacts, ...]  # one per compaction, in chain order
    survival_counts: dict[str, tuple[tuple[int, int], ...]]  # category -> (stated, eligible) by age
    returns: tuple[FactReturn, ...]

    @property
    def survival(self) -> dict[str, tuple[float, ...]]:
        """Category -> share of the cohorts stated at age 0, 1, 2, ..."""
        return {c: tuple(round(a / b, 4) for a, b in v) for c, v in self.survival_counts.items()}

    def of(self, s: ChainSummary) -> SummaryFacts | None:
        return next((x for x in self.summaries if x.summary is s), None)


class _Matcher:
    """Whether a normalised summary text states a fact (see the module docstring)."""

    def __init__(self, files: Sequence[Fact]) -> None:
        self.bases = basenames(files)
        self._pats: dict[str, re.Pattern[str]] = {}

    def _whole(self, key: str, text: str) -> bool:
        if key not in text:
            return False
        pat = self._pats.get(key)
        if pat is None:
            pat = self._pats[key] = re.compile(r"(?<!\w)" + re.escape(key) + r"(?!\w)")
        return pat.search(text) is not None

    def states(self, f: Fact, text: str) -> bool:
        if f.category not in _WHOLE:
            return f.key in text
        if self._whole(f.key, text):
            return True
        if f.category == "files":
            base = f.key.rstrip("/").rsplit("/", 1)[-1]
            return base != f.key and self.bases.get(base) == f.key and self._whole(base, text)
        return False


def _cohort_survival(cohorts: dict[int, list[Fact]], present: list[set[tuple[str, str]]],
                     category: str) -> tuple[tuple[int, int], ...]:
    """(stated, eligible) by age for one category."""
    out: list[tuple[int, int]] = []
    n = len(present)
    for age in range(n):
        eligible = stated = 0
        for k, facts in cohorts.items():
            if k + age >= n:
                continue
            for f in facts:
                if f.category != category:
                    continue
                eligible += 1
                stated += (f.category, f.key) in present[k + age]
        if not eligible:
            break
        out.append((stated, eligible))
    return tuple(out)


def _returns(comps: Sequence[ChainSummary], first: dict[tuple[str, str], tuple[Fact, int]],
             present: list[set[tuple[str, str]]]) -> list[FactReturn]:
    out = []
    for key, (f, k) in first.items():
        last_seen: int | None = None
        lost: int | None = None
        for j in range(k, len(comps)):
            if key in present[j]:
                if lost is not None and last_seen is not None:
                    out.append(FactReturn(f, comps[last_seen], comps[lost], comps[j]))
                last_seen, lost = j, None
            elif last_seen is not None and lost is None:
                lost = j
    return out


def chain_facts(path: TranscriptPath, chain: Sequence[ChainSummary], cwd: str | None = None) -> ChainFacts:
    """Facts per compaction span, retention per summary, survival by age and returns on one path."""
    comps = [s for s in chain if s.kind == "compaction"]
    spans = []
    prev: ChainSummary | None = None
    overflows = frozenset(o.index for o in path.overflows)
    for s in comps:
        spans.append(span_facts(path.messages[span_start(prev):span_end(s)], overflows, cwd))
        prev = s
    # a compaction without a readable summary (an encrypted remote one) states nothing we can read:
    # its span is not measured and it is no step of age
    readable = [(s, sp) for s, sp in zip(comps, spans, strict=True) if s.compaction is None
                or s.compaction.summary is not None]
    comps = [s for s, _ in readable]
    spans = [sp for _, sp in readable]
    matcher = _Matcher([f for sp in spans for f in sp["files"]])
    first: dict[tuple[str, str], tuple[Fact, int]] = {}
    present: list[set[tuple[str, str]]] = []
    out = []
    for k, (s, sp) in enumerate(zip(comps, spans, strict=True)):
        for c in CATEGORIES:
            for f in sp[c]:
                first.setdefault((c, f.key), (f, k))
        text = fact_key(s.parsed.text)
        stated = {key for key, (f, _) in first.items() if matcher.states(f, text)}
        present.append(stated)
        cats = {}
        for c in CATEGORIES:
            lost = tuple(f for f in sp[c] if (c, f.key) not in stated)
            cats[c] = CategoryRetention(len(sp[c]), len(sp[c]) - len(lost), lost)
        out.append(SummaryFacts(s, cats, frozenset(first[key][0] for key in stated)))
    cohorts: dict[int, list[Fact]] = {}
    for f, k in first.values():
        cohorts.setdefault(k, []).append(f)
    survival = {c: _cohort_survival(cohorts, present, c) for c in CATEGORIES}  # counts
    return ChainFacts(tuple(out), survival, tuple(_returns(comps, first, present)))


def pooled_retention(chains: Sequence[ChainFacts], category: str) -> float | None:
    """Facts stated over facts in span, summed over every compaction of some chains (None: no facts)."""
    n = sum(x.categories[category].in_span for c in chains for x in c.summaries)
    r = sum(x.categories[category].retained for c in chains for x in c.summaries)
    return round(r / n, 4) if n else None


def pooled_survival_counts(chains: Sequence[ChainFacts], category: str) -> tuple[tuple[int, int], ...]:
    """(stated, eligible) by age of one category, summed over several chains."""
    stated: list[int] = []
    eligible: list[int] = []
    for c in chains:
        for age, (a, b) in enumerate(c.survival_counts[category]):
            if age == len(stated):
                stated.append(0)
                eligible.append(0)
            stated[age] += a
            eligible[age] += b
    return tuple(zip(stated, eligible, strict=True))
