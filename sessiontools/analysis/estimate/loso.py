"""The leave-one-session-out trees of the calibrated estimator, one held-out session at a time,
without refitting the whole tree.

A session held out is predicted at its own units' most specific fitted level (`Tree.coef_for`),
so only the levels on those units' paths (rules -> model -> provider -> corpus) are needed: a few
solves instead of one per level of the tree (the trees of a corpus of 200 sessions have ~90
levels). Each level's sums are added in the order `hierarchy.fit_tree` adds them (unit order,
from zeros), so every coefficient is the one `fit_tree` gives over the other sessions' units, to
the bit (tests/analysis/test_estimate_loso.py checks it against `fit_tree`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.analysis.estimate.hierarchy import (
    PSEUDO,
    ROOT_PSEUDO,
    LevelFit,
    Status,
    Sums,
    Unit,
    _level,
)
from sessiontools.tokens.features import PRIOR

_CORPUS = ("corpus", "")


class LeaveOneOut:
    """The units' sums once; `without(session)` the tree fitted on the other sessions' units."""

    def __init__(self, unit_sums: Mapping[Unit, Sums], mask: tuple[bool, ...] | None = None,
                 prior: tuple[float, ...] = PRIOR) -> None:
        import numpy as np

        self.units = list(unit_sums)
        sums = list(unit_sums.values())
        k = len(prior)
        self._g = np.stack([s.g for s in sums]) if sums else np.zeros((0, k, k))
        self._h = np.stack([s.h for s in sums]) if sums else np.zeros((0, k))
        self._n = [s.n for s in sums]
        self._sessions = [s.sessions for s in sums]
        self.mask = mask
        self.prior = prior
        self._groups: dict[tuple[str, str], list[int]] = {}
        for i, (_, prov, mk, rules) in enumerate(self.units):
            for g in (_CORPUS, ("provider", prov), ("model", mk), ("rules", rules)):
                self._groups.setdefault(g, []).append(i)

    def without(self, session: str) -> HeldOutTree:
        return HeldOutTree(self, session)

    def sums(self, group: tuple[str, str], session: str) -> tuple[Sums, list[int]] | None:
        """The group's sums over the units of other sessions (None: it has none), and those units."""
        import numpy as np

        idx = [i for i in self._groups.get(group, ()) if self.units[i][0] != session]
        if not idx:
            return None
        # `Sums.__add__` from `empty_sums()`, in unit order: fit_tree's arithmetic (a reduction over
        # the first axis adds whole rows one after the other, from the initial zeros: no pairwise sums)
        g = np.add.reduce(self._g[idx], axis=0, initial=0.0)
        h = np.add.reduce(self._h[idx], axis=0, initial=0.0)
        return Sums(g, h, sum(self._n[i] for i in idx), frozenset().union(*(self._sessions[i] for i in idx))), idx


class HeldOutTree:
    """The levels of `fit_tree(other sessions' units)` that a held-out unit's prediction needs,
    fitted on first use."""

    def __init__(self, loo: LeaveOneOut, session: str) -> None:
        self._loo = loo
        self._session = session
        self._fits: dict[tuple[str, str], LevelFit | None] = {}

    def _fit(self, group: tuple[str, str]) -> LevelFit | None:
        if group in self._fits:
            return self._fits[group]
        loo = self._loo
        got = loo.sums(group, self._session)
        fit = None
        if got is not None:
            s, idx = got
            last = loo.units[idx[-1]]  # fit_tree keeps the last unit's provider (model) as the parent
            if group[0] == "corpus":
                fit = _level(s, LevelFit(loo.prior, 0, Status.TOO_FEW, sessions=0), ROOT_PSEUDO, loo.mask)
            else:
                up = {"provider": _CORPUS, "model": ("provider", last[1]), "rules": ("model", last[2])}[group[0]]
                parent = self._fit(up)
                assert parent is not None  # a unit of the group is a unit of its parent's group
                fit = _level(s, parent, PSEUDO, loo.mask)
        self._fits[group] = fit
        return fit

    def coef_for(self, provider: str, model_key: str, rules: str) -> tuple[float, ...]:
        """`Tree.coef_for` of the tree over the other sessions."""
        for group in (("rules", rules), ("model", model_key), ("provider", provider), _CORPUS):
            fit = self._fit(group)
            if fit is not None:
                return fit.coef
        raise ValueError("no unit outside the held-out session")


def held_out_coefficients(unit_sums: Mapping[Unit, Sums], mask: tuple[bool, ...] | None,
                          prior: tuple[float, ...]) -> dict[Unit, Any]:
    """Per unit, the coefficients of the tree fitted without the unit's session."""
    loo = LeaveOneOut(unit_sums, mask, prior)
    trees: dict[str, HeldOutTree] = {}
    out = {}
    for u in loo.units:
        tree = trees.get(u[0]) or trees.setdefault(u[0], loo.without(u[0]))
        out[u] = tree.coef_for(u[1], u[2], u[3])
    return out
