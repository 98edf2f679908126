"""The calibrated estimator: a hierarchical fit corpus -> provider -> model -> rules -> session with
shrinkage ("rules": the model under one version of the agent's rules, e.g. Pi 0.x or 1.x, which send
different context for the same model).

Each level fits A ~ coef . features (`tokens.features.FEATURES`) by weighted least squares
(weights 1/A^2, so that the fit minimises relative error, as MAPE measures it), non-negative,
shrunk toward the level above (ridge toward the parent's coefficients, as strong as `PSEUDO`
requests of data), the corpus toward a physical prior; coefficients above a physical bound are
clipped. A level with fewer than `MIN_REQUESTS` requests is not fitted: it says "too few
requests" and uses the level above. Every fit goes through `tokens.fit.least_squares`, on the
level's normal equations (sums of per-unit Gram matrices, so that leaving a session out is a
subtraction).

Out of sample: leave-one-session-out (each session predicted by the tree fitted on the others, at
its most specific fitted level) when there are several sessions, else a time split (the later half of the requests
predicted by a fit on the earlier half). A figure from fewer than `MIN_OOS` predictions is not
reported ("too few").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sessiontools.tokens.features import FEATURES, PRIOR, TOKENIZER_FEATURES, UPPER

MIN_REQUESTS = 10
MIN_OOS = 10
PSEUDO = 20.0  # pseudo-requests of shrinkage toward the parent level
ROOT_PSEUDO = 2.0  # toward the physical prior


class Status(StrEnum):
    FIT = "fit"
    TOO_FEW = "too few requests"
    ONE_SESSION = "too few sessions"


@dataclass(slots=True)
class Sums:
    """Normal-equation sums of some rows: G = X' W X, h = X' W y, n rows."""

    g: Any
    h: Any
    n: int = 0
    sessions: frozenset[str] = frozenset()

    def __add__(self, o: Sums) -> Sums:
        return Sums(self.g + o.g, self.h + o.h, self.n + o.n, self.sessions | o.sessions)


@dataclass(slots=True)
class LevelFit:
    coef: tuple[float, ...]
    n: int
    status: Status
    clipped: tuple[str, ...] = ()
    sessions: int = 0  # sessions behind the coefficients (a level not fitted: its fitted ancestor's)
    candidate: str = ""  # the candidate model (`candidates`) the coefficients come from


def design(frame: Any) -> tuple[Any, Any, Any]:
    """(X in FEATURES order, y = A, weights 1/A^2) of a request frame."""
    import numpy as np

    def tokens(t: str) -> Any:
        col = next((c for c in (f"f_{t}", f"est_{t}") if c in frame.columns), None)  # f_model: `calibration_feature`
        return frame[col].fill_null(0) if col else np.zeros(len(frame))

    cols = [np.ones(len(frame)), frame["messages"], frame["f_cjk"], frame["f_prose"], frame["f_code"],
            frame["f_digits"], frame["f_space"], frame["images"], *[tokens(t) for t in TOKENIZER_FEATURES]]
    x = np.column_stack([np.asarray(c, dtype=np.float64) for c in cols]) if len(frame) else np.zeros((0, len(FEATURES)))
    y = np.asarray(frame["actual"], dtype=np.float64)
    w = np.where(y > 0, 1.0 / np.maximum(y, 1.0) ** 2, 0.0)
    return x, y, w


def calibration_feature(frame: Any) -> Any:
    """The frame with the calibrated model's `model` feature (`f_model`, `t_f_model` of the trailing
    part): the `model` estimator's counts, except on rows whose tokenizer is not a calibration
    feature (`tokens.registry.NOT_CALIBRATION_FEATURE`), which take o200k's (when counted)."""
    import polars as pl

    from sessiontools.tokens.registry import NOT_CALIBRATION_FEATURE

    if not {"est_model", "est_o200k", "model_tokenizer"} <= set(frame.columns):
        return frame
    swap = pl.col("model_tokenizer").is_in(sorted(NOT_CALIBRATION_FEATURE)).fill_null(False)
    return frame.with_columns(pl.when(swap).then(pl.col("est_o200k")).otherwise(pl.col("est_model")).alias("f_model"),
                              pl.when(swap).then(pl.col("t_o200k")).otherwise(pl.col("t_model")).alias("t_f_model"))


def sums(x: Any, y: Any, w: Any, session: str = "") -> Sums:
    xw = x * w[:, None]
    return Sums(xw.T @ x, xw.T @ y, int((w > 0).sum()), frozenset({session}))


def empty_sums() -> Sums:
    import numpy as np

    k = len(FEATURES)
    return Sums(np.zeros((k, k)), np.zeros(k), 0)


