"""`loso.held_out_coefficients` is, to the bit, `fit_tree` over the other sessions' units."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sessiontools.analysis.estimate.candidates import candidates, primary
from sessiontools.analysis.estimate.hierarchy import Sums, Unit, fit_tree, sums
from sessiontools.analysis.estimate.loso import LeaveOneOut, held_out_coefficients
from sessiontools.tokens.features import FEATURES


def _units(seed: int) -> dict[Unit, Sums]:
    """Random units over a few providers, models (one under two providers), rule versions, with
    small units (too few requests), one-session levels and a unit of no usable request."""
    rng = random.Random(seed)
    k = len(FEATURES)
    out: dict[Unit, Sums] = {}
    models = [("anthropic", "anthropic/a"), ("anthropic", "anthropic/b"), ("openai", "openai/c"),
              ("zai", "zai/d"), ("openai", "anthropic/b")]
    for s in range(rng.randint(2, 9)):
        for prov, mk in rng.sample(models, rng.randint(1, 3)):
            rules = f"{mk} · rules {rng.choice('01')}"
            n = rng.choice([0, 1, 3, 12, 40])
            x = np.array([[1.0, *[rng.randint(0, 50) * rng.random() for _ in range(k - 1)]] for _ in range(n)]
                         ).reshape(n, k)
            x[:, 7] = 0.0  # no images: a feature without data keeps the parent's value
            y = np.array([max(0.0, float(x[i] @ np.linspace(0.1, 2.0, k)) * rng.uniform(0.8, 1.2)) for i in range(n)])
            w = np.where(y > 0, 1.0 / np.maximum(y, 1.0) ** 2, 0.0)
            out[(f"s{s}", prov, mk, rules)] = sums(x, y, w, f"s{s}")
    return out


@pytest.mark.parametrize("seed", range(16))
def test_held_out_is_fit_tree_without_the_session(seed: int) -> None:
    unit = _units(seed)
    if len({u[0] for u in unit}) < 2:
        pytest.skip("one session")
    x = np.vstack([np.ones((1, len(FEATURES)))])
    for cand in candidates(x) + [primary(candidates(x))]:
        got = held_out_coefficients(unit, cand.mask, cand.prior)
        assert list(got) == list(unit)
        for u, coef in got.items():
            tree = cand.fit({v: s for v, s in unit.items() if v[0] != u[0]})
            assert coef == tree.coef_for(u[1], u[2], u[3]), u  # tuples of floats: bit for bit


def test_a_session_alone_in_its_levels_is_predicted_by_the_corpus() -> None:
    k = len(FEATURES)
    unit = {("a", "p", "p/m", "p/m · rules 0"): Sums(np.eye(k), np.ones(k), 20, frozenset({"a"})),
            ("b", "q", "q/n", "q/n · rules 0"): Sums(np.eye(k) * 2, np.ones(k), 20, frozenset({"b"}))}
    tree = LeaveOneOut(unit).without("a")
    corpus = fit_tree({u: s for u, s in unit.items() if u[0] == "b"}).corpus.coef
    assert tree.coef_for("p", "p/m", "p/m · rules 0") == corpus
    assert tree.coef_for("q", "q/n", "q/n · rules 0") != corpus  # b's own levels exist (fitted)
    with pytest.raises(ValueError):
        LeaveOneOut({u: s for u, s in unit.items() if u[0] == "a"}).without("a").coef_for("p", "p/m", "x")
