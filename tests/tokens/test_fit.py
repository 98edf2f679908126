"""The one least-squares helper: plain, weighted, shrunk toward a prior, non-negative."""

from __future__ import annotations

import numpy as np
import pytest

from sessiontools.tokens.fit import least_squares


def test_exact_line() -> None:
    """y = 3 + 2x is recovered exactly."""
    x = np.column_stack([np.ones(5), np.arange(5.0)])
    f = least_squares(x, 3 + 2 * np.arange(5.0))
    assert f.coef == pytest.approx((3.0, 2.0))
    assert f.rss == pytest.approx(0.0, abs=1e-9)
    assert f.n == 5


def test_nonneg_clamps_and_refits() -> None:
    """The unconstrained intercept is negative; with nonneg it is 0 and the slope is refitted through the origin."""
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    ys = np.array([0.0, 1.0, 2.0, 3.0])  # y = x - 1
    x = np.column_stack([np.ones(4), xs])
    free = least_squares(x, ys)
    assert free.coef[0] == pytest.approx(-1.0)
    bounded = least_squares(x, ys, nonneg=True)
    assert bounded.coef[0] == pytest.approx(0.0)
    assert bounded.coef[1] == pytest.approx(float(xs @ ys / (xs @ xs)))  # origin fit: 20/30


def test_ridge_shrinks_toward_prior() -> None:
    """One observation and a strong prior: the answer stays near the prior; no prior weight: the data."""
    x = np.array([[10.0]])
    y = np.array([50.0])  # data says 5
    assert least_squares(x, y).coef[0] == pytest.approx(5.0)
    strong = least_squares(x, y, ridge=1e6, prior=[1.3]).coef[0]
    assert strong == pytest.approx(1.3, abs=0.01)
    # ridge = 100 (= x^2): halfway in the normal equations: (100*5 + 100*1.3) / 200
    assert least_squares(x, y, ridge=100.0, prior=[1.3]).coef[0] == pytest.approx(3.15)


def test_weights_and_empty() -> None:
    """Zero weight drops a row; no rows gives the prior."""
    x = np.array([[1.0], [1.0]])
    assert least_squares(x, [2.0, 100.0], weights=[1.0, 0.0]).coef[0] == pytest.approx(2.0)
    assert least_squares(np.zeros((0, 2)), [], prior=[1.0, -2.0], nonneg=True).coef == (1.0, 0.0)
