"""The truth fit's prior learnt from the run's other sessions (issue 12, cause 3).

A session with few usable requests cannot decide its own tokens-per-chars/4 ratio, so its fit is
shrunk toward a prior (`replay.truth_model.fit_overhead_ratio`). Alone, that prior is a documented
default (PRIOR_RATIO = 1.0: chars/4 is right on average for English prose and code), which is far
from the truth for, say, Chinese text on a model whose tokenizer gives 2.5. When a run replays many
sessions, the ones whose data decided their fit say what the provider's tokenizer does:
`pooled_priors` takes the median ratio of those fits by model, else provider, else the whole run
(at least MIN_SESSIONS sessions at a level), and `needs_prior` names the sessions to fit again with
it. A run's first pass only fits the prior-dominated sessions (`replay_records(defer_prior_dominated=
True)`), so each session is replayed once. Each session counts once (its first path), whatever the size of the settings grid.
Ratios are pooled in their own units (`truth_model.counter`: chars/4, o200k, a model's tokenizer under
`replay --truth-tokenizer`), and a fit applies only a prior learnt in its own (`truth_model.counter_notes`). Under
`--truth-tokenizer auto` (the default) a session too short to choose its counter takes the counter of
the prior its model's sessions teach (`replay.counter_choice.choose_counter`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sessiontools.read.values import finite

#: Sessions whose fit the data decided, needed before a level's median is used as a prior.
MIN_SESSIONS = 2


@dataclass(frozen=True, slots=True)
class TruthPrior:
    """A prior ratio (tokens per chars/4 token) and where it was learnt."""

    ratio: float
    source: str  # e.g. "model lab/lab-model, 6 sessions of this run"
    counter: str = "chars4"  # the units of the ratio: tokens per token of this counter (`truth_model.counter`)


def prior_text(prior: TruthPrior) -> str:
    """How a note names a learnt prior."""
    unit = "chars/4" if prior.counter == "chars4" else prior.counter
    return f"ratio {prior.ratio:.3g} to {unit}, learnt from {prior.source}"


@dataclass(frozen=True, slots=True)
class PriorTable:
    """Learnt priors by model key ("provider/model"), by provider, and over the whole run, each level
    by the units of its ratio (the counter of the fits it pools, `truth_model.counter`)."""

    by_model: Mapping[str, TruthPrior]
    by_provider: Mapping[str, TruthPrior]
    run: TruthPrior | None
    #: the same levels for the fits of other counters (a run of `--truth-tokenizer model` counts Qwen
    #: with its own tokenizer and the rest with o200k): counter -> (by model, by provider, run)
    others: Mapping[str, tuple[Mapping[str, TruthPrior], Mapping[str, TruthPrior], TruthPrior | None]] = \
        field(default_factory=dict)

    def lookup(self, model_key: str, counter: str | None = None) -> TruthPrior | None:
        """The prior for a session of `model_key`: its model's, else its provider's, else the run's, in
        the units of `counter` (None: those of the model's own sessions in this run, else of the run's
        most frequent counter)."""
        levels = [(self.by_model, self.by_provider, self.run), *self.others.values()]
        if counter is not None:
            levels = [lv for lv in levels if _counter_of(lv) == counter]
        else:  # the counter this model's sessions were fitted with comes first
            levels.sort(key=lambda lv: model_key not in lv[0])
        for by_model, by_provider, run in levels[:1]:
            got = by_model.get(model_key)
            if got is None:
                got = by_provider.get(model_key.partition("/")[0])
            return got if got is not None else run
        return None


def _counter_of(level: tuple[Mapping[str, TruthPrior], Mapping[str, TruthPrior], TruthPrior | None]) -> str | None:
    by_model, by_provider, run = level
    any_prior = next(iter(by_model.values()), None) or next(iter(by_provider.values()), None) or run
    return any_prior.counter if any_prior is not None else None


def _fits(records: Iterable[Any]) -> dict[str, tuple[str, float, bool, str]]:
    """session -> (model key, fitted ratio, prior-dominated, counter), from each session's first record
    (a `RunRecord` or a `DeferredRecord`: both carry the truth model's `TruthRecord`)."""
    out: dict[str, tuple[str, float, bool, str]] = {}
    for r in records:
        tm = r.truth_model
        ratio = finite(tm.ratio_to_chars4)
        if r.session in out or ratio is None:
            continue
        out[r.session] = (str(r.model), ratio, tm.prior_dominated, tm.counter_name)
    return out


def _level(groups: Mapping[str, list[float]], what: str, counter: str) -> dict[str, TruthPrior]:
    return {k: TruthPrior(statistics.median(v), f"{what} {k}, {len(v)} sessions of this run", counter)
            for k, v in groups.items() if len(v) >= MIN_SESSIONS}


def _pooled(fits: Iterable[tuple[str, float]], counter: str) -> tuple[dict[str, TruthPrior], dict[str, TruthPrior],
                                                                     TruthPrior | None]:
    by_model: dict[str, list[float]] = {}
    by_provider: dict[str, list[float]] = {}
    every: list[float] = []
    for key, ratio in fits:
        by_model.setdefault(key, []).append(ratio)
        by_provider.setdefault(key.partition("/")[0], []).append(ratio)
        every.append(ratio)
    run = TruthPrior(statistics.median(every), f"the {len(every)} sessions of this run with enough requests",
                     counter) if len(every) >= MIN_SESSIONS else None
    return _level(by_model, "model", counter), _level(by_provider, "provider", counter), run


def pooled_priors(records: Iterable[Any]) -> PriorTable:
    """Median fitted ratio of the sessions whose data decided their fit, by model, provider and run, for
    each counter the fits used (the most frequent first: `PriorTable.by_model`...)."""
    by_counter: dict[str, list[tuple[str, float]]] = {}
    for key, ratio, prior_dominated, counter in _fits(records).values():
        by_counter.setdefault(counter, [])
        if not prior_dominated:
            by_counter[counter].append((key, ratio))
    order = sorted(by_counter, key=lambda c: (-len(by_counter[c]), c != "chars4", c)) or ["chars4"]
    first = _pooled(by_counter.get(order[0], []), order[0])
    return PriorTable(*first, {c: _pooled(by_counter[c], c) for c in order[1:]})


def _counter_open(records: Iterable[Any]) -> set[str]:
    """Sessions whose counter `replay --truth-tokenizer auto` could not choose from their own requests
    (too few: `truth_model.counter_choice` with no prediction): a prior decides it, in any units
    (`replay.counter_choice.choose_counter`)."""
    return {r.session for r in records
            if r.truth_model.counter_choice is not None and r.truth_model.counter_choice.predictions == 0}


def needs_prior(records: Iterable[Any], table: PriorTable) -> list[str]:
    """Sessions (in first-seen order) whose fit was prior-dominated and for which `table` has a prior
    in their units (any units when their counter is still open, `_counter_open`)."""
    records = list(records)
    open_ = _counter_open(records)
    return [s for s, (key, _, dominated, counter) in _fits(records).items()
            if dominated and table.lookup(key, None if s in open_ else counter) is not None]
def refit_with_priors(
    per_file: list[list[Any]], replay_again: Callable[[str, PriorTable], list[Any]],
) -> list[list[Any]]:
    """Each file's run records (`replay.run_document.RunRecord`), with the prior-dominated sessions replayed
    (`replay_again(session, table)`) under the priors pooled from every other session's records. A
    session the first pass only fitted (a `DeferredRecord`, `replay_records(defer_prior_dominated=True)`)
    is replayed here, once, whatever the table holds for it; one the first pass replayed without a prior
    is replayed again only when the table has one for it. Files keep their order."""
    from sessiontools.replay.run_document import DeferredRecord

    records = [r for recs in per_file for r in recs]
    table = pooled_priors(records)
    redo = set(needs_prior(records, table)) | {r.session for r in records if isinstance(r, DeferredRecord)}
    if not redo:
        return per_file
    return [replay_again(recs[0].session, table) if recs and recs[0].session in redo else recs
            for recs in per_file]
