"""Readers: the only layer that opens session files. One sub-package per agent's format.

`Diagnostic` is shared by every reader. The first reader's names (`load_session`, `Session`,
`read_bytes`...: most callers and users' scripts know those sessions first) are re-exported here too,
imported from their reader on first use: `names.PUBLIC_API` lists them, so that importing another
agent's reader (`sessiontools.read.codex`) does not load that one, and this module names no agent.
"""

from __future__ import annotations

from typing import Any

from sessiontools.read.diagnostics import Diagnostic as Diagnostic
from sessiontools.read.diagnostics import DiagnosticKind as DiagnosticKind
from sessiontools.read.files import expand_paths as expand_paths
from sessiontools.read.parse import parse_line as parse_line

_NEUTRAL = ["Diagnostic", "DiagnosticKind", "expand_paths", "parse_line"]


def _agent_names() -> dict[str, str]:
    from sessiontools.names import PUBLIC_API

    return PUBLIC_API[__name__]


def __getattr__(name: str) -> Any:
    if name == "__all__":  # (`from sessiontools.read import *`: the neutral names and the re-exported ones)
        return sorted([*_NEUTRAL, *_agent_names()])
    from sessiontools.names import public_attr

    return public_attr(__name__, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_agent_names()})
