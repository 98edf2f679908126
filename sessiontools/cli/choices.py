"""The few values the commands' options show in `--help` (defaults, choices, gate metrics), kept here
so that declaring a command imports no analysis code: `sessiontools --help` and `CMD --help` stay fast.

Each mirrors a definition in a lower layer, which stays the source of truth;
tests/cli/test_startup.py checks that every copy still equals its original.
"""

from __future__ import annotations

from enum import Enum

#: `policies.pi.settings.DEFAULT_RESERVE_TOKENS`, `DEFAULT_KEEP_RECENT_TOKENS`.
DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000

#: `replay.registry.POLICIES`, in its order: (enum member name, --policy value).
POLICY_NAMES = (
    ("PI_0", "pi-0"),
    ("PI_1", "pi-1"),
    ("CODEX", "codex"),
    ("CLAUDE_CODE", "claude-code"),
    ("CLAUDE_CODE_REACTIVE", "claude-code-reactive"),
)

#: The policies replay implements (`replay.registry.POLICIES`).
Policy = Enum("Policy", dict(POLICY_NAMES), type=str)  # type: ignore[misc]

#: The keys of `analysis.drift.METRICS` (the gates of `diff-summaries --fail-if`), in its order.
DRIFT_METRICS = (
    "summaries", "pairs", "dropped_items", "added_items", "changed_items", "moved_items", "dropped_literals",
    "missing_sections", "resurrections", "file_list_violations", "growth_tokens", "min_goal_similarity",
    "min_literal_retention", "retention.files", "retention.identifiers", "retention.errors",
    "retention.constraints", "lost_facts",
)

#: `analysis.estimate.DEFAULT_THRESHOLD_GRID`.
DEFAULT_THRESHOLD_GRID = "0.5,0.6,0.7,0.8,0.9"


class CalibrationX(str, Enum):
    """`tokens.calibrated.Tokenizer`: the estimators a calibration may be based on."""

    O200K = "o200k"
    CL100K = "cl100k"
    CHARS4 = "chars4"
