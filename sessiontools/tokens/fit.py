"""The one least-squares helper: weighted, optionally shrunk toward a prior, optionally non-negative.

Every fit in the package (the calibrated estimator, the replay truth model's overhead and ratio,
tokenizer profiles) goes through `least_squares`, so that shrinkage and physical bounds are applied
the same way everywhere.

    minimise  sum_i w_i (x_i . b - y_i)^2  +  sum_j ridge_j (b_j - prior_j)^2     [b >= 0 if nonneg]

The penalty is folded into the design matrix (extra rows sqrt(ridge_j) e_j with target
sqrt(ridge_j) prior_j); the non-negative case is Lawson and Hanson's active-set NNLS on the
augmented problem, which is exact for the handful of columns these fits have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LeastSquares:
    """Coefficients and how the fit went."""

    coef: tuple[float, ...]
    n: int  # observations (rows with positive weight)
    rss: float  # weighted residual sum of squares of the data rows (penalty excluded)


def _nnls(a: Any, b: Any, max_iter: int = 200) -> Any:
    """Lawson-Hanson: argmin ||a x - b|| subject to x >= 0 (small column counts)."""
    import numpy as np

    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = a.T @ (b - a @ x)
    tol = 1e-10 * max(1.0, float(np.abs(a).max(initial=0.0))) * max(m, n)
    for _ in range(max_iter):
        if passive.all() or (w[~passive] <= tol).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = float(np.min(x[neg] / (x[neg] - z[neg])))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        w = a.T @ (b - a @ x)
    return x


def least_squares(
    x: Any,
    y: Any,
    *,
    weights: Any | None = None,
    ridge: float | Sequence[float] = 0.0,
    prior: Sequence[float] | None = None,
    nonneg: bool | str = False,
) -> LeastSquares:
    """Fit y ~ x @ coef (x: n rows x k columns; put a column of ones in x for an intercept).

    `ridge` (one value or one per column) shrinks each coefficient toward `prior` (default 0);
    `nonneg` keeps every coefficient >= 0; `nonneg="if-negative"`: the unconstrained optimum unless
    one of its coefficients is negative, else the non-negative fit (the same answer when the problem
    is strictly convex, as a ridge fit is: one solve instead of the active-set iterations, and the
    augmented system built once). With no rows, the prior (or zeros) is returned.
    """
    import numpy as np

    xm = np.asarray(x, dtype=float)
    if xm.ndim == 1:
        xm = xm[:, None]
    yv = np.asarray(y, dtype=float)
    k = xm.shape[1]
    p = np.zeros(k) if prior is None else np.asarray(prior, dtype=float)
    lam = np.broadcast_to(np.asarray(ridge, dtype=float), (k,))
    if weights is None:  # every weight 1: the rows as they are (sqrt(1) * v is v)
        w, a, b = None, xm, yv
    else:
        w = np.asarray(weights, dtype=float)
        keep = w > 0
        xm, yv, w = xm[keep], yv[keep], w[keep]
        sw = np.sqrt(w)
        a = xm * sw[:, None]
        b = yv * sw
    pen = lam > 0
    if pen.any():
        sl = np.sqrt(lam[pen])
        extra = np.zeros((int(pen.sum()), k))
        extra[np.arange(len(sl)), np.flatnonzero(pen)] = sl
        a = np.vstack([a, extra])
        b = np.concatenate([b, sl * p[pen]])
    fallback = np.maximum(p, 0.0) if nonneg else p
    # Degenerate data (a column of zeros, one huge row) makes numpy warn on stderr (divide, overflow,
    # invalid value in matmul); the warning is no use to a user: the fit falls back to the prior.
    with np.errstate(all="ignore"):
        first = p if nonneg == "if-negative" else fallback
        if a.shape[0] == 0:
            coef = first
        elif nonneg is True:
            coef = _nnls(a, b)
        else:
            coef = np.linalg.lstsq(a, b, rcond=None)[0]
        if not np.all(np.isfinite(coef)):
            coef = first
        if nonneg == "if-negative" and coef.size and coef.min() < 0:
            coef = _nnls(a, b) if a.shape[0] else fallback
            if not np.all(np.isfinite(coef)):
                coef = fallback
        resid = xm @ coef - yv
        rss = float((resid * resid).sum() if w is None else (w * resid * resid).sum())
    return LeastSquares(tuple(float(c) for c in coef), int(len(yv)), rss)
