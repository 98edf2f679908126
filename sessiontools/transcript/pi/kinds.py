"""Why a recorded compaction ran, judged from the file (Pi does not record its trigger)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.pi.overflow import is_context_overflow


def _previous_message(path: Sequence[Entry], index: int) -> Mapping[str, Any] | None:
    for e in reversed(path[:index]):
        if e.type == "message":
            return e.message
        if e.type in ("compaction", "branch_summary", "custom_message"):
            return None
    return None


def compaction_kind(path: Sequence[Entry], index: int, pi_version: str) -> str:
    """Why a recorded compaction ran, judged from the message before it on its path.

    `overflow`: that message is an assistant error Pi recognises as a context overflow.
    `threshold`: it is an assistant reply or a tool result (the points where Pi checks the
    threshold by itself). `manual`: anything else (a user message, nothing at all), where only a
    `/compact` command or an extension could have compacted.
    """
    prev = _previous_message(path, index)
    if prev is None:
        return "manual"
    if prev.get("role") == "assistant":
        if prev.get("stopReason") == "error":
            return "overflow" if is_context_overflow(prev, None, pi_version) else "manual"
        return "threshold"
    if prev.get("role") == "toolResult":
        return "threshold"
    return "manual"
