"""Error statistics as polars expressions over the request frame (definitions: ARCHITECTURE.md s. 2).

For an estimator with estimate E and truth A (rows with an E and A > 0): e = E - A;
bias = mean(e/A); MAPE = mean(|e|/A); p50/p95/max of |e| in tokens (linear quantiles);
median_ratio = median(A/E) over E > 0. Decisions at a threshold T: the estimator compacts when
E > T, the truth says A > T; early = E > T while A <= T, late = E <= T while A > T, with rates over
the truth's side. Groups: by model key, provider, content (CJK share x tool-output share) or size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: `content` buckets: CJK share and tool-result share of the context's characters.
CJK_BUCKETS = ((0.05, "cjk<5%"), (0.30, "cjk 5-30%"), (math.inf, "cjk>30%"))
TOOL_BUCKETS = ((0.30, "tools<30%"), (0.70, "tools 30-70%"), (math.inf, "tools>70%"))
#: `size` buckets over A (tokens).
SIZE_BUCKETS = ((8_000, "<8k"), (16_000, "8k-16k"), (32_000, "16k-32k"), (64_000, "32k-64k"),
                (128_000, "64k-128k"), (math.inf, ">=128k"))
STAT_COLUMNS = ("n", "bias", "mape", "p50_abs", "p95_abs", "max_abs", "median_ratio")


def _bucket(value: float, buckets: Sequence[tuple[float, str]]) -> str:
    for upper, label in buckets:
        if value < upper:
            return label
    return buckets[-1][1]


def content_group(cjk_share: float, tool_share: float) -> str:
    """The `content` bucket of a request."""
    return f"{_bucket(cjk_share, CJK_BUCKETS)} · {_bucket(tool_share, TOOL_BUCKETS)}"


def size_group(actual: int) -> str:
    """The `size` bucket of a request (by A)."""
    return _bucket(actual, SIZE_BUCKETS)


def _bucket_expr(col: str, buckets: Sequence[tuple[float, str]]) -> Any:
    import polars as pl

    expr = pl.lit(buckets[-1][1])
    for upper, label in reversed(buckets[:-1]):
        expr = pl.when(pl.col(col) < upper).then(pl.lit(label)).otherwise(expr)
    return expr


def group_expr(by: str) -> Any:
    """The polars expression of a request's group label under `by`."""
    import polars as pl

    if by == "model":
        return pl.col("model_key")
    if by == "provider":
        return pl.col("provider").fill_null("?")
    if by == "content":
        return pl.concat_str([_bucket_expr("cjk_share", CJK_BUCKETS), pl.lit(" · "),
                              _bucket_expr("tool_share", TOOL_BUCKETS)])
    if by == "size":
        return _bucket_expr("actual", SIZE_BUCKETS)
    raise ValueError(by)


def group_rank(by: str, label: str) -> tuple[int, str]:
    """Sort key of a group label: bucket order for content/size, alphabetical otherwise."""
    if by == "size":
        order = {lab: i for i, (_, lab) in enumerate(SIZE_BUCKETS)}
        return order.get(label, 99), label
    if by == "content":
        order = {f"{c} · {t}": i * 10 + j for i, (_, c) in enumerate(CJK_BUCKETS) for j, (_, t) in enumerate(TOOL_BUCKETS)}
        return order.get(label, 99), label
    return 0, label


def _long(frame: Any, estimators: Sequence[str], keys: Sequence[str]) -> Any:
    """(keys..., estimator, e, a, ins) with one row per request and estimator that has an estimate."""
    import polars as pl

    parts = []
    for est in estimators:
        ins = pl.col(f"ins_{est}") if f"ins_{est}" in frame.columns else pl.lit(None)
        parts.append(frame.select(*[pl.col(k) for k in keys], pl.lit(est).alias("estimator"),
                                  pl.col(f"est_{est}").cast(pl.Float64).alias("e"),
                                  pl.col("actual").cast(pl.Float64).alias("a"), ins.cast(pl.Float64).alias("ins")))
    return pl.concat(parts) if parts else None


def estimator_stats(frame: Any, estimators: Sequence[str], keys: Sequence[str] = ()) -> Any:
    """One row per (keys..., estimator): n, bias, mape, p50_abs, p95_abs, max_abs, median_ratio,
    mape_in_sample (calibrated only, from the in-sample column when there is one)."""
    import polars as pl

    long = _long(frame, estimators, keys)
    if long is None:
        return pl.DataFrame()
    ok = long.filter(pl.col("e").is_not_null() & (pl.col("a") > 0))
    rel = (pl.col("e") - pl.col("a")) / pl.col("a")
    err = (pl.col("e") - pl.col("a")).abs()
    ins_ok = pl.col("ins").is_not_null()
    out = ok.group_by([*keys, "estimator"], maintain_order=True).agg(
        pl.len().alias("n"),
        rel.mean().alias("bias"),
        rel.abs().mean().alias("mape"),
        err.quantile(0.5, "linear").alias("p50_abs"),
        err.quantile(0.95, "linear").alias("p95_abs"),
        err.max().alias("max_abs"),
        pl.when(pl.col("e") > 0).then(pl.col("a") / pl.col("e")).quantile(0.5, "linear").alias("median_ratio"),
        ((pl.col("ins") - pl.col("a")).abs() / pl.col("a")).filter(ins_ok).mean().alias("mape_in_sample"),
    )
    return out


