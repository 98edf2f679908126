"""Drift of whole chains and reports: the measures per path, the gateable metrics, the entry points."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.drift.chain import ChainSummary, summary_chain, summary_pairs
from sessiontools.analysis.drift.counting import TokenCounter, chars4_tokens, token_counter
from sessiontools.analysis.drift.decay import Decay, Resurrection, decay_curves, resurrections
from sessiontools.analysis.drift.facts import CATEGORIES
from sessiontools.analysis.drift.pairs import PairDrift, pair_drift
from sessiontools.analysis.drift.retention import ChainFacts, chain_facts, pooled_retention
from sessiontools.analysis.drift.sections import FUZZY_THRESHOLD
from sessiontools.names import DRIFT_METRICS
from sessiontools.transcript.model import Transcript, TranscriptPath

Metrics = dict[str, int | float | None]


@dataclass(frozen=True, slots=True, eq=False)
class ChainDrift:
    """Drift along the summaries of one path."""

    session: str
    leaf_id: str | None
    chain: tuple[ChainSummary, ...]
    pairs: tuple[PairDrift, ...]
    decay: tuple[Decay, ...]
    resurrections: tuple[Resurrection, ...]
    facts: ChainFacts
    agent: str | None = None  # the agent that wrote the file (None: not said)
    #: The path's most used model, `provider/model` (`--group-by model|provider`); None: no request.
    model: str | None = None

    def metrics(self) -> Metrics:
        return chain_metrics([self])


def analyse_path(
    path: TranscriptPath,
    *,
    session: str = "",
    counter: TokenCounter | None = None,
    threshold: float = FUZZY_THRESHOLD,
    agent: str | None = None,
    cwd: str | None = None,
) -> ChainDrift:
    """Everything `diff-summaries` reports for one transcript path."""
    chain = summary_chain(path, counter, agent)
    drifts = [pair_drift(p, threshold) for p in summary_pairs(chain)]
    return ChainDrift(
        session=session,
        leaf_id=path.leaf_id,
        chain=tuple(chain),
        pairs=tuple(drifts),
        decay=tuple(decay_curves(chain, threshold)),
        resurrections=tuple(resurrections(chain, drifts, threshold)),
        facts=chain_facts(path, chain, cwd),
        agent=agent,
        model=main_model(path),
    )


def main_model(path: TranscriptPath) -> str | None:
    """`provider/model` of the path's most frequent requests (the first seen on a tie), as inspect names it."""
    from collections import Counter

    models = Counter(f"{r.provider or '?'}/{r.model or '?'}" for r in path.requests)
    return max(models, key=models.__getitem__) if models else None


#: Metrics a `--fail-if` gate can test, with what they mean (their one home: `sessiontools.names`).
METRICS: dict[str, str] = DRIFT_METRICS


def chain_metrics(chains: Sequence[ChainDrift]) -> Metrics:
    """The METRICS over some chains (one chain's, or a whole report's)."""
    drifts = [d for c in chains for d in c.pairs]
    goals = [d.goal_similarity for d in drifts if d.goal_similarity is not None]
    rets = [r for r in (d.literal_retention for d in drifts) if r is not None]
    return {
        "summaries": sum(len(c.chain) for c in chains),
        "pairs": len(drifts),
        "dropped_items": sum(d.count("dropped") for d in drifts),
        "added_items": sum(d.count("added") for d in drifts),
        "changed_items": sum(d.count("changed") for d in drifts),
        "moved_items": sum(d.count("moved") for d in drifts),
        "dropped_literals": sum(len(d.literals_dropped) for d in drifts),
        "missing_sections": sum(len(s.parsed.sections_missing) for c in chains for s in c.chain),
        "resurrections": sum(len(c.resurrections) for c in chains),
        "file_list_violations": sum(len(d.file_list_violations) for d in drifts),
        "growth_tokens": max((d.growth_tokens for d in drifts), default=0),
        "min_goal_similarity": min(goals, default=1.0),
        "min_literal_retention": min(rets, default=1.0),
        **{f"retention.{c}": pooled_retention([ch.facts for ch in chains], c) for c in CATEGORIES},
        "lost_facts": sum(len(x.categories[c].lost) for ch in chains for x in ch.facts.summaries for c in CATEGORIES),
    }


@dataclass(frozen=True, slots=True, eq=False)
class DriftReport:
    """`diff-summaries` over one or more sessions: one chain per analysed path."""

    chains: tuple[ChainDrift, ...]
    tokenizer: str
    threshold: float = FUZZY_THRESHOLD

    def metrics(self) -> Metrics:
        return chain_metrics(self.chains)


def as_transcript(source: Any, *, leaf: str | None = None, all_leaves: bool = False) -> Transcript:
    """A transcript as it is; any agent's loaded session through its adapter (`transcript.load`: a
    session tree's default path, `leaf`'s, or every leaf's)."""
    if isinstance(source, Transcript):
        return source
    from sessiontools.transcript.load import transcript_of

    return transcript_of(source, leaf=leaf, all_leaves=all_leaves)


def diff_summaries(
    sources: Sequence[Any],
    *,
    leaf: str | None = None,
    all_leaves: bool = False,
    counter: TokenCounter | None = None,
    threshold: float = FUZZY_THRESHOLD,
) -> DriftReport:
    """Analyse every path of each transcript (a Pi session: its default path, `leaf`'s or every leaf's)."""
    counter = counter or TokenCounter("chars4", chars4_tokens)
    chains = []
    for src in sources:
        t = as_transcript(src, leaf=leaf, all_leaves=all_leaves)
        for p in t.paths:
            cwd = t.settings.get("cwd")
            chains.append(analyse_path(p, session=t.source, counter=counter, threshold=threshold, agent=str(t.agent),
                                       cwd=cwd if isinstance(cwd, str) else None))
    return DriftReport(tuple(chains), counter.name, threshold)


class DriftWorker:
    """The chains of one session, as a picklable callable (for `--jobs`): each process builds its
    token counter once."""

    _counters: dict[str, TokenCounter] = {}

    def __init__(self, *, leaf: str | None, all_leaves: bool, tokenizer: str,
                 threshold: float = FUZZY_THRESHOLD) -> None:
        self.leaf, self.all_leaves, self.tokenizer, self.threshold = leaf, all_leaves, tokenizer, threshold

    def __call__(self, source: Any) -> tuple[ChainDrift, ...]:
        counter = DriftWorker._counters.get(self.tokenizer)
        if counter is None:
            counter = DriftWorker._counters[self.tokenizer] = token_counter(self.tokenizer)
        report = diff_summaries([source], leaf=self.leaf, all_leaves=self.all_leaves, counter=counter,
                                threshold=self.threshold)
        return report.chains