@functools.cache
def _mask_index(mask: tuple[bool, ...] | None) -> tuple[Any, Any, Any]:
    """(the mask as booleans, its `np.ix_` for the Gram matrix, the features' upper bounds); read only."""
    import numpy as np

    on = np.ones(len(FEATURES), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    for a in (on, upper := np.asarray(UPPER, dtype=np.float64)):
        a.setflags(write=False)
    return on, np.ix_(on, on), upper


def solve(s: Sums, prior: tuple[float, ...], pseudo: float, mask: tuple[bool, ...] | None = None) -> LevelFit:
    """Non-negative ridge fit toward `prior` from normal-equation sums, through `least_squares`;
    features outside `mask` (a candidate model's features, `candidates`) are 0."""
    import numpy as np

    from sessiontools.tokens.fit import least_squares

    on, ix, upper = _mask_index(mask)
    g0, h0 = s.g[ix], s.h[on]
    k = len(ix[1][0])
    scale = np.sqrt(np.maximum(np.diag(g0) / max(s.n, 1), 1e-18))  # columns in comparable units
    g = g0 / np.outer(scale, scale)
    h = h0 / scale
    e, v = np.linalg.eigh((g + g.T) / 2)
    keep = e > 1e-10 * max(float(e.max(initial=0.0)), 1e-300)
    r = np.sqrt(e[keep])[:, None] * v[:, keep].T  # R'R = G on the kept eigen-directions
    z = (v[:, keep].T @ h) / np.sqrt(e[keep])
    prior_all = np.asarray(prior, dtype=np.float64)
    p = prior_all[on] * scale
    # the unconstrained ridge optimum is the non-negative one when it has no negative coefficient
    # (the problem is strictly convex): one solve instead of the active-set iterations
    fit = least_squares(r, z, ridge=[pseudo] * k, prior=p.tolist(), nonneg="if-negative")
    coef = np.zeros(len(FEATURES))
    coef[on] = np.asarray(fit.coef) / scale
    absent = on & (np.diag(s.g) <= 0)  # no data on a feature (no CJK text, no images): keep the parent's value
    coef[absent] = prior_all[absent]
    over = coef > upper
    clipped = tuple(FEATURES[j] for j in np.flatnonzero(over).tolist()) if over.any() else ()
    coef = np.minimum(coef, upper)
    return LevelFit(tuple(coef.tolist()), s.n, Status.FIT, clipped, len(s.sessions))


def _level(s: Sums, parent: LevelFit, pseudo: float = PSEUDO, mask: tuple[bool, ...] | None = None) -> LevelFit:
    """A level's fit, or its parent's coefficients when it has too few requests, or when its data
    come from one session while the parent's come from several (a one-session level would carry
    that session's quirks to every other session of the level)."""
    if s.n < MIN_REQUESTS:
        return LevelFit(parent.coef, s.n, Status.TOO_FEW, sessions=parent.sessions)
    if len(s.sessions) < 2 and parent.sessions >= 2:
        return LevelFit(parent.coef, s.n, Status.ONE_SESSION, sessions=parent.sessions)
    return solve(s, parent.coef, pseudo, mask)


#: A unit of data: (session, provider, model key, rules) where rules is the model key and the
#: agent's rule version (Pi 0.x and 1.x send different context for the same model).
Unit = tuple[str, str, str, str]


@dataclass(slots=True)
class Tree:
    """Fitted levels: corpus, provider, model, rules (model under one agent rule version)."""

    corpus: LevelFit
    provider: dict[str, LevelFit] = field(default_factory=dict)
    model: dict[str, LevelFit] = field(default_factory=dict)
    rules: dict[str, LevelFit] = field(default_factory=dict)

    def coef_for(self, provider: str, model_key: str, rules: str) -> tuple[float, ...]:
        """The most specific fitted level's coefficients (rules, else model, provider, corpus)."""
        for level, key in ((self.rules, rules), (self.model, model_key), (self.provider, provider)):
            if key in level:
                return level[key].coef
        return self.corpus.coef


def fit_tree(unit_sums: dict[Unit, Sums], mask: tuple[bool, ...] | None = None,
             prior: tuple[float, ...] = PRIOR) -> Tree:
    """The tree over units (see `Unit`) of one candidate model (its features `mask`, its `prior`)."""
    root_prior = LevelFit(prior, 0, Status.TOO_FEW, sessions=0)

    def level(s: Sums, parent: LevelFit, pseudo: float = PSEUDO) -> LevelFit:
        return _level(s, parent, pseudo, mask)

    total = empty_sums()
    by_provider: dict[str, Sums] = {}
    by_model: dict[str, tuple[str, Sums]] = {}
    by_rules: dict[str, tuple[str, Sums]] = {}
    for (_, prov, mk, rules), s in unit_sums.items():
        total = total + s
        by_provider[prov] = by_provider.get(prov, empty_sums()) + s
        by_model[mk] = (prov, by_model.get(mk, (prov, empty_sums()))[1] + s)
        by_rules[rules] = (mk, by_rules.get(rules, (mk, empty_sums()))[1] + s)
    tree = Tree(level(total, root_prior, ROOT_PSEUDO))
    for prov, s in by_provider.items():
        tree.provider[prov] = level(s, tree.corpus)
    for mk, (prov, s) in by_model.items():
        tree.model[mk] = level(s, tree.provider[prov])
    for rules, (mk, s) in by_rules.items():
        tree.rules[rules] = level(s, tree.model[mk])
    return tree
