"""Does each model's own tokenizer beat o200k on that family's recorded usage? The per-family table
of docs/estimate-error.md ("Each model's own tokenizer"), measured on real session files.

    .venv/bin/python -m lab.tokenizer_families DIR_OR_FILES... [--json out.json]

estimate-error runs twice over the same files: as shipped (the `model` feature and estimator count
with the family tokenizer of `tokens.registry`) and with the registry mapping every model to o200k
(what the project did before). Per family (the requests whose model has that tokenizer), both runs
give, out of sample (leave-one-session-out, as estimate-error judges it):

- `A/E`: median of A / E of the raw count (o200k, the family's own) over the requests, and its
  spread (the 10th-90th percentile range of A/E). A/E includes the hidden overhead (system prompt,
  tools), the same for both tokenizers;
- `dA/dE`: the same over the growth between consecutive requests of a session whose context only
  grew by at least 200 tokens (the overhead cancels, what is left is the tokenizer and a
  per-message framing);
- `increment error`: dA fitted as a * dE + m * (messages added) by least squares over those
  increments; the mean |residual| / mean dA. The cleanest test of a tokenizer: no hidden overhead,
  a framing cost per message allowed;
- `calibrated`: the calibrated estimator's MAPE with that tokenizer as its main feature.

A family whose own tokenizer does not beat o200k on the increment error is not used (it is left
out of `tokens.registry.TOKENIZERS`); the calibrated MAPE is reported beside it (the hidden
overhead, which varies by session, dominates it). Nothing of the files is printed but
model names and numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _sessions(paths: list[str]) -> list[Any]:
    from sessiontools.read import load_session

    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    out = []
    for f in files:
        try:
            out.append(load_session(f))
        except Exception as exc:  # a file the readers refuse is not part of the measure
            print(f"skipped {f.name}: {exc}", file=sys.stderr)
    return out


def _run(sessions: list[Any], own: bool) -> Any:
    from sessiontools.analysis.estimate import EstimateErrorOptions, estimate_error
    from sessiontools.tokens import registry

    real = registry.family_of
    if not own:
        registry.family_of = lambda provider, model: None  # type: ignore[assignment]
    try:
        options = EstimateErrorOptions(estimators=("o200k", "model", "calibrated", "calibrated_hybrid",
                                                   "calibrated_session"))
        return estimate_error(sessions, options).frame  # with the internal columns (features), for `refit`
    finally:
        registry.family_of = real  # type: ignore[assignment]


def refit(frame: Any, not_calibration: frozenset[str] = frozenset()) -> Any:
    """The frame's calibrated (LOSO) and calibrated_session (time split) errors refitted with
    `tokens.registry.NOT_CALIBRATION_FEATURE` = `not_calibration` (empty: every family's own
    tokenizer is the calibrated feature): what shipping the other choice would have measured."""
    import numpy as np
    import polars as pl

    from sessiontools.analysis.estimate.calibrate import calibrate, predictions
    from sessiontools.analysis.estimate.hierarchy import calibration_feature
    from sessiontools.analysis.estimate.summary import session_level
    from sessiontools.tokens import registry

    real = registry.NOT_CALIBRATION_FEATURE
    registry.NOT_CALIBRATION_FEATURE = not_calibration  # type: ignore[misc]
    try:
        f = calibration_feature(frame.drop([c for c in ("f_model", "t_f_model") if c in frame.columns]))
    finally:
        registry.NOT_CALIBRATION_FEATURE = real  # type: ignore[misc]
    cal = calibrate(f)
    loso = predictions(cal, f)["oos_calibrated"]
    ts = np.asarray([np.nan if v is None else v for v in session_level(f, cal.oos_coef, cal.mask)])
    a = f["actual"].to_numpy().astype(np.float64)
    return f.with_columns(pl.Series("rel_err_calibrated", (loso - a) / a),
                          pl.Series("rel_err_calibrated_session", (ts - a) / a))


def _q(values: Any, q: float) -> float | None:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.quantile(v, q)) if len(v) else None


def _increments(frame: Any, col: str) -> tuple[Any, float | None, list[float]]:
    """dA/dE between consecutive requests of a session whose context only grew, and the increment
    error of dA ~ a * dE + m * dMessages (with [a, m])."""
    import numpy as np
    import polars as pl

    f = frame.sort("session", "line").with_columns(
        (pl.col("actual") - pl.col("actual").shift(1).over("session")).alias("dA"),
        (pl.col(col) - pl.col(col).shift(1).over("session")).alias("dE"),
        (pl.col("messages") - pl.col("messages").shift(1).over("session")).alias("dM"),
    )
    f = f.filter((pl.col("dM") > 0) & (pl.col("dE") >= 200) & (pl.col("dA") > 0))
    if len(f) < 3:
        return (f["dA"] / f["dE"]).to_numpy(), None, []
    x = np.column_stack([f["dE"].to_numpy(), f["dM"].to_numpy()]).astype(np.float64)
    y = f["dA"].to_numpy().astype(np.float64)
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    err = float(np.mean(np.abs(y - x @ coef)) / np.mean(y))
    return y / x[:, 0], err, [round(float(c), 3) for c in coef]


def family_table(own: Any, base: Any, own_feature: Any) -> list[dict[str, Any]]:
    """Per family: A/E, dA/dE and the increment error of o200k and of the family's own tokenizer,
    and the calibrated errors with o200k, as shipped (`own`) and with the own tokenizer as the
    calibrated feature of every family (`own_feature`, from `refit`)."""
    import numpy as np
    import polars as pl

    rows = []
    fams = sorted({t for t in own["model_tokenizer"].drop_nulls().unique().to_list() if t != "o200k_base"})
    for fam in [*fams, "o200k_base"]:
        keys = own.filter(pl.col("model_tokenizer") == fam)["model_key"].unique().to_list()
        a = own.filter(pl.col("model_key").is_in(keys))
        b = base.filter(pl.col("model_key").is_in(keys))
        c = own_feature.filter(pl.col("model_key").is_in(keys))
        rec_feature = {"calibrated_mape": float(np.nanmean(np.abs(c["rel_err_calibrated"].to_numpy()))),
                       "session_mape": float(np.nanmean(np.abs(c["rel_err_calibrated_session"].to_numpy())))}
        rec: dict[str, Any] = {"tokenizer": fam, "models": sorted(keys), "requests": len(a),
                               "sessions": a["session"].n_unique()}
        for tag, f, col in (("o200k", b, "est_o200k"), ("own", a, "est_model")):
            ratio = (f["actual"] / f[col]).to_numpy()
            inc, inc_err, inc_fit = _increments(f, col)
            rec[tag] = {
                "a_over_e": _q(ratio, 0.5), "a_over_e_p10_p90": [_q(ratio, 0.1), _q(ratio, 0.9)],
                "da_over_de": _q(inc, 0.5), "da_over_de_p10_p90": [_q(inc, 0.1), _q(inc, 0.9)],
                "increments": int(len(inc)), "increment_error": inc_err, "increment_fit": inc_fit,
                "calibrated_mape": float(np.nanmean(np.abs(f["rel_err_calibrated"].to_numpy()))),
                "hybrid_mape": float(np.nanmean(np.abs(f["rel_err_calibrated_hybrid"].to_numpy()))),
                "session_mape": float(np.nanmean(np.abs(f["rel_err_calibrated_session"].to_numpy()))),
            }
        rec["own_feature"] = rec_feature
        rows.append(rec)
    return rows


def per_model(frame: Any, min_requests: int = 50) -> list[dict[str, Any]]:
    import polars as pl

    g = frame.group_by("model_key").agg(
        pl.len().alias("requests"),
        pl.col("rel_err_calibrated").abs().mean().alias("calibrated"),
        pl.col("rel_err_calibrated_hybrid").abs().mean().alias("hybrid"),
        pl.col("rel_err_calibrated_session").abs().mean().alias("session"),
    ).filter(pl.col("requests") >= min_requests).sort("requests", descending=True)
    return g.to_dicts()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--frames", type=Path, help="write both request frames here (own.parquet, o200k.parquet)")
    a = ap.parse_args(argv)
    sessions = _sessions(a.paths)
    own, base = _run(sessions, True), _run(sessions, False)
    if a.frames:
        a.frames.mkdir(parents=True, exist_ok=True)
        own.write_parquet(a.frames / "own.parquet")
        base.write_parquet(a.frames / "o200k.parquet")
    table = family_table(own, base, refit(own))

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    def r(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    print("| tokenizer | requests | sessions | A/E o200k (p10-p90) | A/E own (p10-p90) | dA/dE o200k (p10-p90) | "
          "dA/dE own (p10-p90) | increments | increment error o200k | increment error own | calibrated o200k | "
          "calibrated own | calibrated shipped | time split o200k | time split own | time split shipped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in table:
        o, w = t["o200k"], t["own"]
        print(f"| {t['tokenizer']} | {t['requests']:,} | {t['sessions']} | {r(o['a_over_e'])} "
              f"({r(o['a_over_e_p10_p90'][0])}-{r(o['a_over_e_p10_p90'][1])}) | {r(w['a_over_e'])} "
              f"({r(w['a_over_e_p10_p90'][0])}-{r(w['a_over_e_p10_p90'][1])}) | {r(o['da_over_de'])} "
              f"({r(o['da_over_de_p10_p90'][0])}-{r(o['da_over_de_p10_p90'][1])}) | {r(w['da_over_de'])} "
              f"({r(w['da_over_de_p10_p90'][0])}-{r(w['da_over_de_p10_p90'][1])}) | {w['increments']:,} | "
              f"{pct(o['increment_error'])} | {pct(w['increment_error'])} | {pct(o['calibrated_mape'])} | "
              f"{pct(t['own_feature']['calibrated_mape'])} | {pct(w['calibrated_mape'])} | {pct(o['session_mape'])} | "
              f"{pct(t['own_feature']['session_mape'])} | {pct(w['session_mape'])} |")
    import numpy as np

    for tag, f in (("o200k only", base), ("own tokenizers", own)):
        cal = float(np.nanmean(np.abs(f["rel_err_calibrated"].to_numpy())))
        hyb = float(np.nanmean(np.abs(f["rel_err_calibrated_hybrid"].to_numpy())))
        ses = float(np.nanmean(np.abs(f["rel_err_calibrated_session"].to_numpy())))
        print(f"overall ({tag}): {len(f):,} requests, {f['session'].n_unique()} sessions; calibrated (LOSO) {pct(cal)}, "
              f"calibrated_session (time split) {pct(ses)}, calibrated_hybrid {pct(hyb)}")
    models = per_model(own)
    for m in models:
        print(f"  {m['model_key']}: {m['requests']:,} requests, calibrated (LOSO) {pct(m['calibrated'])}, "
              f"time split {pct(m['session'])}, hybrid {pct(m['hybrid'])}")
    if a.json:
        a.json.write_text(json.dumps({"families": table, "models": models}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
