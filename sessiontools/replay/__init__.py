"""Replay compaction policies offline over recorded sessions under other settings.

- `replay.session`: one Pi session over a grid (exact port of Pi's compaction), JSON records;
- `replay.walk`: any `policies.base.Policy` over any agent's `TranscriptPath` (truth: `replay.neutral`),
  into the same `ReplayRun` and record (`replay.session.replay_source` chooses, `Policy.exact_port_for`);
- `replay.replayed`: `SessionReplay`, one session path replayed by either walk (prices, recorded usage, cost);
- `replay.simulate` (the Pi walk, over a Pi path's `transcript.pi.workload`), `replay.pi_compact`, `replay.truth`,
  `replay.cost` (prices and the cache model), `replay.metrics`, `replay.frames` (DataFrames),
  `replay.records` (typed records), `replay.catalog` (windows and prices).
"""

from __future__ import annotations

import importlib
from typing import Any

from sessiontools.replay.metrics import METRICS, run_metrics
from sessiontools.replay.records import ReplayRun, ReplaySettings
from sessiontools.replay.replayed import SessionReplay
from sessiontools.replay.session import replay_records, replay_session, replay_source, run_record
from sessiontools.replay.simulate import POLICIES, simulate
from sessiontools.replay.truth import TruthModel, fit_truth

#: (`Workload` and `build_workload` are imported on first use: `names.PUBLIC_API`)
__all__ = [
    "METRICS",
    "POLICIES",
    "ReplayRun",
    "ReplaySettings",
    "SessionReplay",
    "TruthModel",
    "Workload",
    "build_workload",
    "fit_truth",
    "replay_records",
    "replay_session",
    "replay_source",
    "run_record",
    "run_metrics",
    "simulate",
]


def __getattr__(name: str) -> Any:
    """The names of an agent's home this package re-exports (`names.PUBLIC_API`), on first use."""
    from sessiontools.names import PUBLIC_API

    module = PUBLIC_API[__name__].get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
