"""`cut`: what Pi's `prepareCompaction` would do at chosen points of a path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
