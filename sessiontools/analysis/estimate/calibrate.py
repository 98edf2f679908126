"""Per-request coefficients of the calibrated model, in sample and out of sample (see `hierarchy`).

`calibrate(frame)` returns, for every request row, the coefficient vector the in-sample tree
(down to the session level) and the out-of-sample tree (fitted without the row's session, or on
the earlier half of a single session) assign to it, and the fitted levels for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sessiontools.analysis.estimate.candidates import candidates, primary
from sessiontools.analysis.estimate.hierarchy import (
    MIN_REQUESTS,
    PSEUDO,
    LevelFit,
    Status,
    Sums,
    Tree,
    Unit,
    design,
    empty_sums,
    solve,
    sums,
)
from sessiontools.analysis.estimate.loso import held_out_coefficients
from sessiontools.analysis.estimate.options import Judged
from sessiontools.names import RULE_VERSION_KEY


@dataclass(slots=True)
class Calibrated:
    """The calibrated model over a request frame."""

    tree: Tree  # fitted on every row
    sessions: dict[tuple[str, str], LevelFit]  # (session, rules key) -> session level
    judged: Judged
    in_coef: Any  # rows x features (numpy), in sample
    oos_coef: Any  # rows x features, NaN where no out-of-sample prediction exists
    x: Any
    y: Any
    mask: tuple[bool, ...] | None = None  # the candidate's features (`candidates`)


#: Columns of the trailing part of a check point, in FEATURES order after the overhead.
TRAIL_FEATURES = ("t_messages", "t_f_cjk", "t_f_prose", "t_f_code", "t_f_digits", "t_f_space", "t_images",
                  "t_o200k", "t_cl100k", "t_model")


def trail_columns(frame: Any) -> tuple[str, ...]:
    """TRAIL_FEATURES of `frame`, the `model` feature's as `hierarchy.calibration_feature` made it."""
    return tuple("t_f_model" if c == "t_model" and "t_f_model" in frame.columns else c for c in TRAIL_FEATURES)


def rules_key(model_key: str, version: str | None) -> str:
    """The key of the rules level: a model under one agent rule version."""
    return f"{model_key} · rules {version or '?'}"


def _units(frame: Any) -> tuple[list[Unit], dict[Unit, list[int]]]:
    mks = frame["model_key"].to_list()
    rules = [rules_key(m, v) for m, v in zip(mks, frame[RULE_VERSION_KEY].to_list(), strict=True)]
    keys = list(zip(frame["session"].to_list(), frame["provider"].fill_null("?").to_list(), mks, rules, strict=True))
    rows: dict[Unit, list[int]] = {}
    for i, k in enumerate(keys):
        rows.setdefault(k, []).append(i)
    return keys, rows


def calibrate(frame: Any) -> Calibrated:
    """Fit the tree on every row, the session level under it, and the out-of-sample coefficients,
    with the feature set `candidates.primary` picks (a counted tokenizer's, else characters)."""
    import numpy as np

    x, y, w = design(frame)
    keys, rows = _units(frame)
    unit = {u: sums(x[idx], y[idx], w[idx], u[0]) for u, idx in rows.items()}
    cand = primary(candidates(x))
    tree = cand.fit(unit)
    in_coef = np.zeros_like(x)
    sessions: dict[tuple[str, str], LevelFit] = {}
    for (sess, prov, mk, rules), idx in rows.items():
        parent = tree.rules[rules]
        s = unit[(sess, prov, mk, rules)]
        fit = replace(solve(s, parent.coef, PSEUDO, cand.mask), candidate=cand.name) if s.n >= MIN_REQUESTS \
            else LevelFit(parent.coef, s.n, Status.TOO_FEW, candidate=cand.name)
        sessions[(sess, rules)] = fit
        in_coef[idx] = fit.coef
    names = list(dict.fromkeys(k[0] for k in keys))
    oos = np.full_like(x, np.nan)
    if len(names) >= 2:
        judged = Judged.LOSO  # each session by the tree over the others (`loso`: only its units' levels)
        for u, coef in held_out_coefficients(unit, cand.mask, cand.prior).items():
            oos[rows[u]] = coef
    elif len(keys) >= 2:
        judged = Judged.TIME_SPLIT
        half = (len(keys) + 1) // 2
        t_units: dict[Unit, Sums] = {}
        for i in range(half):
            t_units[keys[i]] = t_units.get(keys[i], empty_sums()) + sums(x[i:i + 1], y[i:i + 1], w[i:i + 1],
                                                                          keys[i][0])
        t = cand.fit(t_units)
        for i in range(half, len(keys)):
            oos[i] = t.coef_for(keys[i][1], keys[i][2], keys[i][3])
    else:
        judged = Judged.NONE
    return Calibrated(tree, sessions, judged, in_coef, oos, x, y, cand.mask)


def predictions(cal: Calibrated, frame: Any) -> dict[str, Any]:
    """Per-row calibrated and calibrated-hybrid estimates, in and out of sample (NaN: none)."""
    import numpy as np

    t = np.column_stack([np.zeros(len(frame)), *[np.asarray(frame[c].fill_null(0), dtype=np.float64)
                                                  for c in trail_columns(frame)]]) if len(frame) else np.zeros_like(cal.x)
    usage = np.asarray(frame["hyb_usage"].fill_null(np.nan), dtype=np.float64) if len(frame) else np.zeros(0)
    out = {}
    for tag, coef in (("ins", cal.in_coef), ("oos", cal.oos_coef)):
        full = np.maximum((coef * cal.x).sum(axis=1), 0.0)
        trail = np.maximum((coef * t).sum(axis=1), 0.0)
        hybrid = np.where(np.isnan(usage), full, usage + trail)
        out[f"{tag}_calibrated"] = full
        out[f"{tag}_hybrid"] = hybrid
    return out
