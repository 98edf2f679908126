"""The run record: one replayed setting of one session path, typed until the output boundary.

`record_of(replay, run)` makes a `RunRecord` of a `SessionReplay`'s run (priced, its compactions with
their cache-bust costs, the truth model's summary, the cache model, the prices); `report/`, the
figures, the frames (`replay.frames`), the priors' refit and the CLI read it by attribute.
`RunRecord.to_dict()` is the one place its JSON form (the replay JSON contract's `runs[]` element) is
written, and `RunRecord.from_dict` the one place a JSON record is read back into it (a saved
`replay --format json`, the tests' golden documents). The values are held as the JSON shows them
(tokens rounded to integers, dollars to 6 decimals), so `from_dict(d).to_dict() == d`.

`Timeline` is a run's request-by-request context (`replay --plot`, the report's figures).
`InsteadOfRun` is what a file's replay returned instead of its runs: a `DeferredRecord` for a
prior-dominated session that the first pass only fitted (`replay.priors.refit_with_priors` replays
it), a `MissingModel` or a `NoReplay` for a file left out (`replay.session.replay_or_left_out`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sessiontools.replay.cost import CacheModel
from sessiontools.replay.counter_choice import CounterChoice
from sessiontools.replay.metrics import RunMetrics, round_dollars, run_metrics
from sessiontools.replay.records import (
    RecordedMatch,
    ReplayRun,
    ReplaySettings,
    RequestPoint,
    SimCompaction,
    TruthSource,
    read_json,
    write_json,
)


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One compaction a run decided on (`SimCompaction`), as the record shows it; `cache_bust_cost`:
    what the request after it paid over a cache hit (None: no price known, or a failed compaction)."""

    reason: str
    parent_entry_id: str | None
    first_kept_entry_id: str | None
    tokens_before: int
    truth_at_trigger: int
    policy_count_at_trigger: int
    early: bool
    thrash: bool
    is_split_turn: bool
    messages_summarized: int
    turn_prefix_messages: int
    kept_tokens: int
    summary_tokens: int
    summary_source: str
    matches_recorded: bool
    summarization_input_tokens: int
    cache_bust_cost: float | None = None

    @classmethod
    def of(cls, c: SimCompaction, bust: float | None = None) -> CompactionRecord:
        return cls(c.reason.value, c.parent_entry_id, c.first_kept_entry_id, c.tokens_before,
                   round(c.truth_at_trigger), round(c.count_at_trigger), c.early, c.thrash, c.is_split_turn,
                   c.messages_summarized, c.turn_prefix_messages, round(c.kept_tokens), round(c.summary_tokens),
                   c.summary_source.value, c.matches_recorded, round(c.summarization_input_tokens), round_dollars(bust))

    def to_dict(self, bust: bool = True) -> dict[str, Any]:
        """Its JSON, its fields in order; `bust`: with `cache_bust_cost` (a run's compactions have it,
        its failed ones not)."""
        return write_json(self, None if bust else "cache_bust_cost")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CompactionRecord:
        return read_json(cls, d)


@dataclass(frozen=True, slots=True)
class TruthRecord:
    """The truth model a run's truth came from, as the record shows it (`TruthModel.record`).
    `counter` None: chars/4, chosen by no `auto` (the JSON then has no `counter`)."""

    overhead_tokens: int
    ratio_to_chars4: float
    entries_attributed: int
    entries_modelled: int
    summary_tokens: int
    requests_fitted: int
    prior_dominated: bool
    notes: tuple[str, ...] = ()
    counter: str | None = None
    counter_choice: CounterChoice | None = None

    @property
    def counter_name(self) -> str:
        """What counted the units (`truth_model.counter`; chars/4 when the record names none)."""
        return self.counter or "chars4"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "overhead_tokens": self.overhead_tokens, "ratio_to_chars4": self.ratio_to_chars4,
            "entries_attributed": self.entries_attributed, "entries_modelled": self.entries_modelled,
            "summary_tokens": self.summary_tokens, "requests_fitted": self.requests_fitted,
            "prior_dominated": self.prior_dominated, "notes": list(self.notes),
        }
        if self.counter is not None:
            out["counter"] = self.counter
        if self.counter_choice is not None:
            out["counter_choice"] = self.counter_choice.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TruthRecord:
        choice = d.get("counter_choice")
        return cls(d["overhead_tokens"], d["ratio_to_chars4"], d["entries_attributed"], d["entries_modelled"],
                   d["summary_tokens"], d["requests_fitted"], d["prior_dominated"], tuple(d.get("notes") or ()),
                   d.get("counter"), None if choice is None else CounterChoice(
                       d.get("counter") or "chars4", dict(choice["errors"]), choice["predictions"], choice["note"]))


@dataclass(frozen=True, slots=True)
class PriceRecord:
    """A run's prices: dollars per million tokens by class (None: no price known), and their source."""

    source: str
    per_million: Mapping[str, float] | None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "per_million": None if self.per_million is None else dict(self.per_million)}


