"""The per-setting metrics of the replay JSON contract (`runs[].metrics`)."""

from __future__ import annotations

from typing import Any

from sessiontools.replay.records import CompactionReason, ReplayRun

METRICS = (
    "compactions", "threshold_compactions", "overflow_compactions", "early", "late", "mid_run_crossings",
    "overflows", "failed_recoveries", "thrash", "check_points", "early_rate", "late_rate", "peak_truth_tokens",
    "billed_input_tokens", "summarization_input_tokens", "summarization_output_tokens", "cost",
)


def run_metrics(run: ReplayRun, prices: dict[str, float] | None = None) -> dict[str, Any]:
    """The metrics of one run (`prices`: dollars per token by class, or None)."""
    n_threshold = sum(1 for c in run.compactions if c.reason == CompactionReason.THRESHOLD)
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
