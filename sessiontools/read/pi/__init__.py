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
    load_session,
    read_bytes,
    read_stream,
    session_from_records,
)
from sessiontools.read.pi.migrate import v1_id

__all__ = [
    "KNOWN_ENTRY_TYPES",
    "KNOWN_ROLES",
    "Diagnostic",
    "Entry",
    "Header",
    "Session",
    "detect_pi_version",
    "load_session",
    "read_bytes",
    "read_stream",
    "session_from_records",
    "v1_id",
]
