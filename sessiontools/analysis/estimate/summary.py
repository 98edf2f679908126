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
from sessiontools.analysis.estimate.rows import SessionRows, frame_of
from sessiontools.analysis.estimate.stats import decision_stats_frame, estimator_stats, group_expr, group_rank
from sessiontools.names import RULE_VERSION_KEY
from sessiontools.tokens.calibrated import Calibration, FeatureCalibration

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
    rule_version: str
    requests: int
    skipped: Counter[str]
    stats: Any
    tokenizer: TokenizerProfile | None


@dataclass(slots=True)
class CalibrationSummary:
    outcome: CalibrationOutcome
    alternative: CalibrationOutcome | None  # the chars4 fit, when x is not chars4
    loaded: Calibration | FeatureCalibration | None
    tokenizer: dict[str, TokenizerProfile | None] = field(default_factory=dict)
    hierarchy: Any = None  # calibrate.Calibrated
    levels: list[Any] = field(default_factory=list)  # judge.LevelReport
    verdict: Any = None  # judge.Verdict


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
    fitted: Calibration | FeatureCalibration  # what --save-calibration writes

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The request frame as dicts (output columns only)."""
        return self.output_frame().to_dicts()

    def session_frame(self) -> Any:
        """One row per (session, estimator): n, bias, mape, p50_abs, p95_abs, max_abs, median_ratio,
        mape_in_sample (the per-file statistics as one frame)."""
        return _mask_few(estimator_stats(self.frame, self.estimators, ("session",)),
                         self.calibration is not None and self.options.calibration is None)

    def output_frame(self) -> Any:
        keep = [c for c in self.frame.columns if not c.startswith(INTERNAL_PREFIXES)]
        return self.frame.select(keep)


def _r(v: float | None, digits: int) -> float | None:
    return None if v is None else round(float(v), digits)


def _feature_calibration(fitted: Any) -> FeatureCalibration:
    """The fitted levels as a calibration document (levels with too few requests are left out:
    they use the level above, as the loader does)."""
    from sessiontools.analysis.estimate.hierarchy import Status

    tree = fitted.tree
    return FeatureCalibration(
        tree.corpus.coef,
        {k: v.coef for k, v in tree.provider.items() if v.status == Status.FIT},
        {k: v.coef for k, v in tree.model.items() if v.status == Status.FIT},
    )


def _round1(values: Any) -> list[float | None]:
    return [None if v is None or v != v else round(float(v), 1) for v in values]


def _with_loaded(frame: Any, cal: Calibration | FeatureCalibration) -> Any:
    """The calibrated estimators from a loaded calibration (schema 1 linear or schema 2 features)."""
    import polars as pl

    from sessiontools.analysis.estimate.hierarchy import design
    from sessiontools.tokens.features import calibrated_hybrid

    x, _, _ = design(frame)
    full: list[float | None] = []
    hybrid: list[float | None] = []
    from sessiontools.analysis.estimate.calibrate import trail_columns
    trail_cols = trail_columns(frame)
    for i, r in enumerate(frame.iter_rows(named=True)):
        if isinstance(cal, FeatureCalibration):
            model = cal.lookup(r["provider"], r["model"])
            trail = [0.0, *(float(r[c] or 0) for c in trail_cols)]
            full.append(max(0.0, model.predict(x[i])))
            hybrid.append(calibrated_hybrid(r["hyb_usage"], trail, x[i], model))
            continue
        fit = cal.lookup(r["provider"], r["model"])
        xv = r.get(f"est_{fit.x}") if fit is not None else None
        if fit is None or xv is None:
            full.append(None)
            hybrid.append(None)
            continue
        full.append(fit.predict(xv))
        t = r.get(f"t_{fit.x}")
        hybrid.append(r["hyb_usage"] + max(0.0, fit.b * t) if r["hyb_usage"] is not None and t is not None else full[-1])
    return frame.with_columns(pl.Series("est_calibrated", _round1(full), dtype=pl.Float64),
                              pl.Series("est_calibrated_hybrid", _round1(hybrid), dtype=pl.Float64),
                              pl.Series("est_calibrated_session", _loaded_session_level(frame, cal), dtype=pl.Float64))


def _loaded_session_level(frame: Any, cal: Calibration | FeatureCalibration) -> list[float | None]:
    """`calibrated_session` under a loaded schema 2 calibration (its model's coefficients are the
    parent, its non-zero features the session level's); a schema 1 file (a + b * x) has no feature
    coefficients to start from: null."""
    import numpy as np

    if not isinstance(cal, FeatureCalibration):
        return [None] * len(frame)
    coefs = [cal.lookup(p, m).coef for p, m in zip(frame["provider"].to_list(), frame["model"].to_list(), strict=True)]
    parent = np.asarray(coefs, dtype=np.float64).reshape(len(frame), -1)
    used = parent.any(axis=0) if len(frame) else np.zeros(parent.shape[1], dtype=bool)
    used[0] = True  # the session's own overhead is what it learns first
    return session_level(frame, parent, tuple(bool(v) for v in used))


def session_level(frame: Any, parent: Any, mask: tuple[bool, ...] | None) -> list[float | None]:
    """`calibrated_session`: each row's session level fitted on the session's own earlier requests
    (`session_level`; earlier by timestamp, then path order) under `parent` (rows x features: the
    coefficients the calibrated estimator gave the row), per session, model and rule version."""
    from sessiontools.analysis.estimate.calibrate import rules_key
    from sessiontools.analysis.estimate.hierarchy import design
    from sessiontools.analysis.estimate.session_level import session_predictions, time_order

    x, y, _ = design(frame)
    units = list(zip(frame["session"].to_list(), (rules_key(m, v) for m, v in
                                                   zip(frame["model_key"].to_list(), frame[RULE_VERSION_KEY].to_list(),
                                                       strict=True)), strict=True))
    return _round1(session_predictions(x, y, parent, units, time_order(frame["timestamp"].to_list()), mask).tolist())


def _with_calibrated(frame: Any, options: EstimateErrorOptions, fitted: Any) -> Any:
    import polars as pl

    from sessiontools.analysis.estimate.calibrate import predictions

    if options.calibration is not None:
        return _with_loaded(frame, options.calibration)
    p = predictions(fitted, frame)
    return frame.with_columns(
        pl.Series("est_calibrated", _round1(p["oos_calibrated"].tolist()), dtype=pl.Float64),
        pl.Series("ins_calibrated", p["ins_calibrated"], dtype=pl.Float64),
        pl.Series("est_calibrated_hybrid", _round1(p["oos_hybrid"].tolist()), dtype=pl.Float64),
        pl.Series("ins_calibrated_hybrid", p["ins_hybrid"], dtype=pl.Float64),
        pl.Series("est_calibrated_session", session_level(frame, fitted.oos_coef, fitted.mask), dtype=pl.Float64),
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
    """One frame of every file's rows, in order (no file: the columns only)."""
    return frame_of([sr.columns for sr in per_session])


def _mask_few(stats: Any, fitted: bool) -> Any:
    """Out-of-sample figures from fewer than MIN_OOS predictions are not reported (null)."""
    import polars as pl

    from sessiontools.analysis.estimate.hierarchy import MIN_OOS
    from sessiontools.analysis.estimate.stats import STAT_COLUMNS

    if not fitted or not len(stats):
        return stats
    few = pl.col("estimator").str.starts_with("calibrated") & (pl.col("n") < MIN_OOS)
    return stats.with_columns([pl.when(few).then(None).otherwise(pl.col(c)).alias(c) for c in STAT_COLUMNS[1:]])


def _per_file_stats(frame: Any, per_session: Sequence[SessionRows], estimators: Sequence[str], few: bool) -> list[Any]:
    """`estimator_stats` of each file's rows, in one grouped pass over the whole frame (a file with no
    usable request gets the empty frame of the same schema)."""
    import polars as pl

    sizes = [sr.size for sr in per_session]
    # from a list: a Series from a numpy array makes polars import numpy.ma (a cold run's only use of it)
    sidx = pl.Series("_file", [k for k, n in enumerate(sizes) for _ in range(n)], dtype=pl.Int64)
    grouped = estimator_stats(frame.with_columns(sidx), estimators, ("_file",))
    if "_file" not in grouped.columns:  # no estimators
        return [grouped] * len(per_session)
    grouped = _mask_few(grouped, few)
    parts = grouped.partition_by("_file", as_dict=True, include_key=False, maintain_order=True)
    empty = grouped.head(0).drop("_file")
    return [parts.get((k,), empty) for k in range(len(per_session))]


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
    fitted = None
    if calibrate:
        from sessiontools.analysis.estimate.calibrate import calibrate as fit_hierarchy
        from sessiontools.analysis.estimate.hierarchy import calibration_feature

        frame = calibration_feature(frame)
        fitted = fit_hierarchy(frame)
        alternative = fit_calibration(frame, "chars4") if options.calibration_x != "chars4" else None
        profiles = {}
        for key in sorted(frame["model_key"].unique().to_list()):
            profiles[key] = fit_tokenizer_profile(frame.filter(pl.col("model_key") == key))
        cal = CalibrationSummary(outcome, alternative, options.calibration, profiles, fitted)
        frame = _with_calibrated(frame, options, fitted)
        from sessiontools.analysis.estimate.judge import level_reports, verdict

        if options.calibration is None:
            cal.levels = level_reports(frame, fitted)
        cal.verdict = verdict(frame, [e for e in ESTIMATORS if e in estimators or e.startswith("calibrated")])
    frame = _error_columns(frame, estimators)
    max_actual = int(frame["actual"].max() or 0) if len(frame) else 0
    thresholds = [(spec.text, spec.resolve(max_actual)) for spec in options.thresholds]
    ts = [t for _, t in thresholds]

    few = calibrate and options.calibration is None
    labelled = frame.with_columns(group_expr(options.by).alias("_group"))
    groups = []
    for label in sorted(labelled["_group"].unique().to_list(), key=lambda g: group_rank(options.by, g)):
        sub = labelled.filter(pl.col("_group") == label)
        groups.append(GroupStats(label, len(sub), _mask_few(estimator_stats(sub, estimators), few),
                                 decision_stats_frame(sub, estimators, ts)))
    sessions = []
    start = 0
    per_file = _per_file_stats(frame, per_session, estimators, few)
    for sr, stats in zip(per_session, per_file, strict=True):
        n = sr.size
        sub = frame.slice(start, n)
        start += n
        sessions.append(SessionStats(sr.session, sr.rule_version, n, sr.skipped, stats,
                                     sr.profile if sr.profiled else fit_tokenizer_profile(sub)))
    return EstimateErrorReport(
        frame, options, estimators, skipped, thresholds, _mask_few(estimator_stats(frame, estimators), few),
        decision_stats_frame(frame, estimators, ts), groups, sessions, cal,
        _feature_calibration(fitted) if fitted is not None else outcome.fitted,
    )
