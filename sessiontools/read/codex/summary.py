"""What `inspect` reads of a Codex rollout, computed by the C scanner in one pass over its bytes
(`read._native.codex_summary`, sessiontools/read/_codex_summary.c; issue 28): the path's messages
(line, id, role), its compactions, the summarisation calls dropped, the billed calls and the
settings inspect reports, without a Python object per line (the design of
`read.claude_code.summary`).

The C says None at anything it is not sure of (any diagnostic, a 2025 or legacy rollout, an
overflow, an encrypted compaction...: _codex_summary.c's header lists them); the rollout is then
read the ordinary way from the same bytes. `transcript.codex_summary` makes its neutral transcript;
tests/read/test_codex_summary.py holds `inspect`'s JSON equal both ways."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sessiontools.read.agents import Agent
from sessiontools.read.values import MAX_REQUEST_TOKENS, MAX_TOTAL_TOKENS

try:
    from sessiontools.read._native import codex_summary
except ImportError:  # not built on this machine (or an older build): the ordinary way
    codex_summary = None


@dataclass(slots=True)
class CodexSummary:
    """A Codex rollout as inspect reads it: the fields are `codex_summary`'s (see _codex_summary.c).
    `diagnostics` is empty: the C takes no file with one."""

    agent: ClassVar[Agent] = Agent.CODEX

    path: str
    meta: tuple[Any, ...] | None
    lines: list[int]
    roles: bytes
    ids: list[str | None]
    compactions: list[list[Any]]
    billed: list[tuple[Any, ...]]
    skipped: int
    window: int | None
    model: str | None
    provider: str | None
    events: list[tuple[int, str | None]]
    schema: str  # `Rollout.schema`: "current" or "2025"

    @property
    def diagnostics(self) -> list[Any]:
        return []


def summarize(data: bytes, path: str, max_line_bytes: int | None) -> CodexSummary | None:
    """The summary of a rollout's bytes, or None when the C is not built or not sure of them."""
    if codex_summary is None:
        return None
    got = codex_summary(data, max_line_bytes or 0, MAX_REQUEST_TOKENS, MAX_TOTAL_TOKENS)
    return None if got is None else CodexSummary(path, *got)