def stats_dict(stats: Any, estimator: str, **where: Any) -> dict[str, Any]:
    """The statistics of one estimator (and key values) as a dict; n = 0 and Nones when absent."""
    import polars as pl

    sub = stats.filter(pl.col("estimator") == estimator) if len(stats) else stats
    for k, v in where.items():
        sub = sub.filter(pl.col(k) == v)
    if not len(sub):
        return {"n": 0, **dict.fromkeys(STAT_COLUMNS[1:]), "mape_in_sample": None}
    return sub.row(0, named=True)


def decision_stats_frame(frame: Any, estimators: Sequence[str], thresholds: Sequence[int]) -> Any:
    """One row per (estimator, threshold): n, actual_over, compact_correct, keep_correct, early, late,
    early_rate, late_rate (rates None when their side is empty)."""
    import polars as pl

    long = _long(frame, estimators, ())
    rows = []
    if long is None:
        return pl.DataFrame()
    ok = long.filter(pl.col("e").is_not_null())
    for t in thresholds:
        e_over, a_over = pl.col("e") > t, pl.col("a") > t
        agg = ok.group_by("estimator", maintain_order=True).agg(
            pl.len().alias("n"), a_over.sum().alias("actual_over"), (e_over & a_over).sum().alias("compact_correct"),
            (e_over & ~a_over).sum().alias("early"), (~e_over & a_over).sum().alias("late"),
        ).with_columns(pl.lit(t).alias("threshold"))
        rows.append(agg)
    present = {(r["estimator"], r["threshold"]): r for r in pl.concat(rows).iter_rows(named=True)}
    none = {"n": 0, "actual_over": 0, "compact_correct": 0, "early": 0, "late": 0}
    out = []
    for est in estimators:
        for t in thresholds:
            d = present.get((est, t), none)
            below = d["n"] - d["actual_over"]
            out.append({
                "estimator": est, "threshold": t, "n": d["n"], "actual_over": d["actual_over"],
                "compact_correct": d["compact_correct"], "keep_correct": below - d["early"], "early": d["early"],
                "late": d["late"], "early_rate": d["early"] / below if below else None,
                "late_rate": d["late"] / d["actual_over"] if d["actual_over"] else None,
            })
    return pl.DataFrame(out, schema={"estimator": pl.Utf8, "threshold": pl.Int64, "n": pl.Int64,
                                     "actual_over": pl.Int64, "compact_correct": pl.Int64, "keep_correct": pl.Int64,
                                     "early": pl.Int64, "late": pl.Int64, "early_rate": pl.Float64,
                                     "late_rate": pl.Float64})


def _pairs_frame(estimates: Sequence[float | None], actuals: Sequence[int]) -> Any:
    import polars as pl

    return pl.DataFrame({"est_x": list(estimates), "actual": list(actuals)},
                        schema={"est_x": pl.Float64, "actual": pl.Int64})


def error_stats(estimates: Sequence[float | None], actuals: Sequence[int]) -> dict[str, Any]:
    """The statistics of one list of estimates against actuals (see the module doc)."""
    d = stats_dict(estimator_stats(_pairs_frame(estimates, actuals), ["x"]), "x")
    return {k: d[k] for k in STAT_COLUMNS}


def decision_stats(estimator: str, estimates: Sequence[float | None], actuals: Sequence[int],
                   threshold: int) -> dict[str, Any]:
    """Compaction decisions E > T against A > T for one list of estimates."""
    d = decision_stats_frame(_pairs_frame(estimates, actuals), ["x"], [threshold]).row(0, named=True)
    return {**d, "estimator": estimator}


def mape(estimates: Sequence[float | None], actuals: Sequence[int]) -> float | None:
    """Mean |E - A| / A over pairs with an estimate and A > 0; None when there is none (the `mape`
    of `error_stats`, to the bit: the same values and polars' mean, in one select instead of a
    long frame and a group-by, which costs twice as much per call)."""
    import polars as pl

    frame = _pairs_frame(estimates, actuals)
    e, a = pl.col("est_x"), pl.col("actual").cast(pl.Float64)
    ok = e.is_not_null() & (a > 0)
    out = frame.select(((e - a) / a).abs().filter(ok).mean().alias("mape"), ok.sum().alias("n"))
    return out["mape"][0] if out["n"][0] else None
