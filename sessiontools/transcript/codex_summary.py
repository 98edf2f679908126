"""The neutral transcript of a Codex rollout the C summed up for `inspect`
(`read.codex.summary.CodexSummary`, sessiontools/read/_codex_summary.c).

It is the lean transcript (`transcript.codex`, a rollout read with `lean=True`) with less in it: the
same path's messages (index, id, line, role; no units, timestamps or items; kept as the C's columns:
`model.MessageColumns`), compactions (no summary text), skipped summarisation calls, billed calls
(`Transcript.billed`, the C's rows: `model.BilledRows`), format and settings;
no per-path requests (inspect counts the billed ones) and no diagnostics (the C takes no file with
one). Only `inspect` reads a rollout this way (tests/read/test_codex_summary.py holds its JSON equal
to the ordinary way's).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sessiontools.read.codex.summary import CodexSummary
from sessiontools.read.parse import gc_paused
from sessiontools.read.values import cleaned_for
from sessiontools.transcript.model import (
    Agent,
    BilledRows,
    Compaction,
    MessageColumns,
    Role,
    Transcript,
    TranscriptPath,
    Trigger,
    merge_ranges,
)

#: The C's role codes (_codex_summary.c: R_*).
_ROLES = (Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.SUMMARY, Role.OTHER)


def _format(schema: str, cli_version: str | None) -> str:
    """`transcript.codex._format` (the C takes no legacy rollout)."""
    if schema == "2025":
        return "codex-2025"
    parts = (cli_version or "").split(".")
    return f"codex-{parts[0]}.{parts[1]}" if len(parts) >= 2 else "codex"


def summary_transcript(s: CodexSummary) -> Transcript:
    """As `codex.codex_transcript` makes it of the lean reading, for what inspect reads."""
    with gc_paused():
        return _transcript(s)


def _transcript(s: CodexSummary) -> Transcript:
    n = len(s.lines)
    messages = MessageColumns(s.ids, s.lines, list(map(_ROLES.__getitem__, s.roles)))
    compactions = [Compaction(index=index, line=line, trigger=Trigger.MANUAL if manual else Trigger.THRESHOLD,
                              tokens_before=before, tokens_after=after, summary=None,
                              writer="provider" if provider else "agent",
                              kept=merge_ranges([(first, index), (index + 1, end)]), timestamp=ts)
                   for index, line, manual, before, after, provider, first, _, end, ts in s.compactions]
    if not compactions:  # (`codex._events_as_compactions`)
        compactions = [Compaction(index=max(n - 1, 0), line=line, trigger=Trigger.THRESHOLD, tokens_before=None,
                                  summary=None, writer="agent", timestamp=ts) for line, ts in s.events]
    skipped: Counter[str] = Counter()
    if s.skipped:
        skipped["compaction summarisation call"] = s.skipped
    path = TranscriptPath(None, messages, (), tuple(compactions), (), skipped=skipped)
    sid, cwd, cli_version, _, originator = s.meta or (None, None, None, None, None)
    cli_version = cli_version or None  # (`Rollout.cli_version`: the first that is not empty)
    settings: dict[str, Any] = {
        "cli_version": cli_version, "model_provider": s.provider, "model": s.model, "cwd": cwd,
        "originator": originator, "model_context_window": s.window, "session_metas": 1 if s.meta else 0,
        "schema": s.schema,
    }
    return cleaned_for(s, Transcript(Agent.CODEX, s.path, sid, _format(s.schema, cli_version), [path], [], settings,
                                     billed=BilledRows(s.provider, s.billed)))
