"""The `calibrated` estimator's fit A ~ a + b * x per provider/model, judged out of sample, and the
tokenizer profile A ~ overhead + other/chars_per_token + cjk * tokens_per_cjk + per_message * messages.

Every fit goes through `tokens.fit.least_squares`. Out of sample: leave-one-session-out for a
model seen in several sessions, else a two-fold time split (each half judged by a fit on the
other); a model with a single request is judged by the fit of the other models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.estimate.options import DEFAULT_CALIBRATION_X, Judged
from sessiontools.analysis.estimate.stats import mape
from sessiontools.tokens.calibrated import ANY_MODEL, Calibration, Fit, fit_line


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
    xs: Any  # float64 per row (0 where the row has no x)
    ys: Any  # int64: A
    sessions: Any  # int64: a code per session name


def _fit(idx: Any, d: _Data, x_name: str) -> Fit | None:
    if not len(idx):
        return None
    a, b = fit_line(d.xs[idx], d.ys[idx])
    return Fit(x_name, a, b, len(idx))


def _predict(fit: Fit, xs: Any) -> Any:
    """`Fit.predict` of each x, to the bit (max(0.0, a + b * x))."""
    import numpy as np

    v = fit.a + fit.b * xs
    return np.where(v > 0.0, v, 0.0)


def _folds(group: Any, d: _Data) -> tuple[list[Any], Judged]:
    """Leave-one-session-out test folds (sessions in order of first appearance), else the two halves
    of a time split, else the single row."""
    import numpy as np

    codes = d.sessions[group]
    names = codes[np.sort(np.unique(codes, return_index=True)[1])]
    if len(names) >= 2:
        return [group[codes == s] for s in names], Judged.LOSO
    if len(group) >= 2:
        half = (len(group) + 1) // 2
        return [group[:half], group[half:]], Judged.TIME_SPLIT
    return [group], Judged.NONE


def _out_of_sample(group: Any, all_idx: Any, d: _Data, x_name: str) -> tuple[dict[int, float], Judged]:
    """Out-of-sample predictions for the rows of `group`; other rows (other models) only back up
    a fold whose own training part is empty."""
    import numpy as np

    pred: dict[int, float] = {}
    folds, method = _folds(group, d)
    for test in folds:
        train = group[~np.isin(group, test)]
        if not len(train):  # a model with a single request: judged by the other models' fit
            train = all_idx[~np.isin(all_idx, test)]
        fit = _fit(train, d, x_name)
        if fit is None:
            continue
        pred.update(zip(test.tolist(), _predict(fit, d.xs[test]).tolist(), strict=True))
    return pred, method


def _columns(frame: Any, col: str) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """(x, actual, session, model_key) of a request frame or a list of row dicts."""
    if hasattr(frame, "to_dicts"):
        xs = frame[col].to_list() if col in frame.columns else [None] * len(frame)
        return xs, frame["actual"].to_list(), frame["session"].to_list(), frame["model_key"].to_list()
    rows = list(frame)
    return ([r.get(col) for r in rows], [r["actual"] for r in rows], [r["session"] for r in rows],
            [r["model_key"] for r in rows])


def fit_calibration(frame: Any, x: str = DEFAULT_CALIBRATION_X) -> CalibrationOutcome:
    """A ~ a + b * x per provider/model and over all models (`*`), least squares; rows in session
    order and, within a session, in path order. `frame`: a request frame or a list of row dicts.
    Each fold's fit is over numpy vectors of the rows (the same sums, left to right, as over lists)."""
    import numpy as np

    xcol, actual, session, model = _columns(frame, f"est_{x}")
    codes: dict[str, int] = {}
    d = _Data(np.array([0.0 if v is None else float(v) for v in xcol], dtype=np.float64),
              np.array([int(v) for v in actual], dtype=np.int64),
              np.array([codes.setdefault(str(v), len(codes)) for v in session], dtype=np.int64))
    idx_all = np.array([i for i, v in enumerate(xcol) if v is not None], dtype=np.int64)
    by_model: dict[str, list[int]] = {}
    for i in idx_all.tolist():
        by_model.setdefault(str(model[i]), []).append(i)
    in_sample: list[float | None] = [None] * len(xcol)
    oos: list[float | None] = [None] * len(xcol)
    fits: dict[str, Fit] = {}
    methods: dict[str, Judged] = {}
    counts: dict[str, int] = {}
    groups = [(key, np.array(by_model[key], dtype=np.int64), True) for key in sorted(by_model)]
    if len(idx_all):
        groups.append((ANY_MODEL, idx_all, False))
    for key, group, own in groups:
        full = _fit(group, d, x)
        assert full is not None
        ins = _predict(full, d.xs[group]).tolist()
        pred, method = _out_of_sample(group, idx_all, d, x)
        rows = group.tolist()
        if own:
            for i, v in zip(rows, ins, strict=True):
                in_sample[i] = v
            for i, v in pred.items():
                oos[i] = v
        ys = d.ys[group].tolist()
        fits[key] = Fit(x, full.a, full.b, full.n, mape(ins, ys), mape([pred.get(i) for i in rows], ys))
        methods[key] = method
        counts[key] = len(np.unique(d.sessions[group]))
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

    `frame`: a request frame, a file's columns (`SessionRows.columns`) or a list of row dicts. A
    term whose column is constant (no CJK text) is left out and reported as None. None when there
    are too few requests to fit.
    """
    import numpy as np

    from sessiontools.tokens.fit import least_squares

    if isinstance(frame, Mapping):
        columns, actual = frame, list(frame["actual"])
    else:
        if not hasattr(frame, "to_numpy"):
            import polars as pl

            frame = pl.DataFrame(list(frame))
        columns = {c: frame[c].to_numpy() for c in ("text_chars", "cjk_chars", "messages", "actual")}
        actual = frame["actual"].to_list()

    def floats(name: str) -> Any:
        return np.asarray(columns[name]).astype(np.float64)

    n = len(actual)
    text = floats("text_chars")
    cjk = floats("cjk_chars")
    cols = [np.ones(n), text - cjk, cjk, floats("messages")]
    keep = [k for k, c in enumerate(cols) if k == 0 or (n and bool((c != c[0]).any()))]
    if 1 not in keep or n < len(keep) + 2:
        return None
    x = np.array([cols[k] for k in keep], dtype=np.float64).T
    y = floats("actual")
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
    return TokenizerProfile(n, cpt, c[2], c[3], c[0], mape(pred, actual), tuple(warnings))


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
