"""JSONL -> typed entries. The only layer that opens session files."""

from .entries import KNOWN_ENTRY_TYPES, KNOWN_ROLES, Diagnostic, Entry, Header, Session
from .load import expand_paths, load_session, read_bytes, read_stream, session_from_records
from .migrate import detect_pi_version, v1_id
from .parse import parse_line

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
