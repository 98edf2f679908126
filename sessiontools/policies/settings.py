"""A policy's settings: the grid axes it varies (`Axis`), where it checks its rule (`CheckPoint`),
and one setting of a replay grid (`PolicySettings`). Re-exported by `policies.base`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple


class Axis(NamedTuple):
    """A setting a policy's grid varies: its key in a run's settings, its label in words, its unit."""

    key: str
    label: str
    unit: str = "tokens"  # or "percent"


class CheckPoint(StrEnum):
    """Where an agent tests its compaction rule."""

    RUN_END = "run_end"
    BETWEEN_TURNS = "between_turns"
    BEFORE_SAMPLING = "before_sampling"


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """One setting of a replay grid."""

    context_window: int
    reserve_tokens: int = 0
    keep_recent_tokens: int = 0
    extra: tuple[tuple[str, Any], ...] = ()  # per-agent options, e.g. (("auto_compact_limit", 200000),)

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.extra).get(name, default)
