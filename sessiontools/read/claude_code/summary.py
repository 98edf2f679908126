"""What `inspect` reads of a Claude Code session, computed by the C scanner in one pass over the
bytes of the session file and its subagent files (`read._native.claude_summary`,
sessiontools/read/_claude.c; issue 28): the paths' messages (line, uuid, role), their compactions,
the skipped replies, the billed responses, the settings inspect reports and the two notices a
clean file can have, without a Python object per line.

The C says None at anything it is not sure of (every other diagnostic, a rule it leaves to Python:
_claude.c's header lists them); the session is then read the ordinary way from the same bytes.
`transcript.claude_summary` makes the neutral transcript of a `ClaudeSummary`; what it lacks
against the ordinary lean transcript is listed there. tests/read/test_claude_summary.py holds
`inspect`'s JSON equal both ways."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sessiontools.read.agents import Agent
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.values import MAX_REQUEST_TOKENS, MAX_TOTAL_TOKENS

try:
    from sessiontools.read._native import claude_summary
except ImportError:  # not built on this machine (or an older build): the ordinary way
    claude_summary = None


@dataclass(slots=True)
class FileSummary:
    """One file of a session as the C summed it up: `paths`, `notices`, `facts` and `largest` as
    `claude_summary` returns them (see _claude.c)."""

    path: str
    paths: list[tuple[Any, ...]]
    notices: list[tuple[int, int, str]]
    facts: tuple[Any, ...]
    largest: int

    def diagnostics(self) -> list[Diagnostic]:
        """Its notices as the ordinary way words them (an unknown line type; a parent not in the file)."""
        return [Diagnostic(self.path, n, f"unknown line type {text!r} (kept, not interpreted)" if kind == 0 else
                           f"parentUuid {text} is not in the file: the line starts a chain", DiagnosticKind.NOTICE)
                for n, kind, text in self.notices]


@dataclass(slots=True)
class ClaudeSummary:
    """A Claude Code session (its file first, then its subagent files) as inspect reads it.
    `diagnostics`: the session file's reader diagnostics (its unknown line types), as a `ClaudeFile`'s."""

    agent: ClassVar[Agent] = Agent.CLAUDE_CODE

    path: str
    files: list[FileSummary]
    billed: list[tuple[Any, ...]]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def summarize(datas: list[bytes], paths: list[str], max_line_bytes: int | None) -> ClaudeSummary | None:
    """The summary of a session's files (`datas`, named `paths`, the session file first), or None
    when the C is not built or not sure of something in them."""
    if claude_summary is None:
        return None
    got = claude_summary(datas, max_line_bytes or 0, MAX_REQUEST_TOKENS, MAX_TOTAL_TOKENS)
    if got is None:
        return None
    per_file, billed = got
    files = [FileSummary(p, *f) for p, f in zip(paths, per_file, strict=True)]
    first = files[0]
    reader = [d for d, (_, kind, _) in zip(first.diagnostics(), first.notices, strict=True) if kind == 0]
    return ClaudeSummary(first.path, files, billed, reader)
