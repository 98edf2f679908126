"""`estimate-error` output: rich tables, the per-request DataFrame, and a matplotlib figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table

from sessiontools.analysis.estimate import CHAR_COLUMNS, EstimateErrorReport, requests_columns
from sessiontools.report.text import safe_text

_INT_COLUMNS = {
    "index", "line", "timestamp", "actual", "input", "cache_read", "cache_write", "output", "messages", "images",
    "chars_total", "text_chars", "cjk_chars", *CHAR_COLUMNS, "est_chars4", "est_pi", "est_cl100k", "est_o200k",
}
_STR_COLUMNS = {"session", "pi_version", "entry_id", "provider", "model", "model_key", "kind"}


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


def _session_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def estimate_error_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> Group:
    """Renderables for people: overall errors, estimators x groups, early/late, calibration, sessions."""
    skipped = summary["skipped_requests"]
    skipped_txt = ", ".join(f"{k} {v}" for k, v in skipped.items() if k != "total")
    title = f"estimate error: {summary['requests']:,} requests" + (
        f" ({skipped['total']} assistant messages skipped: {skipped_txt})" if skipped["total"] else ""
    )
    parts: list[Any] = []

    t = Table(title=title, title_justify="left")
    for col in ("estimator", "n", "bias", "MAPE", "median A/E", "p50 |e|", "p95 |e|", "max |e|"):
        t.add_column(col, justify="left" if col == "estimator" else "right")
    for est in estimators:
        s = summary["estimators"][est]
        name = est
        if est == "calibrated" and summary.get("calibration"):
            src = summary["calibration"]["source"]
            name = "calibrated (file)" if src == "file" else "calibrated (OOS)"
        t.add_row(name, f"{s['n']:,}", _pct(s["bias"], True), _pct(s["mape"]), _ratio(s["median_ratio"]),
                  _tokens(s["p50_abs"]), _tokens(s["p95_abs"]), _tokens(s["max_abs"]))
    parts.append(t)

    groups = summary["groups"]
    if groups:
        g = Table(title=f"MAPE and bias by {summary['by']}", title_justify="left")
        g.add_column("estimator")
        for grp in groups:
            g.add_column(safe_text(f"{grp['group']} (n={grp['requests']:,})"), justify="right", overflow="fold")
        for est in estimators:
            cells = []
            for grp in groups:
                s = grp["estimators"][est]
                cells.append("-" if s["mape"] is None else f"{_pct(s['mape'])} ({_pct(s['bias'], True)})")
            g.add_row(est, *cells)
        parts.append(g)

    thresholds = summary["thresholds"]
    if thresholds and summary["timing"] and summary["requests"]:
        d = Table(title="compaction decisions E > T against A > T: early/late (early rate/late rate)", title_justify="left")
        d.add_column("estimator")
        for th in thresholds:
            d.add_column(f"T={th['tokens']:,} ({th['spec']})", justify="right")
        by_key = {(x["estimator"], x["threshold"]): x for x in summary["timing"]}
        for est in estimators:
            cells = []
            for th in thresholds:
                x = by_key[(est, th["tokens"])]
                cells.append(f"{x['early']}/{x['late']} ({_pct0(x['early_rate'])}/{_pct0(x['late_rate'])})")
            d.add_row(est, *cells)
        parts.append(d)

    parts.extend(_calibration_tables(summary))
    parts.extend(_sessions_table(summary, estimators))
    return Group(*parts)


def _calibration_tables(summary: Mapping[str, Any]) -> list[Any]:
    parts: list[Any] = []
    cal = summary.get("calibration")
    levels = [lv for lv in (cal or {}).get("levels", []) if lv["level"] != "session"]
    if levels:
        feats = cal["features"]
        c = Table(title="calibrated: hierarchical fit A ~ coef . features (tokens per unit; corpus -> provider -> "
                        f"model, each shrunk toward the level above; judged {cal['judged_by']})", title_justify="left")
        for col in ("level", "key", "n", "status", *feats, "MAPE in", "MAPE out"):
            c.add_column(col, justify="left" if col in ("level", "key", "status") else "right", overflow="fold")
        for lv in levels:
            c.add_row(lv["level"], safe_text(lv["key"]), f"{lv['n']:,}", lv["status"],
                      *[_num(lv["coef"][f], 3 if f not in ("overhead", "images") else 0) for f in feats],
                      _pct(lv["mape_in_sample"]), _pct(lv["mape_out_of_sample"]) if lv["mape_out_of_sample"] is not None
                      else "too few")
        parts.append(c)
    oos = (cal or {}).get("out_of_sample")
    if oos:
        from rich.text import Text

        mapes = ", ".join(f"{k} {_pct(v)}" for k, v in oos["mape"].items())
        line = f"out of sample ({oos['requests']:,} requests): {mapes}; best raw estimator: {oos['best_raw'] or '-'}"
        if oos["note"]:
            line += f"  WARNING: {oos['note']}"
        if oos["hybrid_worse_than_agent_estimate"]:
            line += "  WARNING: calibrated_hybrid is worse than the agent's own estimate (pi)"
        parts.append(Text(line))

    profiles = {k: v for k, v in (cal or {}).get("tokenizer", {}).items() if v is not None}
    if profiles:
        tp = Table(title="tokenizer fit: A ~ overhead + chars/chars_per_token + cjk*tokens_per_cjk + per_message*messages",
                   title_justify="left")
        for col in ("model", "n", "chars/token", "tokens/CJK char", "tokens/message", "overhead", "MAPE in"):
            tp.add_column(col, justify="left" if col == "model" else "right", overflow="fold", no_wrap=col != "model")
        for key, p in profiles.items():
            tp.add_row(safe_text(key), f"{p['n']:,}", _num(p["chars_per_token"], 3), _num(p["cjk_tokens_per_char"], 3),
                       _num(p["tokens_per_message"], 1), _num(p["overhead"], 0), _pct(p["mape_in_sample"]))
        parts.append(tp)

    return parts


def _sessions_table(summary: Mapping[str, Any], estimators: Sequence[str]) -> list[Any]:
    parts: list[Any] = []
    sessions = summary["sessions"]
    if len(sessions) > 1:
        s_t = Table(title="MAPE by session", title_justify="left")
        s_t.add_column("session")
        s_t.add_column("requests", justify="right")
        for est in estimators:
            s_t.add_column(est, justify="right")
        s_t.add_column("chars/token", justify="right")
        for sess in sessions:
            prof = sess.get("tokenizer") or {}
            s_t.add_row(safe_text(_session_name(sess["session"])), f"{sess['requests']:,}",
                        *[_pct(sess["estimators"][est]["mape"]) for est in estimators],
                        _num(prof.get("chars_per_token"), 2))
        parts.append(s_t)
    return parts


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


# --------------------------------------------------------------------------------------------
# JSON: the same frames as a document
# --------------------------------------------------------------------------------------------


def _r(v: float | None, digits: int = 6) -> float | None:
    return None if v is None else round(float(v), digits)


def _stats_json(stats: Any, estimators: Sequence[str], *, calibrated_in_sample: bool) -> dict[str, Any]:
    from sessiontools.analysis.estimate import stats_dict

    out = {}
    for est in estimators:
        d = stats_dict(stats, est)
        block: dict[str, Any] = {
            "n": int(d["n"]), "bias": _r(d["bias"]), "mape": _r(d["mape"]), "p50_abs": _r(d["p50_abs"], 1),
            "p95_abs": _r(d["p95_abs"], 1), "max_abs": _r(d["max_abs"], 1), "median_ratio": _r(d["median_ratio"]),
        }
        if est.startswith("calibrated"):
            block["mape_in_sample"] = _r(d["mape_in_sample"]) if calibrated_in_sample else None
        out[est] = block
    return out


def _timing_json(timing: Any) -> list[dict[str, Any]]:
    return [{**t, "early_rate": _r(t["early_rate"]), "late_rate": _r(t["late_rate"])} for t in timing.iter_rows(named=True)]


def _profile_json(p: Any) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"n": p.n, "chars_per_token": _r(p.chars_per_token), "cjk_tokens_per_char": _r(p.cjk_tokens_per_char),
            "tokens_per_message": _r(p.tokens_per_message), "overhead": _r(p.overhead, 1),
            "mape_in_sample": _r(p.mape_in_sample), "warnings": list(p.warnings)}


def _level_json(lv: Any) -> dict[str, Any]:
    from sessiontools.tokens.features import FEATURES

    return {"level": lv.level, "key": lv.key, "n": lv.fit.n, "sessions": lv.sessions, "status": lv.fit.status.value,
            "coef": {n: _r(c) for n, c in zip(FEATURES, lv.fit.coef, strict=True)}, "clipped": list(lv.fit.clipped),
            "mape_in_sample": _r(lv.mape_in_sample), "mape_out_of_sample": _r(lv.mape_out_of_sample),
            "out_of_sample_requests": lv.oos_requests}


def _verdict_json(v: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from sessiontools.analysis.estimate.hierarchy import MIN_OOS

    note = None
    if v.requests < MIN_OOS:
        note = f"too few: {v.requests} out-of-sample predictions (at least {MIN_OOS} are needed)"
    elif v.calibrated_worse:
        note = f"calibrated is worse out of sample than the best raw estimator, {v.best_raw}"
    summary = {"requests": v.requests, "mape": {k: _r(x) for k, x in v.mape.items()}, "best_raw": v.best_raw,
               "calibrated_worse_than_best_raw": v.calibrated_worse,
               "hybrid_worse_than_agent_estimate": v.hybrid_worse, "note": note}
    sessions = []
    for row in v.per_session.iter_rows(named=True):
        enough = row["requests"] >= MIN_OOS
        sessions.append({"session": row["session"], "requests": row["requests"],
                         "mape": {k[5:]: (_r(x) if enough else None) for k, x in row.items() if k.startswith("mape_")},
                         "best_raw": row.get("best_raw") if enough else None,
                         "calibrated_worse_than_best_raw": bool(row.get("calibrated_worse")) if enough else None,
                         "note": None if enough else "too few"})
    return summary, sessions


def _calibration_json(report: EstimateErrorReport) -> dict[str, Any] | None:
    from sessiontools.analysis.estimate.hierarchy import MIN_OOS, MIN_REQUESTS
    from sessiontools.tokens.features import FEATURES

    cal = report.calibration
    if cal is None:
        return None
    outcome = cal.outcome
    linear = {}
    for key, fit in outcome.fitted.to_dict()["models"].items():
        linear[key] = {**fit, "method": outcome.methods[key].value, "sessions": outcome.sessions[key]}
    oos, held_out = _verdict_json(cal.verdict) if cal.verdict is not None else (None, [])
    out: dict[str, Any] = {
        "source": "file" if cal.loaded is not None else "fit",
        "model": "hierarchical",
        "features": list(FEATURES),
        "judged_by": cal.hierarchy.judged.value if cal.hierarchy is not None else None,
        "min_requests": MIN_REQUESTS,
        "min_out_of_sample": MIN_OOS,
        "levels": [_level_json(lv) for lv in cal.levels],
        "out_of_sample": oos,
        "held_out_sessions": held_out,
        "applied": cal.loaded.to_dict() if cal.loaded is not None else None,
        "tokenizer": {k: _profile_json(v) for k, v in cal.tokenizer.items()},
        "linear": {"x": outcome.x, "models": linear},
    }
    if cal.alternative is not None:
        out["linear"]["chars4"] = {
            key: {**fit, "chars_per_token": _r(4 / fit["b"]) if fit["b"] else None}
            for key, fit in cal.alternative.fitted.to_dict()["models"].items()
        }
    return out


def estimate_error_json(report: EstimateErrorReport) -> dict[str, Any]:
    """The JSON body of `estimate-error --format json` (keys documented in docs/estimate-error.md)."""
    ests = report.estimators
    ins = report.options.calibration is None and report.calibration is not None
    by = report.options.by
    return {
        "requests": len(report.frame),
        "skipped_requests": {"total": sum(report.skipped.values()), **dict(sorted(report.skipped.items()))},
        "by": by,
        "thresholds": [{"spec": spec, "tokens": t} for spec, t in report.thresholds],
        "estimators": _stats_json(report.stats, ests, calibrated_in_sample=ins),
        "groups": [
            {"by": by, "group": g.label, "requests": g.requests,
             "estimators": _stats_json(g.stats, ests, calibrated_in_sample=ins), "timing": _timing_json(g.timing)}
            for g in report.groups
        ],
        "calibration": _calibration_json(report),
        "timing": _timing_json(report.timing),
        "sessions": [
            {"session": s.session, "pi_version": s.pi_version, "requests": s.requests,
             "skipped_requests": dict(sorted(s.skipped.items())),
             "estimators": _stats_json(s.stats, ests, calibrated_in_sample=ins), "tokenizer": _profile_json(s.tokenizer)}
            for s in report.sessions
        ],
    }
