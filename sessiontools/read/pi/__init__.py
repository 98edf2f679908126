"""Pi's JSONL session files -> typed, migrated entries (every format version, v1 to the 1.x additions)."""

from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.pi.entries import (
    KNOWN_ENTRY_TYPES,
    KNOWN_ROLES,
    Entry,
    Header,
    Session,
    detect_pi_version,
)
from sessiontools.read.pi.load import (
    expand_paths,
    load_session,
    read_bytes,
    read_stream,
    session_from_records,
)
from sessiontools.read.pi.migrate import v1_id
from sessiontools.read.pi.parse import parse_line

__all__ = [
    "KNOWN_ENTRY_TYPES",
    "KNOWN_ROLES",
    "Diagnostic",
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
