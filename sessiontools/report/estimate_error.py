"""`estimate-error` output: rich tables, the per-request DataFrame, and a matplotlib figure (the JSON
document is `report.estimate_json`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group

from sessiontools.analysis.estimate import CHAR_COLUMNS, EstimateErrorReport, requests_columns
from sessiontools.analysis.estimate.options import OWN_COLUMN, Estimator
from sessiontools.names import CHARS4_OWN_ESTIMATE, EARLY_MEANS, OWN_ESTIMATOR, RULE_VERSION_KEY
from sessiontools.report.layout import Column, FittedTable, percent, short_names, tokens
from sessiontools.report.text import safe_text

_INT_COLUMNS = {
    "index", "line", "timestamp", "actual", "input", "cache_read", "cache_write", "output", "messages", "images",
    "chars_total", "text_chars", "cjk_chars", *CHAR_COLUMNS, "est_chars4", OWN_COLUMN, "est_cl100k", "est_o200k",
    "est_model",
}
_STR_COLUMNS = {"session", RULE_VERSION_KEY, "entry_id", "provider", "model", "model_key", "kind", "model_tokenizer"}


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.1%}" if signed else f"{v:.1%}"


_METHODS = {"leave-one-session-out": "LOSO", "time-split": "time split", "none": "-"}


def _tokens(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _num(v: float | None, digits: int) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def requests_frame(report: EstimateErrorReport) -> Any:
    """One row per request (the CSV/Parquet table), columns in a fixed order with fixed types."""
    import polars as pl

    cols = requests_columns(report.estimators)
    frame = report.output_frame()
    exprs = []
    for c in cols:
        dtype = pl.Utf8 if c in _STR_COLUMNS else pl.Int64 if c in _INT_COLUMNS else pl.Float64
        exprs.append((pl.col(c) if c in frame.columns else pl.lit(None)).cast(dtype).alias(c))
    return frame.select(exprs)


_EST_LEGEND = (f"chars4 = chars/4 ({CHARS4_OWN_ESTIMATE}); {OWN_ESTIMATOR} = the agent's own estimate (last usage + later messages); "
               "cl100k, o200k = tiktoken; model = the model's own tokenizer (o200k where it has none); "
               "calibrated = hierarchical fit over text features (OOS = judged out of sample); "
               "calibrated_hybrid = last usage + calibrated count of later messages; "
               "calibrated_session = calibrated corrected by the session's earlier requests (time split)")


def _model_tokenizer_notes(summary: Mapping[str, Any]) -> list[str]:
    """One line saying which tokenizer `model` (and the calibrated `model` feature) used per model."""
    used = summary.get("model_tokenizers")
    if not used:
        return []
    by_label: dict[str, list[str]] = {}
    for key, t in used.items():
        own = t.get("calibrated_feature", t["tokenizer"]) == t["tokenizer"]
        by_label.setdefault(t["label"] + ("" if own else " (calibrated with o200k: its own calibrates worse)"),
                            []).append(key)
    parts = [f"{label}: {', '.join(keys[:3])}{f' and {len(keys) - 3} more' if len(keys) > 3 else ''}"
             for label, keys in sorted(by_label.items(), key=lambda kv: kv[0].startswith("o200k"))]
    return ["model tokenizer: " + "; ".join(parts)]


def overall_table(summary: Mapping[str, Any], estimators: Sequence[str], legend: str = _EST_LEGEND) -> FittedTable:
    """One row per estimator over every request (the totals of a folder)."""
    skipped = summary["skipped_requests"]
    skipped_txt = ", ".join(f"{k} {v}" for k, v in skipped.items() if k != "total")
    title = f"estimate error over {summary['requests']:,} requests" + (
        f" ({skipped['total']} assistant messages skipped: {skipped_txt})" if skipped["total"] else ""
    )
    t = FittedTable(title, (
        Column("estimator", legend, "left"), Column("n", "requests"),
        Column("bias %", "mean (E - A) / A: negative = under-counts"), Column("MAPE %", "mean |E - A| / A"),
        Column("A/E", "median of actual / estimate (x1.38 = actual is 38% above the estimate)"),
        Column("p50 |e|", "median |E - A| (tokens)"), Column("p95 |e|", "95th percentile (tokens)"),
        Column("max |e|", "largest (tokens)", optional=True),
    ), notes=["E = estimate, A = actual prompt tokens the provider counted (input + cache read + cache write)",
              *_model_tokenizer_notes(summary)])
    for est in estimators:
        s = summary["estimators"][est]
        name = est
        if est.startswith("calibrated") and summary.get("calibration"):
            name = f"{est} (file)" if summary["calibration"]["source"] == "file" else f"{est} (OOS)"
        t.add_row(name, f"{s['n']:,}", percent(s["bias"], signed=True), percent(s["mape"]), _ratio(s["median_ratio"]),
                  tokens(s["p50_abs"]), tokens(s["p95_abs"]), tokens(s["max_abs"]))
    return t


def estimate_error_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> Group:
    """Renderables for people: overall errors, groups, early/late, calibration, sessions (all fitted to the width)."""
    parts: list[Any] = [overall_table(summary, estimators)]
    if summary["groups"]:
        parts.append(_groups_table(summary, estimators))
    if summary["thresholds"] and summary["timing"] and summary["requests"]:
        parts.append(timing_table(summary, estimators))
    cal = summary.get("calibration")
    if cal and cal.get("levels"):
        parts.append(_levels_table(cal))
    if cal and cal.get("out_of_sample"):
        parts.append(_verdict_line(cal["out_of_sample"]))
    if cal and cal["linear"]["models"]:
        parts.append(_calibration_table({**cal["linear"], "source": cal["source"]}))
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


def timing_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> FittedTable:
    thresholds = summary["thresholds"]
    d = FittedTable("compaction decisions: early / late requests at each threshold T",
                    (Column("estimator", "", "left"),
                     *[Column(f"T={tokens(th['tokens'])}", "") for th in thresholds]),
                    notes=[f"early = E > T while A <= T ({EARLY_MEANS}); late = E <= T while A > T; "
                           "T given as a fraction of the largest A or in tokens (" +
                           ", ".join(f"{th['spec']} = {th['tokens']:,}" for th in thresholds) + "); rates in --format json"])
    by_key = {(x["estimator"], x["threshold"]): x for x in summary["timing"]}
    for est in estimators:
        d.add_row(est, *[f"{by_key[(est, th['tokens'])]['early']}/{by_key[(est, th['tokens'])]['late']}"
                         for th in thresholds])
    return d


def _levels_table(cal: Mapping[str, Any]) -> FittedTable:
    """One row per fitted level; a feature whose coefficient is 0 at every level is not a column (a
    line says so), so the coefficients that matter are the ones shown at any width."""
    levels = [lv for lv in cal["levels"] if lv["level"] != "session"]
    zero = [f for f in cal["features"] if all(not lv["coef"].get(f) for lv in levels)]
    feats = [f for f in cal["features"] if f not in zero]
    notes = [f"coefficient 0 at every level (not shown): {', '.join(zero)}"] if zero else []
    c = FittedTable("calibrated: A ~ coef . features, fitted per level, each shrunk toward the level above "
                    f"(judged {cal['judged_by']})", (
        Column("status", "fit, or too few requests/sessions (uses the level above)", "left"),
        Column("model", "features: model (the model's own tokenizer, o200k where it has none), o200k or "
                        "cl100k = a * tokens + per message + overhead, when the run counts it; else characters",
               "left"),
        Column("n", "requests"),
        *[Column(f, f"tokens per {f}" if f != "overhead" else "fixed tokens per request") for f in feats],
        Column("MAPE in %", "in sample"), Column("MAPE OOS %", "out of sample (too few: under 10 predictions)"),
    ), group_header="level", notes=["levels: corpus -> provider -> model -> rules (the model under one agent rule "
                                    "version); a level that is not fitted uses the level above", *notes])
    for lv in levels:
        c.add_row(lv["status"], lv["candidate"], f"{lv['n']:,}",
                  *[_num(lv["coef"][f], 0 if f in ("overhead", "images") else 3) for f in feats],
                  percent(lv["mape_in_sample"]),
                  _oos_cell(lv["mape_out_of_sample"], lv["n"]),
                  group=f"{lv['level']} {lv['key']}")
    return c


def _verdict_line(oos: Mapping[str, Any]) -> Any:
    from rich.text import Text

    mapes = ", ".join(f"{k} {_pct(v)}" for k, v in oos["mape"].items())
    line = f"out of sample ({oos['requests']:,} requests): {mapes}; best raw estimator: {oos['best_raw'] or '-'}"
    if oos["note"]:
        line += f"  WARNING: {oos['note']}"
    if oos["hybrid_worse_than_agent_estimate"]:
        line += f"  WARNING: calibrated_hybrid is worse than the agent's own estimate ({OWN_ESTIMATOR})"
    return Text(line)


def _oos_cell(mape: float | None, n: int) -> str:
    """An out-of-sample MAPE, or "too few requests (n)" where n is below the fit's minimum: a MAPE of
    6930% from two requests reads like any other and means nothing."""
    from sessiontools.analysis.estimate.hierarchy import MIN_REQUESTS

    if n < MIN_REQUESTS or mape is None:
        return f"too few requests ({n})" if n < MIN_REQUESTS else "too few"
    return percent(mape)


def _calibration_table(cal: Mapping[str, Any]) -> FittedTable:
    c = FittedTable(f"linear fit (descriptive): A ~ a + b * {cal['x']} (least squares)", (
        Column("model", "provider/model; * = every model pooled (used for a model without its own fit)", "left"),
        Column("a tok", "intercept (tokens)"), Column("b", "slope"), Column("n", "requests"),
        Column("sess", "sessions"), Column("MAPE in %", "in sample"),
        Column("MAPE OOS %", "out of sample: each session predicted by a fit without it"),
        Column("judged by", "LOSO = leave one session out; time split = fit on the first part, judge the rest", "left"),
    ))
    for key, m in cal["models"].items():
        c.add_row(safe_text(key), f"{m['a']:,.0f}", f"{m['b']:.3f}", f"{m['n']:,}", str(m["sessions"]),
                  percent(m["mape_in_sample"]), _oos_cell(m["mape_out_of_sample"], m["n"]),
                  _METHODS.get(m["method"], m["method"]))
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


_COLORS = {"chars4": "#d62728", Estimator.OWN.value: "#9467bd", "cl100k": "#1f77b4", "o200k": "#2ca02c", "calibrated": "#ff7f0e"}


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
