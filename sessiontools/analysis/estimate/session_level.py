"""The session level of the calibrated estimator, learnt from the session's own earlier requests
(`calibrated_session`): a time split inside each session.

The hidden part of a prompt (system prompt, tool definitions, injected context) is never recorded
and differs from session to session, so a fit on other sessions (`calibrated`, judged
leave-one-session-out) cannot know it. A replay that diverges from the recording, or a what-if
summary, still has the recorded requests before the divergence: from them the session's own
correction of the calibrated prediction P can be learnt,

    A ~ (1 + b) * P + d

(d: the session's overhead the tree does not know; b: its scale, e.g. a content mix the model's
tokenizer prices differently), by weighted least squares over the session's *earlier* requests
(weights 1/A^2: relative error, as MAPE measures it), each coefficient shrunk toward 0, i.e.
toward the tree's prediction (session -> rules -> model -> provider -> corpus), with the weight of
`PSEUDO_OFFSET` and `PSEUDO_SCALE` requests: the first request of a session is the tree's
prediction, the correction grows with the requests seen. Nothing about request i itself or a later
request enters its prediction: the sums are updated only after it is predicted.

A unit is a session under one model and one version of the agent's rules (a session that switches
models has one unit per model).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

#: Pseudo-requests of shrinkage of the session's overhead d (measured as d / mean P) toward 0.
PSEUDO_OFFSET = 1.0
#: Pseudo-requests of shrinkage of the session's scale b toward 0.
PSEUDO_SCALE = 1.0


def correction(g: Any, h: Any, n: int, p_sum: float,
               pseudo_offset: float = PSEUDO_OFFSET, pseudo_scale: float = PSEUDO_SCALE) -> tuple[float, float]:
    """(d, b) of the shrunk fit from the sums of earlier requests: g = sum w [1, P]'[1, P],
    h = sum w [1, P]' (A - P), w = 1/A^2; p_sum = sum of P (the offset's penalty is relative to
    the mean P, so that both pseudo-counts are in requests of relative error)."""
    import numpy as np

    if n <= 0:
        return 0.0, 0.0
    m = max(p_sum / n, 1.0)
    pen = np.diag([pseudo_offset / m ** 2, pseudo_scale])
    d, b = np.linalg.solve(g + pen, h)
    return float(d), float(b)


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


def session_predictions(parent: Any, actual: Any, units: Sequence[Hashable], order: Sequence[int] | None = None,
                        pseudo_offset: float = PSEUDO_OFFSET, pseudo_scale: float = PSEUDO_SCALE) -> Any:
    """Per row, the parent prediction corrected by the fit over the rows of the same unit that come
    before it in `order` (default: row order; NaN where the parent is NaN). A row whose parent is
    NaN or whose A is not positive is predicted but not learnt from."""
    import numpy as np

    parent = np.asarray(parent, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    out = np.full(len(parent), np.nan)
    state: dict[Hashable, list[Any]] = {}  # unit -> [g, h, n, p_sum]
    for i in (range(len(parent)) if order is None else order):
        u = units[i]
        p = parent[i]
        if not np.isfinite(p):
            continue
        s = state.get(u)
        if s is None:
            out[i] = max(p, 0.0)
        else:
            d, b = correction(s[0], s[1], s[2], s[3], pseudo_offset, pseudo_scale)
            out[i] = max((1.0 + b) * p + d, 0.0)
        a = actual[i]
        if a > 0:
            if s is None:
                s = state[u] = [np.zeros((2, 2)), np.zeros(2), 0, 0.0]
            v = np.array([1.0, p])
            w = 1.0 / a ** 2
            s[0] += w * np.outer(v, v)
            s[1] += w * v * (a - p)
            s[2] += 1
            s[3] += p
    return out
