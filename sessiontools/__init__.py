"""sessiontools: analyse and replay the session files of AI coding agents (Pi, Codex, Claude Code).

The library behind the `sessiontools` command; the main entry points:

    from sessiontools import load_transcript                  # any agent's file, the neutral model
    t = load_transcript("rollout.jsonl")                      # Transcript: paths, requests, compactions

    from sessiontools import load_session, SessionTree, build_context, prepare_compaction
    s = load_session("session.jsonl")                         # a Pi session, exactly as Pi reads it
    path = SessionTree(s).path()                              # root to the leaf Pi resumes at
    ctx = build_context(path.entries, s.pi_version)           # the messages Pi would send
    prep = prepare_compaction(path.entries, CompactionSettings(), s.pi_version)

Names are imported on first use, so that `import sessiontools` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

import importlib

# (the console script imports this package before its Ctrl-C handler is in place: `typing`, which
# the CLI loads later anyway, would widen that window by a few milliseconds)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "InputError": "sessiontools.errors",
    "SessionToolsError": "sessiontools.errors",
    "UsageError": "sessiontools.errors",
    "CompactionSettings": "sessiontools.policies.pi",
    "NoCompaction": "sessiontools.policies.pi",
    "Preparation": "sessiontools.policies.pi",
    "prepare_compaction": "sessiontools.policies.pi",
    "Entry": "sessiontools.read",
    "Session": "sessiontools.read",
    "load_session": "sessiontools.read",
    "read_bytes": "sessiontools.read",
    "SessionTree": "sessiontools.transcript.pi",
    "build_context": "sessiontools.transcript.pi",
    "Transcript": "sessiontools.transcript.model",
    "load_transcript": "sessiontools.transcript.load",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
