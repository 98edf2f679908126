"""sessiontools: analyse and replay the session files of AI coding agents (Pi).

The library behind the `sessiontools` command; the main entry points:

    from sessiontools import load_session, SessionTree, build_context, prepare_compaction
    s = load_session("session.jsonl")
    path = SessionTree(s).path()                      # root to the leaf Pi resumes at
    ctx = build_context(path.entries, s.pi_version)   # the messages Pi would send
    prep = prepare_compaction(path.entries, CompactionSettings(), s.pi_version)
"""

__version__ = "0.1.0"

from sessiontools.errors import InputError, SessionToolsError, UsageError  # noqa: E402
from sessiontools.policies.pi import CompactionSettings, NoCompaction, Preparation, prepare_compaction  # noqa: E402
from sessiontools.read import Entry, Session, load_session, read_bytes  # noqa: E402
from sessiontools.transcript.pi import SessionTree, build_context  # noqa: E402

__all__ = [
    "CompactionSettings",
    "Entry",
    "InputError",
    "NoCompaction",
    "Preparation",
    "Session",
    "SessionToolsError",
    "SessionTree",
    "UsageError",
    "__version__",
    "build_context",
    "load_session",
    "prepare_compaction",
    "read_bytes",
]
