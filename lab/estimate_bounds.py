"""Where the calibrated raw estimate's error comes from, and how low it can go with what the files
record: the figures of docs/estimate-error.md ("Why 5% is out of reach leave-one-session-out").

    .venv/bin/python -m lab.tokenizer_families DIR --frames OUT   # writes OUT/own.parquet
    .venv/bin/python -m lab.estimate_bounds OUT/own.parquet [--json out.json]

From the request frame (with its internal feature columns) it refits the calibrated model and
reports, out of sample:

- the calibrated (leave-one-session-out) and calibrated_session (time split inside each session)
  MAPE, overall and per model with at least 50 requests, and the time split's sensitivity to its
  shrinkage (`session_level.PSEUDO`);
- the leave-one-session-out error broken down by what the files record: the position of the
  request in its session, images, CJK share, tool-output share, size, cache reads;
- how much of the variance of log(A / E) lies between units (a session under one model) rather
  than within them, and oracle bounds: the MAPE if each unit's own constant factor, offset, or
  factor and offset (fitted on the unit's own requests, in sample: not an estimator) were known;
- whether what the session files record about a session (harness version, model API, thinking
  level, OpenClaw or Pi, the number of distinct tools called and of tool calls, the length of the
  first user message, the CJK share, the project directory) predicts its unit factor: a ridge
  regression cross-validated in 10 folds of sessions, and the MAPE of the corrected estimate.

Nothing of the files is printed but model names and numbers.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def _mape(pred: Any, a: Any) -> float:
    import numpy as np

    return float(np.nanmean(np.abs(pred - a) / a))


def _recorded(path: str) -> dict[str, Any]:
    """What a Pi/OpenClaw session file records about its session (no text kept)."""
    tools: collections.Counter[str] = collections.Counter()
    rec: dict[str, Any] = {"version": "?", "cwd": "?", "thinking": "?", "api": "?", "openclaw": 0, "first_user": 0}
    first = True
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return rec | {"distinct_tools": 0, "tool_calls": 0}
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict):
            continue
        t = e.get("type")
        if t == "session":
            rec["version"] = str(e.get("version"))
            rec["cwd"] = hashlib.sha256(str(e.get("cwd")).encode()).hexdigest()[:8]
        elif t == "thinking_level_change" and rec["thinking"] == "?":
            rec["thinking"] = str(e.get("thinkingLevel"))
        elif t == "custom":
            kind = str(e.get("customType", ""))
            rec["openclaw"] |= kind.startswith("openclaw")
            if kind == "model-snapshot" and rec["api"] == "?" and isinstance(e.get("data"), dict):
                rec["api"] = str(e["data"].get("modelApi"))
        elif t == "message" and isinstance(e.get("message"), dict):
            m = e["message"]
            content = m.get("content")
            if m.get("role") == "user" and first:
                first = False
                rec["first_user"] = len(content) if isinstance(content, str) else sum(
                    len(b.get("text") or "") for b in content or [] if isinstance(b, dict))
            if m.get("role") == "assistant" and isinstance(content, list):
                tools.update(str(b.get("name")) for b in content if isinstance(b, dict) and b.get("type") == "toolCall")
    return rec | {"distinct_tools": len(tools), "tool_calls": sum(tools.values())}


def recorded_features_cv(frame: Any, pred: Any) -> list[dict[str, Any]]:
    """Ridge regressions of each unit's mean log(A / pred) on recorded session features, 10 folds
    of sessions; the MAPE of pred * exp(predicted factor) per feature set."""
    import numpy as np
    import polars as pl

    f = frame.with_columns(pl.Series("_lr", np.log(frame["actual"].to_numpy() / pred)))
    u = f.group_by("session", "model_key", maintain_order=True).agg(
        pl.col("_lr").mean().alias("mu"), pl.col("cjk_share").mean().alias("cjk"), pl.col("provider").first())
    feats = {s: _recorded(s) for s in u["session"].unique().to_list()}
    d = u.with_columns(*[pl.Series(k, [feats[s][k] for s in u["session"].to_list()])
                         for k in ("version", "cwd", "thinking", "api", "openclaw", "first_user", "distinct_tools",
                                   "tool_calls")])
    y = d["mu"].to_numpy()
    sessions = sorted(set(d["session"].to_list()))
    rng = np.random.default_rng(0)
    fold_of = dict(zip(sessions, rng.integers(0, 10, len(sessions)), strict=True))
    fold = np.array([fold_of[s] for s in d["session"].to_list()])
    unit = {k: i for i, k in enumerate(zip(d["session"].to_list(), d["model_key"].to_list(), strict=True))}
    row_unit = np.array([unit[k] for k in zip(f["session"].to_list(), f["model_key"].to_list(), strict=True)])
    a = f["actual"].to_numpy().astype(np.float64)

    def onehot(col: str) -> Any:
        vals = sorted(set(map(str, d[col].to_list())))
        return np.column_stack([(d[col].cast(pl.Utf8) == v).to_numpy().astype(float) for v in vals])

    sets = (("provider", ["provider"], []),
            ("+ harness version, model API, thinking level, OpenClaw", ["provider", "version", "api", "thinking",
                                                                      "openclaw"], []),
            ("+ tools called, first user message, CJK share",
             ["provider", "version", "api", "thinking", "openclaw"], ["distinct_tools", "tool_calls", "first_user", "cjk"]),
            ("+ project directory", ["provider", "version", "api", "thinking", "openclaw", "cwd"],
             ["distinct_tools", "tool_calls", "first_user", "cjk"]))
    out = []
    for name, cats, nums in sets:
        x = np.column_stack([np.ones(len(d)), *[onehot(c) for c in cats],
                             *[np.log1p(d[c].to_numpy().astype(float)) for c in nums]])
        best: dict[str, Any] | None = None
        for lam in (1.0, 10.0, 100.0):
            p = np.zeros(len(y))
            for k in range(10):
                tr = fold != k
                g = x[tr].T @ x[tr] + lam * np.eye(x.shape[1])
                p[~tr] = x[~tr] @ np.linalg.solve(g, x[tr].T @ y[tr])
            r2 = 1 - float(np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))
            m = _mape(pred * np.exp(p[row_unit]), a)
            if best is None or m < best["mape"]:
                best = {"features": name, "ridge": lam, "cv_r2": round(r2, 3), "mape": m}
        assert best is not None
        out.append(best)
    return out


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import polars as pl

    from sessiontools.analysis.estimate.calibrate import calibrate, predictions, rules_key
    from sessiontools.analysis.estimate.hierarchy import calibration_feature, design
    from sessiontools.analysis.estimate.session_level import PSEUDO, session_predictions, time_order

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("frame", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-recorded", action="store_true", help="skip the recorded-features regression")
    args = ap.parse_args(argv)
    f = pl.read_parquet(args.frame)
    if "f_model" not in f.columns:
        f = calibration_feature(f)
    cal = calibrate(f)
    x, a, _ = design(f)
    loso = predictions(cal, f)["oos_calibrated"]
    units = list(zip(f["session"].to_list(), (rules_key(m, v) for m, v in
                                              zip(f["model_key"].to_list(), f["pi_version"].to_list(), strict=True)),
                     strict=True))
    order = time_order(f["timestamp"].to_list())
    ts = {p: session_predictions(x, a, cal.oos_coef, units, order, cal.mask, p) for p in (1.0, PSEUDO, 5.0, 20.0)}
    out: dict[str, Any] = {"requests": len(f), "sessions": f["session"].n_unique(),
                           "loso": _mape(loso, a), "time_split": _mape(ts[PSEUDO], a),
                           "time_split_by_pseudo": {str(p): _mape(v, a) for p, v in ts.items()}}
    pos = np.zeros(len(f), dtype=np.int64)
    seen: collections.Counter[Any] = collections.Counter()
    for i in order:
        pos[i] = seen[units[i]]
        seen[units[i]] += 1
    d = f.select("model_key", "images", "cjk_share", "tool_share", "actual", "cache_read").with_columns(
        pl.Series("e_loso", np.abs(loso - a) / a), pl.Series("e_ts", np.abs(ts[PSEUDO] - a) / a), pl.Series("pos", pos))
    per_model = d.group_by("model_key").agg(pl.len().alias("requests"), pl.col("e_loso").mean().alias("loso"),
                                            pl.col("e_ts").mean().alias("time_split")) \
        .filter(pl.col("requests") >= 50).sort("requests", descending=True)
    out["models"] = per_model.to_dicts()
    total = float(d["e_loso"].sum())
    cuts = {
        "position in the session": pl.when(pl.col("pos") == 0).then(pl.lit("first")).when(pl.col("pos") < 5)
        .then(pl.lit("2nd-5th")).otherwise(pl.lit("later")),
        "images": pl.when(pl.col("images") > 0).then(pl.lit("with images")).otherwise(pl.lit("none")),
        "CJK share": pl.when(pl.col("cjk_share") < 0.05).then(pl.lit("<5%")).when(pl.col("cjk_share") < 0.3)
        .then(pl.lit("5-30%")).otherwise(pl.lit(">30%")),
        "tool output share": pl.when(pl.col("tool_share") < 0.3).then(pl.lit("<30%"))
        .when(pl.col("tool_share") < 0.7).then(pl.lit("30-70%")).otherwise(pl.lit(">70%")),
        "size": pl.when(pl.col("actual") < 16000).then(pl.lit("<16k")).when(pl.col("actual") < 32000)
        .then(pl.lit("16-32k")).when(pl.col("actual") < 64000).then(pl.lit("32-64k")).otherwise(pl.lit(">=64k")),
        "cache reads": pl.when(pl.col("cache_read") > 0).then(pl.lit("yes")).otherwise(pl.lit("no")),
    }
    out["breakdown"] = {}
    for name, expr in cuts.items():
        g = d.group_by(expr.alias("bucket")).agg(pl.len().alias("requests"), pl.col("e_loso").mean().alias("loso"),
                                                 (pl.col("e_loso").sum() / total).alias("share_of_error"),
                                                 pl.col("e_ts").mean().alias("time_split")).sort("bucket")
        out["breakdown"][name] = g.to_dicts()
    lr = np.log(a / loso)
    mu = np.zeros(len(a))
    factor, offset, affine = np.zeros(len(a)), np.zeros(len(a)), np.zeros(len(a))
    rows: dict[Any, list[int]] = {}
    for i, u in enumerate(units):
        rows.setdefault(u, []).append(i)
    for idx in map(np.asarray, rows.values()):
        mu[idx] = lr[idx].mean()
        factor[idx] = loso[idx] * np.median(a[idx] / loso[idx])
        offset[idx] = loso[idx] + np.median(a[idx] - loso[idx])
        xa = np.column_stack([np.ones(len(idx)), loso[idx]]) / a[idx, None]
        affine[idx] = xa @ np.linalg.lstsq(xa, np.ones(len(idx)), rcond=None)[0] * a[idx]
    out["log_ratio_variance"] = {"total": float(np.var(lr)), "within_units": float(np.var(lr - mu)),
                                 "between_share": float(1 - np.var(lr - mu) / np.var(lr))}
    out["oracle"] = {"unit_factor": _mape(factor, a), "unit_offset": _mape(offset, a), "unit_affine": _mape(affine, a)}
    if not args.no_recorded:
        out["recorded_features"] = recorded_features_cv(f, loso)

    def pct(v: float) -> str:
        return f"{v:.1%}"

    print(f"{out['requests']:,} requests, {out['sessions']} sessions: calibrated (LOSO) {pct(out['loso'])}, "
          f"calibrated_session (time split) {pct(out['time_split'])}")
    print("time split by PSEUDO: " + ", ".join(f"{k}: {pct(v)}" for k, v in out["time_split_by_pseudo"].items()))
    for m in out["models"]:
        print(f"  {m['model_key']}: {m['requests']:,} requests, LOSO {pct(m['loso'])}, time split {pct(m['time_split'])}")
    for name, g in out["breakdown"].items():
        print(f"{name}: " + "; ".join(f"{r['bucket']} {r['requests']:,} req LOSO {pct(r['loso'])} "
                                     f"({pct(r['share_of_error'])} of the error), time split {pct(r['time_split'])}"
                                     for r in g))
    v = out["log_ratio_variance"]
    print(f"log(A/E) variance {v['total']:.4f}, within units {v['within_units']:.4f}: "
          f"{pct(v['between_share'])} between units")
    o = out["oracle"]
    print(f"oracle (each unit's own constants, in sample): factor {pct(o['unit_factor'])}, offset "
          f"{pct(o['unit_offset'])}, factor and offset {pct(o['unit_affine'])}")
    for r in out.get("recorded_features", []):
        print(f"recorded features {r['features']}: CV R2 {r['cv_r2']}, MAPE {pct(r['mape'])} (ridge {r['ridge']})")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
