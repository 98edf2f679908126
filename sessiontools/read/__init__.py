"""Readers: the only layer that opens session files. One sub-package per agent's format.

`Diagnostic` is shared by every reader. The Pi reader's names are re-exported here because most
callers (and users' scripts) know Pi sessions first.
"""

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
