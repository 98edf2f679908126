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

# (the console script imports this package before its Ctrl-C handler is in place: `typing`, which
# the CLI loads later anyway, would widen that window by a few milliseconds)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

#: The neutral names: name -> its module. The names that live in an agent's homes (Pi's reader, tree,
#: context and compaction, in the examples above) are listed in `names.PUBLIC_API`, read on first use.
_EXPORTS = {
    "InputError": "sessiontools.errors",
    "SessionToolsError": "sessiontools.errors",
    "UsageError": "sessiontools.errors",
    "Transcript": "sessiontools.transcript.model",
    "load_transcript": "sessiontools.transcript.load",
}


def _all() -> list[str]:
    from sessiontools.names import PUBLIC_API

    return ["__version__", *sorted({*_EXPORTS, *PUBLIC_API[__name__]})]


def __getattr__(name: str) -> Any:
    if name == "__all__":  # (computed: `from sessiontools import *` reads it, `import sessiontools` does not)
        return _all()
    from sessiontools.names import public_attr

    return public_attr(__name__, globals(), name, _EXPORTS)


def __dir__() -> list[str]:
    return sorted({*globals(), *_all()})
