"""What the commands' options show in `--help` (defaults, choices, gate metrics), taken from
`sessiontools.names`, the light home of these names: declaring a command imports no analysis code,
so `sessiontools --help` and `CMD --help` stay fast."""

from __future__ import annotations

from enum import Enum

from sessiontools.names import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_THRESHOLD_GRID,
    POLICY_ORDER,
    Tokenizer,
)
from sessiontools.names import DRIFT_METRICS as _DRIFT_METRICS

__all__ = ["DEFAULT_KEEP_RECENT_TOKENS", "DEFAULT_RESERVE_TOKENS", "DEFAULT_THRESHOLD_GRID", "DRIFT_METRICS",
           "CalibrationX", "Policy"]

#: `--policy`: the policies replay implements, in the registry's order.
Policy = Enum("Policy", {p.name: p.value for p in POLICY_ORDER}, type=str)  # type: ignore[misc]
#: The names `diff-summaries --fail-if` accepts.
DRIFT_METRICS = tuple(_DRIFT_METRICS)
#: `--calibration-x`: the estimators a calibration may be based on.
CalibrationX = Tokenizer
