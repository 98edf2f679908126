"""The `calibrated` estimator's fit A ~ a + b * x per provider/model, judged out of sample, and the
tokenizer profile A ~ overhead + other/chars_per_token + cjk * tokens_per_cjk + per_message * messages.

Every fit goes through `tokens.fit.least_squares`. Out of sample: leave-one-session-out for a
model seen in several sessions, else a two-fold time split (each half judged by a fit on the
other); a model with a single request is judged by the fit of the other models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sessiontools.analysis.estimate.options import DEFAULT_CALIBRATION_X
from sessiontools.analysis.estimate.stats import mape
from sessiontools.tokens.calibrated import ANY_MODEL, Calibration, Fit, fit_line


class Judged(StrEnum):
    """How a fit was judged out of sample."""

    LOSO = "leave-one-session-out"
    TIME_SPLIT = "time-split"
    NONE = "none"


@dataclass(slots=True)
class CalibrationOutcome:
    """Fits over all data, and per-row in-sample and out-of-sample predictions."""

    x: str
    fitted: Calibration
    methods: dict[str, Judged]
    sessions: dict[str, int]
    in_sample: list[float | None]
    out_of_sample: list[float | None]


@dataclass(frozen=True, slots=True)
class _Data:
    xs: list[float]
    ys: list[int]
    sessions: list[str]


def _fit(idx: Sequence[int], d: _Data, x_name: str) -> Fit | None:
    if not idx:
        return None
    a, b = fit_line([d.xs[i] for i in idx], [d.ys[i] for i in idx])
    return Fit(x_name, a, b, len(idx))


def _folds(group: Sequence[int], d: _Data) -> tuple[list[list[int]], Judged]:
    names = list(dict.fromkeys(d.sessions[i] for i in group))
    if len(names) >= 2:
        return [[i for i in group if d.sessions[i] == s] for s in names], Judged.LOSO
    if len(group) >= 2:
        half = (len(group) + 1) // 2
        return [list(group[:half]), list(group[half:])], Judged.TIME_SPLIT
    return [list(group)], Judged.NONE


def _out_of_sample(group: Sequence[int], all_idx: Sequence[int], d: _Data, x_name: str) -> tuple[dict[int, float], Judged]:
    """Out-of-sample predictions for the rows of `group`; other rows (other models) only back up
    a fold whose own training part is empty."""
    pred: dict[int, float] = {}
    folds, method = _folds(group, d)
    for test in folds:
        test_set = set(test)
        train = [i for i in group if i not in test_set]
        if not train:  # a model with a single request: judged by the other models' fit
            train = [i for i in all_idx if i not in test_set]
        fit = _fit(train, d, x_name)
        if fit is None:
            continue
        for i in test:
            pred[i] = fit.predict(d.xs[i])
    return pred, method


def fit_calibration(frame: Any, x: str = DEFAULT_CALIBRATION_X) -> CalibrationOutcome:
    """A ~ a + b * x per provider/model and over all models (`*`), least squares; rows in session
    order and, within a session, in path order. `frame`: a request frame or a list of row dicts."""
    rows = frame.to_dicts() if hasattr(frame, "to_dicts") else list(frame)
    col = f"est_{x}"
    idx_all = [i for i, r in enumerate(rows) if r.get(col) is not None]
    d = _Data([float(r[col]) if r.get(col) is not None else 0.0 for r in rows], [int(r["actual"]) for r in rows],
              [str(r["session"]) for r in rows])
    by_model: dict[str, list[int]] = {}
    for i in idx_all:
        by_model.setdefault(str(rows[i]["model_key"]), []).append(i)
    in_sample: list[float | None] = [None] * len(rows)
    oos: list[float | None] = [None] * len(rows)
    fits: dict[str, Fit] = {}
    methods: dict[str, Judged] = {}
    counts: dict[str, int] = {}
    groups = [(key, by_model[key], True) for key in sorted(by_model)]
    if idx_all:
        groups.append((ANY_MODEL, idx_all, False))
    for key, group, own in groups:
        full = _fit(group, d, x)
        assert full is not None
        if own:
            for i in group:
                in_sample[i] = full.predict(d.xs[i])
        pred, method = _out_of_sample(group, idx_all, d, x)
        if own:
            for i, v in pred.items():
                oos[i] = v
        ys = [d.ys[i] for i in group]
        fits[key] = Fit(x, full.a, full.b, full.n, mape([full.predict(d.xs[i]) for i in group], ys),
                        mape([pred.get(i) for i in group], ys))
        methods[key] = method
        counts[key] = len({d.sessions[i] for i in group})
    return CalibrationOutcome(x, Calibration(fits), methods, counts, in_sample, oos)


@dataclass(frozen=True, slots=True)
class TokenizerProfile:
    """A provider's tokenizer in the agent's units (None: the term could not be fitted)."""

    n: int
    chars_per_token: float | None
    cjk_tokens_per_char: float | None
    tokens_per_message: float | None
    overhead: float | None
    mape_in_sample: float | None
    warnings: tuple[str, ...] = ()


#: Physical bounds of a tokenizer profile: a value outside is not reported, and a warning says so.
CHARS_PER_TOKEN = (0.5, 12.0)
MAX_CJK_TOKENS_PER_CHAR = 4.0
MAX_TOKENS_PER_MESSAGE = 500.0


def fit_tokenizer_profile(frame: Any) -> TokenizerProfile | None:
    """Least squares A ~ overhead + other/chars_per_token + cjk*cjk_tokens_per_char + per_message*messages.

    A term whose column is constant (no CJK text) is left out and reported as None. None when there
    are too few requests to fit.
    """
    import numpy as np

    from sessiontools.tokens.fit import least_squares

    if not hasattr(frame, "to_numpy"):
        import polars as pl

        frame = pl.DataFrame(list(frame))
    n = len(frame)
    text = frame["text_chars"].to_numpy().astype(np.float64)
    cjk = frame["cjk_chars"].to_numpy().astype(np.float64)
    cols = [np.ones(n), text - cjk, cjk, frame["messages"].to_numpy().astype(np.float64)]
    keep = [k for k, c in enumerate(cols) if k == 0 or (n and bool((c != c[0]).any()))]
    if 1 not in keep or n < len(keep) + 2:
        return None
    x = np.array([cols[k] for k in keep], dtype=np.float64).T
    y = frame["actual"].to_numpy().astype(np.float64)
    scale = np.maximum(np.abs(x).max(axis=0), 1.0)
    if np.linalg.matrix_rank(x / scale) < len(keep):
        return None
    coef = np.asarray(least_squares(x / scale, y, nonneg=True).coef) / scale
    c: list[float | None] = [None] * 4
    for k, v in zip(keep, coef.tolist(), strict=True):
        c[k] = v
    pred = (x @ coef).tolist()
    other = c[1]
    cpt = 1 / other if other else None
    warnings = []
    if cpt is None or not CHARS_PER_TOKEN[0] <= cpt <= CHARS_PER_TOKEN[1]:
        shown = "no tokens per character" if cpt is None else f"{cpt:.3g} characters per token"
        warnings.append(f"{shown} is outside {CHARS_PER_TOKEN[0]}-{CHARS_PER_TOKEN[1]:g}: not reported (too few or "
                        "too similar requests to separate the terms)")
        cpt = None
    if c[2] is not None and c[2] > MAX_CJK_TOKENS_PER_CHAR:
        warnings.append(f"{c[2]:.3g} tokens per CJK character is above {MAX_CJK_TOKENS_PER_CHAR:g}: not reported")
        c[2] = None
    if c[3] is not None and c[3] > MAX_TOKENS_PER_MESSAGE:
        warnings.append(f"{c[3]:.3g} tokens per message is above {MAX_TOKENS_PER_MESSAGE:g}: not reported")
        c[3] = None
    return TokenizerProfile(n, cpt, c[2], c[3], c[0], mape(pred, frame["actual"].to_list()), tuple(warnings))


def profile_record(profile: TokenizerProfile | None) -> dict[str, Any] | None:
    """A profile as a JSON-able dict that `profile_from_record` restores exactly (floats round-trip);
    raises ValueError for a value JSON cannot hold exactly (NaN, infinity)."""
    import math

    if profile is None:
        return None
    out: dict[str, Any] = {}
    for name in TokenizerProfile.__slots__:
        v = getattr(profile, name)
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{name} is {v}")
        out[name] = list(v) if isinstance(v, tuple) else v
    return out


def profile_from_record(record: dict[str, Any] | None) -> TokenizerProfile | None:
    if record is None:
        return None
    return TokenizerProfile(**{**record, "warnings": tuple(record["warnings"])})
