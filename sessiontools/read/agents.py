"""Which coding agent wrote a file: the one enum every layer names agents by."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class Agent(StrEnum):
    """A coding agent whose session files sessiontools reads."""

    PI = "pi"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"


#: Each agent's name as people read it (tables, messages, help).
AGENT_LABELS: dict[Agent, str] = {Agent.PI: "Pi", Agent.CLAUDE_CODE: "Claude Code", Agent.CODEX: "Codex"}


def read_as(doc: Mapping[str, Any]) -> str | None:
    """The reader's rule a session was read with, as people read it ("Pi 1.x"), for a format whose
    versions read differently (Pi's 0.x and 1.x: the `pi_version` its reader decided, an inspect
    record's key); None for the others (their format version says it). The one home of the "read as"
    label of `inspect` and the folder report."""
    v = doc.get("pi_version")
    return f"{AGENT_LABELS[Agent.PI]} {v}.x" if v is not None else None
