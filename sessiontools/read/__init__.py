"""Readers: the only layer that opens session files. One sub-package per agent's format.

`Diagnostic` is shared by every reader. The Pi reader's names are re-exported here because most
callers (and users' scripts) know Pi sessions first. They are loaded on first use (PEP 562): a run
over Codex or Claude Code files imports `sessiontools.read.parallel`, hence this package, and reads
no Pi session (issue 28: the Pi reader's modules are a part of every command's start-up).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
    from sessiontools.read.files import expand_paths
    from sessiontools.read.parse import parse_line
    from sessiontools.read.pi import (
        KNOWN_ENTRY_TYPES,
        KNOWN_ROLES,
        Entry,
        Header,
        Session,
        detect_pi_version,
        load_session,
        read_bytes,
        read_stream,
        session_from_records,
        v1_id,
    )

__all__ = [
    "KNOWN_ENTRY_TYPES",
    "KNOWN_ROLES",
    "Diagnostic",
    "DiagnosticKind",
    "Entry",
    "Header",
    "Session",
    "detect_pi_version",
    "expand_paths",
    "load_session",
    "parse_line",
    "read_bytes",
    "read_stream",
    "session_from_records",
    "v1_id",
]
#: Where each name of `__all__` lives.
_HOMES = {"Diagnostic": "diagnostics", "DiagnosticKind": "diagnostics", "expand_paths": "files",
          "parse_line": "parse", **{n: "pi" for n in __all__ if n not in ("Diagnostic", "DiagnosticKind",
                                                                           "expand_paths", "parse_line")}}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
