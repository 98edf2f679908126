"""Which coding agent wrote a file: the one enum every layer names agents by."""

from __future__ import annotations

from enum import StrEnum


class Agent(StrEnum):
    """A coding agent whose session files sessiontools reads."""

    PI = "pi"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