@dataclass(frozen=True, slots=True)
class Timeline:
    """The request-by-request context of one run (the data of `replay --plot` for one setting and of
    the report's timelines): truth per request, the policy's own count and the truth at every check
    point (one per `check_points`), why a check point is no request's, its compactions, the recorded
    ones (one per compaction the file records), threshold and window."""

    session: str
    threshold: int
    window: int
    truth: tuple[tuple[int, float], ...]
    policy_count: tuple[tuple[int, float], ...]
    check_truth: tuple[tuple[int, float], ...]
    checks_outside: tuple[tuple[int, str], ...]
    compactions: tuple[tuple[int, str], ...]
    recorded: tuple[tuple[int, float], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "threshold": self.threshold, "window": self.window,
                **{k: [list(p) for p in getattr(self, k)] for k in _TIMELINE_SERIES}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Timeline:
        series = {k: tuple((p[0], p[1]) for p in d[k]) for k in _TIMELINE_SERIES}
        return cls(d["session"], d["threshold"], d["window"], **series)


_TIMELINE_SERIES = ("truth", "policy_count", "check_truth", "checks_outside", "compactions", "recorded")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run (a session path at one setting) with everything the outputs show of it."""

    session: str
    agent: str
    leaf_id: str | None
    model: str
    settings: ReplaySettings
    compactions: tuple[CompactionRecord, ...]
    metrics: RunMetrics
    recorded_match: RecordedMatch
    truth_model: TruthRecord
    cache_model: CacheModel
    prices: PriceRecord
    recorded_cost_agent: float | None
    requests_from_recorded_usage: int
    requests_from_model: int
    requests_from_provider_error: int
    unmetered_replies: int
    no_compaction: tuple[str, ...]
    failed_compactions: tuple[CompactionRecord, ...]
    provider_limits: tuple[int, ...]
    #: The run's timeline where it was asked for (`replay_records(timeline=True)`): not in the JSON record.
    timeline: Timeline | None = field(default=None, compare=False)

    def to_dict(self, timeline: bool = False) -> dict[str, Any]:
        """The replay JSON contract's `runs[]` element (`timeline`: with the run's timeline, when it has one)."""
        out = {
            "session": self.session, "agent": self.agent, "leaf_id": self.leaf_id, "model": self.model,
            "settings": self.settings.to_dict(),
            "compactions": [c.to_dict() for c in self.compactions],
            "metrics": self.metrics.to_dict(),
            "recorded_match": self.recorded_match.to_dict(),
            "truth_model": self.truth_model.to_dict(),
            "cache_model": self.cache_model.to_dict(),
            "prices": self.prices.to_dict(),
            "recorded_cost_agent": self.recorded_cost_agent,
            "requests_from_recorded_usage": self.requests_from_recorded_usage,
            "requests_from_model": self.requests_from_model,
            "requests_from_provider_error": self.requests_from_provider_error,
            "unmetered_replies": self.unmetered_replies,
            "no_compaction": list(self.no_compaction),
            "failed_compactions": [c.to_dict(bust=False) for c in self.failed_compactions],
            "provider_limits": list(self.provider_limits),
        }
        if timeline and self.timeline is not None:
            out["timeline"] = self.timeline.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunRecord:
        """A `runs[]` element of the replay JSON read back (its `timeline` too, when it has one)."""
        rm, pr = d["recorded_match"], d["prices"]
        return cls(
            d["session"], d["agent"], d["leaf_id"], d["model"], settings_from_dict(d["settings"]),
            tuple(CompactionRecord.from_dict(c) for c in d["compactions"]), RunMetrics.from_dict(d["metrics"]),
            RecordedMatch(rm["recorded"], rm["matched"], rm["extra"]), TruthRecord.from_dict(d["truth_model"]),
            CacheModel.from_dict(d["cache_model"]),
            PriceRecord(pr["source"], pr["per_million"]), d["recorded_cost_agent"],
            d["requests_from_recorded_usage"], d["requests_from_model"], d["requests_from_provider_error"],
            d["unmetered_replies"], tuple(d["no_compaction"]),
            tuple(CompactionRecord.from_dict(c) for c in d["failed_compactions"]), tuple(d["provider_limits"]),
            Timeline.from_dict(d["timeline"]) if d.get("timeline") else None)


#: The keys of `ReplaySettings.to_dict` that are fields of its own (the rest are the policy's options).
_SETTING_FIELDS = frozenset({"context_window", "reserve_tokens", "keep_recent_tokens", "policy", "threshold",
                             "window_changes"})


def settings_from_dict(d: Mapping[str, Any]) -> ReplaySettings:
    """`ReplaySettings.to_dict` read back: a policy with its own options (`auto_compact_limit` present)
    has its own threshold."""
    own = "auto_compact_limit" in d
    return ReplaySettings(d["context_window"], d["reserve_tokens"], d["keep_recent_tokens"], d["policy"],
                          tuple((w[0], w[1]) for w in d.get("window_changes") or ()),
                          tuple((k, v) for k, v in d.items() if k not in _SETTING_FIELDS) if own else (),
                          d["threshold"] if own else None)


@dataclass(frozen=True, slots=True)
class InsteadOfRun:
    """What a file's replay returned instead of its runs, one per file (picklable, what `--jobs`
    workers return): a `DeferredRecord` (replayed later, `replay.priors.refit_with_priors`), a
    `MissingModel` or a `NoReplay` (left out: the CLI says why, `cli.windows`).
    `replay.session.replay_or_left_out` makes the two left-out ones from the typed errors the replay
    raises."""

    session: str


@dataclass(frozen=True, slots=True)
class DeferredRecord(InsteadOfRun):
    """What the first pass knows of a prior-dominated session: its fit, to learn nothing from and to be
    replayed with the learnt priors (`replay.priors.refit_with_priors`)."""

    agent: str
    model: str
    truth_model: TruthRecord


@dataclass(frozen=True, slots=True)
class MissingModel(InsteadOfRun):
    """A file left out: its model has no known window (`errors.ModelNotInCatalogue`)."""

    model: str  # provider/model


@dataclass(frozen=True, slots=True)
class NoReplay(InsteadOfRun):
    """A file left out: no model request (`errors.NothingToReplay`), or no message at all (why, in words)."""

    reason: str


def record_of(pr: Any, run: ReplayRun, timeline: bool = False) -> RunRecord:
    """The record of one run of a `SessionReplay` (`timeline`: with its `timeline_of`)."""
    cost = pr.cost_of(run)
    busts = cost.cache_bust_costs
    recorded_cost = sum(pr.recorded_costs.values()) if pr.recorded_costs else None
    price = pr.price.per_token
    from_recorded, from_model, from_provider = source_counts(run)
    return RunRecord(
        session=pr.source, agent=pr.agent, leaf_id=pr.leaf_id, model=pr.model_name, settings=run.settings,
        compactions=tuple(CompactionRecord.of(c, b) for c, b in zip(run.compactions, busts, strict=True)),
        metrics=run_metrics(run, cost), recorded_match=run.recorded_match, truth_model=pr.truth.record(),
        cache_model=pr.cache,
        prices=PriceRecord(pr.price.source, None if price is None else {k: round(v * 1e6, 6) for k, v in price.items()}),
        recorded_cost_agent=round_dollars(recorded_cost),
        requests_from_recorded_usage=from_recorded, requests_from_model=from_model,
        requests_from_provider_error=from_provider,
        unmetered_replies=pr.unmetered, no_compaction=tuple(run.no_compaction),
        failed_compactions=tuple(CompactionRecord.of(c) for c in run.failed_compactions),
        provider_limits=tuple(sorted(set(run.provider_limits))),
        timeline=timeline_of(pr, run) if timeline else None,
    )


try:
    # `source_counts` by identity in C where every point's source is a member (sessiontools/read/_price.c):
    # bench s0049, a run of 460 requests, min of 7: 18.6 -> 0.95 us (the list and its three counts).
    from sessiontools.read._native import point_sources as c_point_sources
except ImportError:  # not built on this machine: the list's counts
    c_point_sources = None

#: The truth sources a run record counts, in its order (requests_from_recorded_usage, _model, _provider_error).
_SOURCES = (TruthSource.RECORDED, TruthSource.MODEL, TruthSource.PROVIDER)


def source_counts(run: ReplayRun) -> tuple[int, ...]:
    """How many of the run's requests have each truth source of `_SOURCES` (by `==`, as `list.count`)."""
    got = c_point_sources(run.requests, RequestPoint, _SOURCES) if c_point_sources is not None else None
    if got is not None:
        return got  # type: ignore[no-any-return]
    points = [r.truth_source for r in run.requests]
    return tuple(points.count(s) for s in _SOURCES)


def timeline_of(pr: Any, run: ReplayRun) -> Timeline:
    """The `Timeline` of one run of a `SessionReplay`: from the same run as its numbers."""
    checks = run.check_counts
    outside = [c.outside(checks[k - 1] if k else None) for k, c in enumerate(checks)]
    return Timeline(
        session=pr.source, threshold=run.settings.threshold, window=run.settings.context_window,
        truth=tuple((p.base_index, p.truth) for p in run.requests),
        policy_count=tuple((c.at, c.count) for c in checks),
        check_truth=tuple((c.at, c.truth) for c in checks),
        checks_outside=tuple((k, why) for k, why in enumerate(outside) if why is not None),
        compactions=tuple((c.parent_base_index, c.reason.value) for c in run.compactions),
        recorded=tuple(pr.recorded_points(run)),
    )
