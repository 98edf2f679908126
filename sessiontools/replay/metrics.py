"""The per-setting metrics of the replay JSON contract (`runs[].metrics`)."""

from __future__ import annotations

from typing import Any

from sessiontools.replay.cost import RunCost
from sessiontools.replay.records import CompactionReason, ReplayRun

METRICS = (
    "compactions", "threshold_compactions", "overflow_compactions", "user_compactions", "early", "late", "mid_run_crossings",
    "overflows", "provider_rejections", "failed_recoveries", "failed_compactions", "thrash", "check_points", "early_rate", "late_rate", "peak_truth_tokens",
    "billed_input_tokens", "summarization_input_tokens", "summarization_output_tokens",
    "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "rejected_input_tokens",
    "cost_agent", "cost_summarization", "cost",
)


def _money(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def run_metrics(run: ReplayRun, cost: RunCost | None = None) -> dict[str, Any]:
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
    return {
        "compactions": len(run.compactions) - n_user,
        "threshold_compactions": n_threshold,
        "overflow_compactions": len(run.compactions) - n_threshold - n_user,
        "user_compactions": n_user,
        "early": run.early,
        "late": run.late,
        "mid_run_crossings": run.mid_run_crossings,
        "overflows": run.overflows,
        "provider_rejections": run.provider_rejections,
        "failed_recoveries": run.failed_recoveries,
        "failed_compactions": len(run.failed_compactions),
        "thrash": run.thrash,
        "check_points": run.check_points,
        "early_rate": round(run.early / n_threshold, 6) if n_threshold else 0.0,
        "late_rate": round(run.late / run.check_points_over, 6) if run.check_points_over else 0.0,
        "peak_truth_tokens": round(run.peak_truth),
        "billed_input_tokens": round(run.billed_input + run.summarization_input),
        "summarization_input_tokens": round(run.summarization_input),
        "summarization_output_tokens": round(run.summarization_output),
        "input_tokens": round(c.input_tokens),
        "cache_read_tokens": round(c.cache_read_tokens),
        "cache_write_tokens": round(c.cache_write_tokens),
        "output_tokens": round(c.output_tokens),
        "rejected_input_tokens": round(c.rejected_input_tokens),
        "cost_agent": _money(c.cost_agent),
        "cost_summarization": _money(c.cost_summarization),
        "cost": _money(c.cost),
    }
