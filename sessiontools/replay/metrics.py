"""The per-setting metrics of the replay JSON contract (`runs[].metrics`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from sessiontools.replay.cost import RunCost
from sessiontools.replay.records import CompactionReason, ReplayRun, read_json, write_json


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """The per-setting metrics of one run, in the order of the JSON contract (`run_metrics` says what
    each means). Tokens and counts are ints, `early_rate` and `late_rate` fractions, costs dollars
    (None: no price known, never 0)."""

    compactions: int
    threshold_compactions: int
    overflow_compactions: int
    user_compactions: int
    early: int
    late: int
    mid_run_crossings: int
    overflows: int
    provider_rejections: int
    failed_recoveries: int
    failed_compactions: int
    thrash: int
    check_points: int
    early_rate: float
    late_rate: float
    peak_truth_tokens: int
    billed_input_tokens: int
    summarization_input_tokens: int
    summarization_output_tokens: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    rejected_input_tokens: int
    cost_agent: float | None
    cost_summarization: float | None
    cost: float | None

    def value(self, name: str) -> Any:
        """The metric `name` (one of `METRICS`: a `--fail-if` or `--plot-metric` the user named)."""
        if name not in METRICS:
            raise KeyError(name)
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        return write_json(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunMetrics:
        return read_json(cls, d)


#: The metrics' names, in the JSON contract's order (`runs[].metrics`, the runs frame's columns).
METRICS = tuple(f.name for f in fields(RunMetrics))


def round_dollars(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def run_metrics(run: ReplayRun, cost: RunCost | None = None) -> RunMetrics:
    """The metrics of one run; token classes and costs from `cost` (`replay.cost.price_run`).

    `compactions` are the policy's own (threshold + overflow); `user_compactions` the recorded manual
    or extension-written ones, applied where they were recorded (not the policy's decision).
    `overflows`: requests (and summarisation requests) whose truth exceeds the setting's window;
    `provider_rejections`: recorded rejections of a context that fits it; `failed_compactions`:
    compactions whose summarisation request exceeded the window (not billed).
    `billed_input_tokens`: prompt tokens of every answered request plus the summary requests' input
    (rejected requests are not billed: `rejected_input_tokens`); `input_tokens`, `cache_read_tokens`,
    `cache_write_tokens`, `output_tokens`: the agent's own requests by class; `cost_agent` their
    price, `cost_summarization` the summary requests', `cost` the sum (None without prices)."""
    n_threshold = sum(1 for c in run.compactions if c.reason == CompactionReason.THRESHOLD)
    n_user = sum(1 for c in run.compactions if c.reason == CompactionReason.USER)
    c = cost or RunCost()
    return RunMetrics(
        compactions=len(run.compactions) - n_user,
        threshold_compactions=n_threshold,
        overflow_compactions=len(run.compactions) - n_threshold - n_user,
        user_compactions=n_user,
        early=run.early,
        late=run.late,
        mid_run_crossings=run.mid_run_crossings,
        overflows=run.overflows,
        provider_rejections=run.provider_rejections,
        failed_recoveries=run.failed_recoveries,
        failed_compactions=len(run.failed_compactions),
        thrash=run.thrash,
        check_points=run.check_points,
        early_rate=round(run.early / n_threshold, 6) if n_threshold else 0.0,
        late_rate=round(run.late / run.check_points_over, 6) if run.check_points_over else 0.0,
        peak_truth_tokens=round(run.peak_truth),
        billed_input_tokens=round(run.billed_input + run.summarization_input),
        summarization_input_tokens=round(run.summarization_input),
        summarization_output_tokens=round(run.summarization_output),
        input_tokens=round(c.input_tokens),
        cache_read_tokens=round(c.cache_read_tokens),
        cache_write_tokens=round(c.cache_write_tokens),
        output_tokens=round(c.output_tokens),
        rejected_input_tokens=round(c.rejected_input_tokens),
        cost_agent=round_dollars(c.cost_agent),
        cost_summarization=round_dollars(c.cost_summarization),
        cost=round_dollars(c.cost),
    )
