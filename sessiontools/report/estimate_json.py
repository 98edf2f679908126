"""`estimate-error --format json`: the report's frames as one document (keys documented in
docs/estimate-error.md), and the headline made from it. The tables, the per-request frame and the
figure are `report.estimate_error` (which imports rich: a JSON run does not)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.analysis.estimate import EstimateErrorReport
from sessiontools.names import RULE_VERSION_KEY
from sessiontools.tokens.registry import TOKENIZERS, calibration_encoding, label


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
            "candidate": lv.fit.candidate,
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
    sessions = []
    for row in v.per_session.iter_rows(named=True):
        enough = row["requests"] >= MIN_OOS
        sessions.append({"session": row["session"], "requests": row["requests"],
                         "mape": {k[5:]: (_r(x) if enough else None) for k, x in row.items() if k.startswith("mape_")},
                         "best_raw": row.get("best_raw") if enough else None,
                         "calibrated_worse_than_best_raw": bool(row.get("calibrated_worse")) if enough else None,
                         "hybrid_worse_than_agent_estimate": bool(row.get("hybrid_worse")) if enough else None,
                         "note": None if enough else "too few"})
    judged = [s for s in sessions if s["note"] is None]
    worse = sum(1 for s in judged if s["calibrated_worse_than_best_raw"])
    if worse and v.requests >= MIN_OOS:
        lost = f"calibrated is worse than the best raw estimator on {worse} of {len(judged)} held-out sessions"
        note = f"{note}; {lost}" if note else lost
    summary = {"requests": v.requests, "mape": {k: _r(x) for k, x in v.mape.items()}, "best_raw": v.best_raw,
               "calibrated_worse_than_best_raw": v.calibrated_worse,
               "hybrid_worse_than_agent_estimate": v.hybrid_worse,
               "held_out_sessions": {"judged": len(judged), "calibrated_worse_than_best_raw": worse,
                                     "hybrid_worse_than_agent_estimate":
                                         sum(1 for s in judged if s["hybrid_worse_than_agent_estimate"])},
               "note": note}
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


def _model_tokenizers_json(frame: Any) -> dict[str, Any]:
    """`model_tokenizers`: the tokenizer each model's `model` counts used (when they were counted) and
    the one of the calibrated model's `model` feature (`calibrated_feature`: o200k for a family whose
    own tokenizer calibrated worse, `tokens.registry.NOT_CALIBRATION_FEATURE`)."""
    if "model_tokenizer" not in frame.columns or frame["model_tokenizer"].null_count() == len(frame):
        return {}
    pairs = frame.select("model_key", "model_tokenizer").unique().sort("model_key").iter_rows()
    return {"model_tokenizers": {k: {"tokenizer": t, "own": t in TOKENIZERS, "label": label(t),
                                     "calibrated_feature": calibration_encoding(t)}
                                 for k, t in pairs if t is not None}}


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
        **_model_tokenizers_json(report.frame),
        "estimators": _stats_json(report.stats, ests, calibrated_in_sample=ins),
        "groups": [
            {"by": by, "group": g.label, "requests": g.requests,
             "estimators": _stats_json(g.stats, ests, calibrated_in_sample=ins), "timing": _timing_json(g.timing)}
            for g in report.groups
        ],
        "calibration": _calibration_json(report),
        "timing": _timing_json(report.timing),
        "sessions": [
            {"session": s.session, RULE_VERSION_KEY: s.rule_version, "requests": s.requests,
             "skipped_requests": dict(sorted(s.skipped.items())),
             "estimators": _stats_json(s.stats, ests, calibrated_in_sample=ins), "tokenizer": _profile_json(s.tokenizer)}
            for s in report.sessions
        ],
    }


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
    oos = (summary.get("calibration") or {}).get("out_of_sample") or {}
    warn = f"; WARNING: {oos['note']}" if oos.get("note") else ""
    if scored:
        mape, best = min(scored)
        parts.append(f"closest: {best} (MAPE {mape:.1%})")
    return f"estimate-error: {summary['requests']:,} requests; " + "; ".join(parts) + warn
