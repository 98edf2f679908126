"""The statistics of estimate-error over every file's rows, as frames and typed records.

`summarize` concatenates the per-file request frames, adds the calibrated estimator (out of
sample, or from a loaded calibration) and the error columns, and computes: overall statistics,
statistics and decisions per group, per file, the calibration fits and tokenizer profiles. JSON,
tables, CSV and Parquet are made from these in `report/estimate_error.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.analysis.estimate.calibration import (
    CalibrationOutcome,
    TokenizerProfile,
    fit_calibration,
    fit_tokenizer_profile,
)
from sessiontools.analysis.estimate.options import ESTIMATORS, EstimateErrorOptions
from sessiontools.analysis.estimate.rows import SessionRows
from sessiontools.analysis.estimate.stats import decision_stats_frame, estimator_stats, group_expr, group_rank
from sessiontools.tokens.calibrated import Calibration

#: Columns of the request frame that are working state, not output.
INTERNAL_PREFIXES = ("t_", "hyb_", "ins_", "f_")


@dataclass(slots=True)
class GroupStats:
    label: str
    requests: int
    stats: Any  # estimator_stats frame
    timing: Any  # decision_stats_frame


@dataclass(slots=True)
class SessionStats:
    session: str
    pi_version: str
    requests: int
    skipped: Counter[str]
    stats: Any
    tokenizer: TokenizerProfile | None


@dataclass(slots=True)
class CalibrationSummary:
    outcome: CalibrationOutcome
    alternative: CalibrationOutcome | None  # the chars4 fit, when x is not chars4
    loaded: Calibration | None
    tokenizer: dict[str, TokenizerProfile | None] = field(default_factory=dict)


@dataclass(slots=True)
class EstimateErrorReport:
    """Everything estimate-error found: the request frame and the statistics over it."""

    frame: Any  # pl.DataFrame, one row per request
    options: EstimateErrorOptions
    estimators: tuple[str, ...]
    skipped: Counter[str]
    thresholds: list[tuple[str, int]]  # (spec as given, tokens)
    stats: Any
    timing: Any
    groups: list[GroupStats]
    sessions: list[SessionStats]
    calibration: CalibrationSummary | None
    fitted: Calibration

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The request frame as dicts (output columns only)."""
        return self.output_frame().to_dicts()

    def output_frame(self) -> Any:
        keep = [c for c in self.frame.columns if not c.startswith(INTERNAL_PREFIXES)]
        return self.frame.select(keep)


def _r(v: float | None, digits: int) -> float | None:
    return None if v is None else round(float(v), digits)


def _with_calibrated(frame: Any, options: EstimateErrorOptions, outcome: CalibrationOutcome) -> Any:
    import polars as pl

    if options.calibration is not None:
        cal = options.calibration
        values: list[float | None] = []
        for prov, model, *xs in frame.select("provider", "model", "est_chars4", "est_cl100k", "est_o200k").iter_rows():
            fit = cal.lookup(prov, model)
            x = dict(zip(("chars4", "cl100k", "o200k"), xs, strict=True)).get(fit.x) if fit is not None else None
            values.append(_r(fit.predict(x), 1) if fit is not None and x is not None else None)
        return frame.with_columns(pl.Series("est_calibrated", values, dtype=pl.Float64))
    return frame.with_columns(
        pl.Series("est_calibrated", [_r(v, 1) for v in outcome.out_of_sample], dtype=pl.Float64),
        pl.Series("ins_calibrated", outcome.in_sample, dtype=pl.Float64),
    )


def _error_columns(frame: Any, estimators: Sequence[str]) -> Any:
    import polars as pl

    drop = [f"est_{e}" for e in ESTIMATORS if e not in estimators and f"est_{e}" in frame.columns]
    frame = frame.drop(drop)
    a = pl.col("actual")
    return frame.with_columns(
        *[(pl.col(f"est_{e}") - a).cast(pl.Float64).round(1).alias(f"err_{e}") for e in estimators],
        *[((pl.col(f"est_{e}") - a) / a).cast(pl.Float64).round(6).alias(f"rel_err_{e}") for e in estimators],
    )


def _concat(per_session: Sequence[SessionRows]) -> Any:
    import polars as pl

    frames = [sr.frame for sr in per_session]
    if not frames:
        from sessiontools.analysis.estimate.measure import MessageMeasurer
        from sessiontools.analysis.estimate.rows import session_rows
        from sessiontools.analysis.estimate.source import Source
        from sessiontools.transcript.model import Agent, Transcript

        return session_rows(Source(Transcript(Agent.PI, "", None, "", [])), MessageMeasurer({})).frame
    return pl.concat(frames, how="vertical_relaxed")


def summarize(per_session: Sequence[SessionRows], options: EstimateErrorOptions) -> EstimateErrorReport:
    """See the module doc. Rows stay in file order and, within a file, in path order."""
    import polars as pl

    estimators = options.estimators
    frame = _concat(per_session)
    skipped: Counter[str] = Counter()
    for sr in per_session:
        skipped.update(sr.skipped)
    calibrate = options.calibrate
    outcome = fit_calibration(frame if calibrate else frame.head(0), options.calibration_x)
    cal = None
    if calibrate:
        alternative = fit_calibration(frame, "chars4") if options.calibration_x != "chars4" else None
        profiles = {}
        for key in sorted(frame["model_key"].unique().to_list()):
            profiles[key] = fit_tokenizer_profile(frame.filter(pl.col("model_key") == key))
        cal = CalibrationSummary(outcome, alternative, options.calibration, profiles)
    if "calibrated" in estimators:
        frame = _with_calibrated(frame, options, outcome)
    frame = _error_columns(frame, estimators)
    max_actual = int(frame["actual"].max() or 0) if len(frame) else 0
    thresholds = [(spec.text, spec.resolve(max_actual)) for spec in options.thresholds]
    ts = [t for _, t in thresholds]

    labelled = frame.with_columns(group_expr(options.by).alias("_group"))
    groups = []
    for label in sorted(labelled["_group"].unique().to_list(), key=lambda g: group_rank(options.by, g)):
        sub = labelled.filter(pl.col("_group") == label)
        groups.append(GroupStats(label, len(sub), estimator_stats(sub, estimators),
                                 decision_stats_frame(sub, estimators, ts)))
    sessions = []
    start = 0
    for sr in per_session:
        n = len(sr.frame)
        sub = frame.slice(start, n)
        start += n
        sessions.append(SessionStats(sr.session, sr.pi_version, n, sr.skipped, estimator_stats(sub, estimators),
                                     fit_tokenizer_profile(sub)))
    return EstimateErrorReport(
        frame, options, estimators, skipped, thresholds, estimator_stats(frame, estimators),
        decision_stats_frame(frame, estimators, ts), groups, sessions, cal, outcome.fitted,
    )
