"""Replay compaction policies offline over recorded sessions under other settings: one walk for every
agent and policy (issue 24).

- `replay.session`: one session file of any agent over a grid (`replay_source`), its run records
  (`replay_records`: `replay.run_document.RunRecord`, typed until the output boundary, `to_dict` its JSON);
- `replay.transcripts`: a transcript's paths over a policy's grid; `replay.walk` (with `walk_bulk`,
  `walk_compact`, `path_grid`): any `policies.base.Policy` over any agent's `TranscriptPath` (truth:
  `replay.neutral`, `replay.truth_model`), into one `ReplayRun` and record;
- `replay.replayed`: `SessionReplay`, one session path replayed (prices, recorded usage, cost);
- `replay.cost` (prices and the cache model), `replay.metrics`, `replay.frames` (DataFrames),
  `replay.records` (typed records), `replay.catalog` (windows and prices).
"""

from __future__ import annotations

from typing import Any

from sessiontools.replay.metrics import METRICS, run_metrics
from sessiontools.replay.records import ReplayRun, ReplaySettings
from sessiontools.replay.replayed import SessionReplay
from sessiontools.replay.session import replay_records, replay_source, run_record

#: (`Workload` and `build_workload` are imported on first use: `names.PUBLIC_API`)
__all__ = [
    "METRICS",
    "ReplayRun",
    "ReplaySettings",
    "SessionReplay",
    "Workload",
    "build_workload",
    "replay_records",
    "replay_source",
    "run_metrics",
    "run_record",
]


def __getattr__(name: str) -> Any:
    """The names of an agent's home this package re-exports (`names.PUBLIC_API`), on first use."""
    from sessiontools.names import public_attr

    return public_attr(__name__, globals(), name)
