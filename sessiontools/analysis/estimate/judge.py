"""How the calibrated model did: per level in and out of sample, against the best raw estimator,
and per held-out session (polars over the request frame).

Two comparisons, each like with like:

- **calibrated vs the raw estimators** (`RAW`: chars4, cl100k, o200k). A raw estimator counts the
  whole context from its text alone and uses no recorded usage, as `calibrated` does; the best of
  them on the same rows is the bar `calibrated` must clear (`calibrated_worse`), overall and per
  held-out session.
- **calibrated_hybrid vs the agent's own estimate** (`pi`). The agent's check point starts from the
  last reply's recorded usage and counts only the messages after it: it is a hybrid, not a raw
  estimator, and is judged against `calibrated_hybrid`, the same check point with the trailing part
  counted by the calibrated model (`hybrid_worse`). Calibrated vs `pi` is still reported (every
  estimator's MAPE is), it is just not the verdict.

Out of sample means what `hierarchy` says: each held-out session predicted by a model fitted on the
other sessions (or a later half by its earlier half); nothing here looks at a held-out session's
own data to choose or fit anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.estimate.hierarchy import MIN_OOS, LevelFit
from sessiontools.analysis.estimate.options import Estimator
from sessiontools.names import RULE_VERSION_KEY

#: Raw estimators: full-context counts that use no recorded usage (no fit, no last reply's usage).
RAW = ("chars4", "cl100k", "o200k", "model")
#: The agent's own check-point estimate, a hybrid: the bar for calibrated_hybrid.
AGENT_HYBRID = Estimator.OWN.value


@dataclass(frozen=True, slots=True)
class LevelReport:
    level: str  # corpus, provider, model, session
    key: str
    fit: LevelFit
    sessions: int
    mape_in_sample: float | None
    mape_out_of_sample: float | None  # None: fewer than MIN_OOS out-of-sample predictions
    oos_requests: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """Out of sample, over the requests that have an out-of-sample prediction."""

    requests: int
    mape: dict[str, float | None]  # by estimator (same rows for every one)
    best_raw: str | None
    calibrated_worse: bool  # calibrated's MAPE is above the best raw estimator's
    hybrid_worse: bool  # calibrated_hybrid's MAPE is above the agent's own estimate's (pi)
    per_session: Any  # frame: session, requests, mape_<estimator>..., best_raw, calibrated_worse, hybrid_worse


def _mape(col: str) -> Any:
    import polars as pl

    return ((pl.col(col) - pl.col("actual")).abs() / pl.col("actual")).mean()


def _level_mape(sub: Any) -> tuple[float | None, float | None, int]:
    import polars as pl

    ins = sub.filter(pl.col("ins_calibrated").is_not_null() & (pl.col("actual") > 0))
    oos = sub.filter(pl.col("est_calibrated").is_not_null() & (pl.col("actual") > 0))
    m_in = ins.select(_mape("ins_calibrated")).item() if len(ins) else None
    m_out = oos.select(_mape("est_calibrated")).item() if len(oos) >= MIN_OOS else None
    return m_in, m_out, len(oos)


def level_reports(frame: Any, fitted: Any) -> list[LevelReport]:
    """Corpus, provider, model, rules and session levels with their fits and MAPEs."""
    import polars as pl

    f = frame.with_columns(pl.col("provider").fill_null("?").alias("_prov"))
    out = [LevelReport("corpus", "*", fitted.tree.corpus, f["session"].n_unique(), *_level_mape(f))]
    for key in sorted(fitted.tree.provider):
        sub = f.filter(pl.col("_prov") == key)
        out.append(LevelReport("provider", key, fitted.tree.provider[key], sub["session"].n_unique(), *_level_mape(sub)))
    for key in sorted(fitted.tree.model):
        sub = f.filter(pl.col("model_key") == key)
        out.append(LevelReport("model", key, fitted.tree.model[key], sub["session"].n_unique(), *_level_mape(sub)))
    from sessiontools.analysis.estimate.calibrate import rules_key

    f = f.with_columns(pl.Series("_rules", [rules_key(m, v) for m, v in
                                            zip(f["model_key"].to_list(), f[RULE_VERSION_KEY].to_list(), strict=True)]))
    for key in sorted(fitted.tree.rules):
        sub = f.filter(pl.col("_rules") == key)
        out.append(LevelReport("rules", key, fitted.tree.rules[key], sub["session"].n_unique(), *_level_mape(sub)))
    for (sess, rules), fit in fitted.sessions.items():
        sub = f.filter((pl.col("session") == sess) & (pl.col("_rules") == rules))
        out.append(LevelReport("session", f"{sess} · {rules}", fit, 1, *_level_mape(sub)))
    return out


def verdict(frame: Any, estimators: Sequence[str]) -> Verdict:
    """Every estimator's MAPE on the rows with an out-of-sample calibrated prediction."""
    import polars as pl

    ests = [e for e in estimators if f"est_{e}" in frame.columns]
    rows = frame.filter(pl.col("est_calibrated").is_not_null() & (pl.col("actual") > 0)) \
        if "est_calibrated" in frame.columns else frame.head(0)
    for e in ests:
        rows = rows.filter(pl.col(f"est_{e}").is_not_null())
    n = len(rows)
    mape: dict[str, float | None] = {}
    if n >= MIN_OOS:
        vals = rows.select([_mape(f"est_{e}").alias(e) for e in ests]).row(0, named=True)
        mape = {e: vals[e] for e in ests}
    else:
        mape = dict.fromkeys(ests)
    raw = {e: v for e, v in mape.items() if e in RAW and v is not None}
    best = min(raw, key=lambda e: raw[e]) if raw else None
    cal = mape.get("calibrated")
    hyb, own = mape.get("calibrated_hybrid"), mape.get(AGENT_HYBRID)
    per = rows.group_by("session", maintain_order=True).agg(
        pl.len().alias("requests"), *[_mape(f"est_{e}").alias(f"mape_{e}") for e in ests])
    raw_cols = [f"mape_{e}" for e in ests if e in RAW]
    if raw_cols and len(per):
        best_value = pl.min_horizontal(*raw_cols)
        best_name = pl.lit(None, dtype=pl.Utf8)
        for c in reversed(raw_cols):
            best_name = pl.when(pl.col(c) == best_value).then(pl.lit(c[5:])).otherwise(best_name)
        per = per.with_columns(best_name.alias("best_raw"),
                               (pl.col("mape_calibrated") > best_value).alias("calibrated_worse")
                               if "mape_calibrated" in per.columns else pl.lit(False).alias("calibrated_worse"))
    if len(per) and {"mape_calibrated_hybrid", f"mape_{AGENT_HYBRID}"} <= set(per.columns):
        per = per.with_columns((pl.col("mape_calibrated_hybrid") > pl.col(f"mape_{AGENT_HYBRID}")).alias("hybrid_worse"))
    return Verdict(n, mape, best, bool(best and cal is not None and cal > raw[best]),
                   bool(hyb is not None and own is not None and hyb > own), per)
