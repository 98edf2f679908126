"""`estimate-error` output: rich tables, the per-request DataFrame, and a matplotlib figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group

from sessiontools.analysis.estimate_error import CHAR_COLUMNS, requests_columns
from sessiontools.report.layout import Column, FittedTable, percent, short_names, tokens
from sessiontools.report.text import safe_text

_INT_COLUMNS = {
    "index", "line", "timestamp", "actual", "input", "cache_read", "cache_write", "output", "messages", "images",
    "chars_total", "text_chars", "cjk_chars", *CHAR_COLUMNS, "est_chars4", "est_pi", "est_cl100k", "est_o200k",
}
_STR_COLUMNS = {"session", "pi_version", "entry_id", "provider", "model", "model_key"}


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.1%}" if signed else f"{v:.1%}"


def _pct0(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


_METHODS = {"leave-one-session-out": "LOSO", "time-split": "time split", "none": "-"}


def _tokens(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _num(v: float | None, digits: int) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def requests_frame(rows: Sequence[Mapping[str, Any]], estimators: Sequence[str]) -> Any:
    """One row per request (the CSV/Parquet table), columns in a fixed order with fixed types."""
    import polars as pl  # imported here: polars is heavy and only CSV/Parquet need it

    cols = requests_columns(estimators)
    schema: dict[str, Any] = {}
    for c in cols:
        if c in _STR_COLUMNS:
            schema[c] = pl.Utf8
        elif c in _INT_COLUMNS:
            schema[c] = pl.Int64
        else:
            schema[c] = pl.Float64
    data = {c: [r.get(c) for r in rows] for c in cols}
    return pl.DataFrame(data, schema=schema)


def _session_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


_EST_LEGEND = ("chars4 = Pi's chars/4; pi = Pi's last usage + chars/4 of later messages; cl100k, o200k = tiktoken; "
               "calibrated = A ~ a + b*x fitted here (OOS = judged out of sample)")


def estimate_error_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> Group:
    """Renderables for people: overall errors, groups, early/late, calibration, sessions (all fitted to the width)."""
    skipped = summary["skipped_requests"]
    skipped_txt = ", ".join(f"{k} {v}" for k, v in skipped.items() if k != "total")
    title = f"estimate error over {summary['requests']:,} requests" + (
        f" ({skipped['total']} assistant messages skipped: {skipped_txt})" if skipped["total"] else ""
    )
    t = FittedTable(title, (
        Column("estimator", _EST_LEGEND, "left"), Column("n", "requests"),
        Column("bias %", "mean (E - A) / A: negative = under-counts"), Column("MAPE %", "mean |E - A| / A"),
        Column("A/E", "median of actual / estimate (x1.38 = actual is 38% above the estimate)"),
        Column("p50 |e|", "median |E - A| (tokens)"), Column("p95 |e|", "95th percentile (tokens)"),
        Column("max |e|", "largest (tokens)", optional=True),
    ), notes=["E = estimate, A = actual prompt tokens the provider counted (input + cache read + cache write)"])
    for est in estimators:
        s = summary["estimators"][est]
        name = est
        if est == "calibrated" and summary.get("calibration"):
            name = "calibrated (file)" if summary["calibration"]["source"] == "file" else "calibrated (OOS)"
        t.add_row(name, f"{s['n']:,}", percent(s["bias"], signed=True), percent(s["mape"]), _ratio(s["median_ratio"]),
                  tokens(s["p50_abs"]), tokens(s["p95_abs"]), tokens(s["max_abs"]))
    parts: list[Any] = [t]
    if summary["groups"]:
        parts.append(_groups_table(summary, estimators))
    if summary["thresholds"] and summary["timing"] and summary["requests"]:
        parts.append(_timing_table(summary, estimators))
    cal = summary.get("calibration")
    if cal and cal["models"]:
        parts.append(_calibration_table(cal))
    profiles = {k: v for k, v in (cal or {}).get("tokenizer", {}).items() if v is not None}
    if profiles:
        tp = FittedTable("tokenizer fit: A ~ overhead + chars/(chars per token) + CJK chars x tokens per CJK char "
                         "+ messages x tokens per message", (
            Column("model", "provider/model", "left"), Column("n", "requests"),
            Column("chars/tok", "characters per token"), Column("tok/CJK", "tokens per CJK character"),
            Column("tok/msg", "tokens per message"), Column("overhead", "fixed tokens (system prompt, tools)"),
            Column("MAPE in %", "in-sample MAPE of this fit"),
        ))
        for key, p in profiles.items():
            tp.add_row(safe_text(key or "(no model)"), f"{p['n']:,}", _num(p["chars_per_token"], 3),
                       _num(p["cjk_tokens_per_char"], 3), _num(p["tokens_per_message"], 1), tokens(p["overhead"]),
                       percent(p["mape_in_sample"]))
        parts.append(tp)
    if len(summary["sessions"]) > 1:
        parts.append(_sessions_table(summary, estimators))
    return Group(*parts)


def _groups_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> FittedTable:
    g = FittedTable(f"MAPE and bias by {summary['by']}: MAPE % (bias %)",
                    (Column("n", "requests"), *[Column(est, "") for est in estimators]),
                    group_header=summary["by"], notes=["cells: MAPE % (bias %), negative bias = under-counts"])
    for grp in summary["groups"]:
        cells = []
        for est in estimators:
            s = grp["estimators"][est]
            cells.append("-" if s["mape"] is None else f"{percent(s['mape'], digits=0)} ({percent(s['bias'], signed=True, digits=0)})")
        g.add_row(f"{grp['requests']:,}", *cells, group=str(grp["group"]))
    return g


def _timing_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> FittedTable:
    thresholds = summary["thresholds"]
    d = FittedTable("compaction decisions: early / late requests at each threshold T",
                    (Column("estimator", "", "left"),
                     *[Column(f"T={tokens(th['tokens'])}", "") for th in thresholds]),
                    notes=["early = E > T while A <= T (Pi would compact too soon); late = E <= T while A > T; "
                           "T given as a fraction of the largest A or in tokens (" +
                           ", ".join(f"{th['spec']} = {th['tokens']:,}" for th in thresholds) + "); rates in --format json"])
    by_key = {(x["estimator"], x["threshold"]): x for x in summary["timing"]}
    for est in estimators:
        d.add_row(est, *[f"{by_key[(est, th['tokens'])]['early']}/{by_key[(est, th['tokens'])]['late']}"
                         for th in thresholds])
    return d


def _calibration_table(cal: Mapping[str, Any]) -> FittedTable:
    note = " (the calibrated estimator used the file's coefficients)" if cal["source"] == "file" else ""
    c = FittedTable(f"calibration fitted here: A ~ a + b * {cal['x']} (least squares){note}", (
        Column("model", "provider/model; * = every model pooled (used for a model without its own fit)", "left"),
        Column("a tok", "intercept (tokens)"), Column("b", "slope"), Column("n", "requests"),
        Column("sess", "sessions"), Column("MAPE in %", "in sample"),
        Column("MAPE OOS %", "out of sample: each session predicted by a fit without it"),
        Column("judged by", "LOSO = leave one session out; time split = fit on the first part, judge the rest", "left"),
    ))
    for key, m in cal["models"].items():
        c.add_row(safe_text(key), f"{m['a']:,.0f}", f"{m['b']:.3f}", f"{m['n']:,}", str(m["sessions"]),
                  percent(m["mape_in_sample"]), percent(m["mape_out_of_sample"]), _METHODS.get(m["method"], m["method"]))
    return c


def _sessions_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> FittedTable:
    names = short_names([s["session"] for s in summary["sessions"]])
    s_t = FittedTable("MAPE % by session", (
        Column("n", "requests"), *[Column(est, "") for est in estimators],
        Column("chars/tok", "characters per token of this session's fit"),
    ))
    for sess in summary["sessions"]:
        prof = sess.get("tokenizer") or {}
        s_t.add_row(f"{sess['requests']:,}", *[percent(sess["estimators"][est]["mape"]) for est in estimators],
                    _num(prof.get("chars_per_token"), 2), group=names[sess["session"]])
    return s_t


def estimate_error_headline(summary: Mapping[str, Any]) -> str:
    """One line: how far chars/4 is off, and the closest estimator."""
    ests = summary["estimators"]
    parts = []
    c4 = ests.get("chars4")
    if c4 and c4.get("bias") is not None:
        word = "under-counts" if c4["bias"] < 0 else "over-counts"
        ratio = f" (median x{c4['median_ratio']:.2f})" if c4.get("median_ratio") else ""
        parts.append(f"chars/4 {word} by {abs(c4['bias']):.0%}{ratio}")
    scored = [(v["mape"], k) for k, v in ests.items() if v.get("mape") is not None]
    if scored:
        mape, best = min(scored)
        parts.append(f"closest: {best} (MAPE {mape:.1%})")
    return f"estimate-error: {summary['requests']:,} requests; " + "; ".join(parts)


_COLORS = {"chars4": "#d62728", "pi": "#9467bd", "cl100k": "#1f77b4", "o200k": "#2ca02c", "calibrated": "#ff7f0e"}


def estimate_error_figure(rows: Sequence[Mapping[str, Any]], estimators: Sequence[str]):  # type: ignore[no-untyped-def]
    """Three panels: E vs A (log axes), e/A per estimator, and e/A against context size A."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 5), dpi=110, layout="constrained")
    ax_sc, ax_dist, ax_size = fig.subplots(1, 3)
    actual_all = [r["actual"] for r in rows if r["actual"] > 0]
    dist_data, dist_labels = [], []
    for est in estimators:
        pairs = [(r["actual"], r[f"est_{est}"]) for r in rows if r.get(f"est_{est}") is not None and r["actual"] > 0]
        if not pairs:
            continue
        a = [p[0] for p in pairs]
        e = [p[1] for p in pairs]
        rel = [(ei - ai) / ai for ai, ei in pairs]
        color = _COLORS.get(est)
        ax_sc.scatter(a, [max(x, 1) for x in e], s=6, alpha=0.5, label=est, color=color)
        ax_size.scatter(a, rel, s=6, alpha=0.5, label=est, color=color)
        dist_data.append(rel)
        dist_labels.append(est)
    if actual_all:
        lo, hi = min(actual_all), max(actual_all)
        ax_sc.plot([lo, hi], [lo, hi], color="black", linewidth=1, linestyle="--", label="E = A")
    ax_sc.set_xscale("log")
    ax_sc.set_yscale("log")
    ax_sc.set_xlabel("actual prompt tokens A")
    ax_sc.set_ylabel("estimate E")
    ax_sc.set_title("estimate vs actual")
    if ax_sc.get_legend_handles_labels()[0]:
        ax_sc.legend(loc="upper left", fontsize="small")
    if dist_data:
        ax_dist.boxplot(dist_data, showfliers=True, flierprops={"markersize": 2})
        ax_dist.set_xticks(range(1, len(dist_labels) + 1), dist_labels)
    all_rel = [v for d in dist_data for v in d]
    top = min(2.0, max(all_rel, default=1.0)) * 1.05 if all_rel else 1.0
    clipped = sum(1 for v in all_rel if v > top)
    for ax in (ax_dist, ax_size):
        ax.set_ylim(-1.05, max(0.1, top))
        if clipped:
            ax.text(0.99, 0.99, f"{clipped} points above {top:.2f} not shown", transform=ax.transAxes,
                    ha="right", va="top", fontsize="small")
    ax_dist.axhline(0, color="black", linewidth=1, linestyle="--")
    ax_dist.set_ylabel("relative error e/A = (E - A) / A")
    ax_dist.set_title("error distribution")
    ax_size.axhline(0, color="black", linewidth=1, linestyle="--")
    ax_size.set_xscale("log")
    ax_size.set_xlabel("actual prompt tokens A")
    ax_size.set_ylabel("relative error e/A")
    ax_size.set_title("error against context size")
    return fig
