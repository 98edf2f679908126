"""The session level of the calibrated estimator, learnt from the session's own earlier requests
(`calibrated_session`): a time split inside each session.

The hidden part of a prompt (system prompt, tool definitions, injected context) is never recorded
and differs from session to session, so a fit on other sessions (`calibrated`, judged
leave-one-session-out) cannot know it; neither can anything else the files record (measured in
docs/estimate-error.md). A replay that diverges from the recording, or a what-if summary, still has
the recorded requests before the divergence: from them the session's own level of the tree is
fitted, the same weighted least squares as every level (`hierarchy.solve`: weights 1/A^2,
non-negative, the candidate's features), over the session's *earlier* requests only, shrunk toward
its parent's coefficients (the out-of-sample tree: rules -> model -> provider -> corpus, or a
loaded calibration) with the weight of `PSEUDO` requests, the older requests weighing less
(`FORGET` per later request: the hidden part drifts within a session). The first request of a session is its
parent's prediction; the session's own overhead and tokenizer scale take over as its requests
accumulate. Nothing of request i itself or of a later request enters its prediction: the sums are
updated only after it is predicted, in time order.

A unit is a session under one model and one version of the agent's rules (a session that switches
models has one unit per model).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

#: Pseudo-requests of shrinkage of the session level toward its parent (the tree's levels use
#: `hierarchy.PSEUDO` = 20: a level there stands for many sessions, a session only for itself).
PSEUDO = 2.0
#: Forgetting factor of the session level: each earlier request's weight is multiplied by this
#: per later request of the unit (recursive least squares with forgetting; 1 = every earlier request
#: alike). A session's hidden part drifts while it runs (injected memory and workspace files,
#: the harness's own pruning or truncation of tool results, a harness update in a session of
#: several days), so its recent requests say more about the next one than its first ones. The
#: shrinkage toward the parent still fades with the number of earlier requests (`Sums.n`).
#: Measured in docs/estimate-error.md ("The session level: a time split").
FORGET = 0.9


def time_order(timestamps: Sequence[int | None]) -> Any:
    """Row indices in time order (stable: rows with equal or missing times keep their order; a
    missing time takes the one of the row before it)."""
    import numpy as np

    ts: list[int] = []
    last = 0
    for t in timestamps:
        last = last if t is None else int(t)
        ts.append(last)
    return np.argsort(np.asarray(ts, dtype=np.int64), kind="stable")


def session_coefficients(x: Any, y: Any, parent: Any, units: Sequence[Hashable], order: Sequence[int] | None = None,
                         mask: tuple[bool, ...] | None = None, pseudo: float = PSEUDO, forget: float = FORGET) -> Any:
    """Per row, the coefficients of its unit's session level fitted on the unit's rows before it
    in `order` (default: row order), each weighted by `forget` ** (the unit's rows after it), shrunk
    toward the row's `parent` coefficients; the parent's where the unit has no earlier row with
    A > 0; NaN where the parent is NaN (such a row is not learnt from either)."""
    import numpy as np

    from sessiontools.analysis.estimate.hierarchy import Sums, solve

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    parent = np.asarray(parent, dtype=np.float64)
    out = np.full_like(parent, np.nan)
    finite = np.isfinite(parent).all(axis=1).tolist() if parent.ndim == 2 else []
    priors = parent.tolist()
    # each row's own sums (`hierarchy.sums` of the one row, weight 1/A^2), all at once: the same
    # products, x_a * w * x_b and x_a * w * y
    with np.errstate(all="ignore"):  # rows with A = 0 are not learnt from
        w = 1.0 / y ** 2
        xw = x * w[:, None]
        g1 = xw[:, :, None] * x[:, None, :]
        h1 = xw * y[:, None]
    state: dict[Hashable, Sums] = {}
    none: frozenset[str] = frozenset()
    for i in (range(len(y)) if order is None else order):
        if not finite[i]:
            continue
        u = units[i]
        s = state.get(u)
        out[i] = parent[i] if s is None else solve(s, tuple(priors[i]), pseudo, mask).coef
        if y[i] > 0:
            state[u] = Sums(g1[i], h1[i], 1, none) if s is None else Sums(s.g * forget + g1[i], s.h * forget + h1[i],
                                                                         s.n + 1, none)
    return out


def session_predictions(x: Any, y: Any, parent: Any, units: Sequence[Hashable], order: Sequence[int] | None = None,
                        mask: tuple[bool, ...] | None = None, pseudo: float = PSEUDO, forget: float = FORGET) -> Any:
    """max(0, coef . x) with the coefficients of `session_coefficients` (NaN where those are)."""
    import numpy as np

    coef = session_coefficients(x, y, parent, units, order, mask, pseudo, forget)
    return np.maximum((coef * np.asarray(x, dtype=np.float64)).sum(axis=1), 0.0)
