"""`cut`: what Pi's `prepareCompaction` would do at chosen points of a path (the command reaches it
through `policies.registry.CUTTERS`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.policies.pi.prepare import NoCompaction, Preparation, prepare_compaction
from sessiontools.policies.pi.settings import CompactionSettings
from sessiontools.read.pi.entries import Entry, Session
from sessiontools.transcript.pi.tree import SessionTree


def cut_at(
    path: Sequence[Entry], at_index: int, settings: CompactionSettings, pi_version: str
) -> dict[str, Any]:
    """One `cut` result for the path prefix ending at `at_index` (the JSON contract of `cut`)."""
    prefix = path[: at_index + 1]
    at = path[at_index]
    result = prepare_compaction(prefix, settings, pi_version)
    base: dict[str, Any] = {"at_entry_id": at.id, "at_index": at_index, "at_line": at.line}
    if isinstance(result, NoCompaction):
        return {
            **base,
            "compacts": False,
            "reason": result.reason,
            "first_kept_entry_id": None,
            "first_kept_index": None,
            "turn_start_index": None,
            "is_split_turn": None,
            "tokens_before": result.tokens_before,
            "messages_to_summarize": None,
            "turn_prefix_messages": None,
            "read_files": None,
            "modified_files": None,
            "has_previous_summary": None,
            "serialized_chars": None,
        }
    assert isinstance(result, Preparation)
    return {
        **base,
        "compacts": True,
        "reason": None,
        "first_kept_entry_id": result.first_kept_entry_id,
        "first_kept_index": result.first_kept_index,
        "turn_start_index": result.turn_start_index,
        "is_split_turn": result.is_split_turn,
        "tokens_before": result.tokens_before,
        "messages_to_summarize": len(result.messages_to_summarize),
        "turn_prefix_messages": len(result.turn_prefix_messages),
        "read_files": result.read_files,
        "modified_files": result.modified_files,
        "has_previous_summary": result.has_previous_summary,
        "serialized_chars": result.serialized_chars,
    }


def kept_span(path: Sequence[Entry], cut: Mapping[str, Any]) -> tuple[Entry | None, Entry | None]:
    """First and last kept entries that carry a message (for display)."""
    if not cut.get("compacts"):
        return None, None
    kept = [e for e in path[cut["first_kept_index"]: cut["at_index"] + 1] if e.type == "message"]
    return (kept[0], kept[-1]) if kept else (None, None)


def cut_session(
    session: Session,
    ats: Sequence[str] | None,
    *,
    leaf: str | None,
    settings: CompactionSettings,
    pi_version: str | None,
) -> tuple[list[dict[str, Any]], list[Entry]]:
    """Resolve `--at` references (ids or `#N`) on the path and prepare a compaction at each."""
    tree = SessionTree(session)
    path = tree.path(leaf)
    version = pi_version or session.pi_version
    indices = []
    for ref in ats or [f"#{len(path) - 1}"]:
        entry = tree.resolve(ref, path.entries)
        indices.append(path.index_of(entry.id) if not ref.startswith("#") else int(ref[1:]))
    return [cut_at(path.entries, i, settings, version) for i in indices], list(path.entries)


@dataclass(frozen=True, slots=True)
class CutAnswer:
    """`cut`'s answer: each point's result (the JSON contract), the first and last kept entries of
    each (for display), the version the file was read as, and a note on the reading (or None)."""

    cuts: list[dict[str, Any]]
    spans: list[tuple[Entry | None, Entry | None]]
    rule_version: str
    note: str | None


def cut_answer(session: Session, ats: Sequence[str] | None, *, leaf: str | None, reserve: int,
               keep_recent: int, rule_version: str | None) -> CutAnswer:
    """`cut_session` with Pi's settings (`reserveTokens`, `keepRecentTokens`), for the command."""
    settings = CompactionSettings(True, reserve, keep_recent)
    cuts, path = cut_session(session, ats, leaf=leaf, settings=settings, pi_version=rule_version)
    note = ("note: this file has lines Pi's own reader drops (recovered here); Pi's cut would differ"
            if session.has_lines_pi_drops else None)
    return CutAnswer(cuts, [kept_span(path, c) for c in cuts], rule_version or session.pi_version, note)
