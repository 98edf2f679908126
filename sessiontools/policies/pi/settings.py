"""Compaction settings and the threshold test (`shouldCompact`)."""

from __future__ import annotations

from dataclasses import dataclass

from sessiontools.names import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """Pi's `CompactionSettings` (`settings.json` → `compaction`)."""

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS


def threshold(context_window: int, settings: CompactionSettings) -> int:
    """T = contextWindow - reserveTokens."""
    return context_window - settings.reserve_tokens


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Pi's `shouldCompact`: enabled and context tokens strictly above the threshold."""
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens
