"""Where Pi cuts: valid cut points, turn starts, and `findCutPoint`.

0.x walks the raw path entries; 1.x walks the projected entries (after compaction selection and
context edits) and adds the recovery-omission rule. Both return a `CutPoint` whose indices are
positions in the sequence they were given; `prepare` maps them back to path indices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.jsvalues import UNDEFINED
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import ProjectedEntry, entry_messages_v1

_CUT_ROLES_V0 = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"})
_CUT_ROLES_V1 = _CUT_ROLES_V0
_TURN_START_ROLES_V1 = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Pi's `CutPointResult`; `turn_start_index` is None where Pi returns -1."""

    first_kept_index: int
    turn_start_index: int | None
    is_split_turn: bool


# ---------------------------------------------------------------------------------------- 0.x


def _next_cut_point_v0(entries: Sequence[Entry], start: int, end: int) -> int | None:
    """The first valid cut point in [start, end), 0.x rules: a user-like or assistant message (never a
    tool result), a branch summary or a custom message; None when there is none."""
    for i in range(start, end):
        e = entries[i]
        if e.type == "message":
            if e.role in _CUT_ROLES_V0:
                return i
        elif e.type in ("branch_summary", "custom_message"):
            return i
    return None


def find_turn_start_v0(entries: Sequence[Entry], index: int, start: int) -> int | None:
    """The user message (or bashExecution, branch summary, custom message) starting the turn."""
    for i in range(index, start - 1, -1):
        e = entries[i]
        if e.type in ("branch_summary", "custom_message"):
            return i
        if e.type == "message" and e.role in ("user", "bashExecution"):
            return i
    return None


def find_cut_point_v0(
    entries: Sequence[Entry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    tokens: Callable[[Mapping[str, Any]], int] | None = None,
    entry_tokens: Sequence[int | None] | None = None,
) -> CutPoint:
    """Pi 0.x `findCutPoint`: walk back from the newest message until `keep_recent_tokens` are kept.
    `entry_tokens`: each entry's `tokens(e.message or {})`, None for an entry that is no message, when
    the caller has them (`prepare.PathHints`)."""
    est = tokens or (lambda m: estimate_tokens(m, "0"))
    # Pi lists every valid cut point; only the first one and the first one at or after the entry
    # where keepRecentTokens is reached matter, so those two are found by a scan forward.
    first = _next_cut_point_v0(entries, start, end)
    if first is None:
        return CutPoint(start, None, False)
    acc = 0
    cut = first
    for i in range(end - 1, start - 1, -1):
        if entry_tokens is not None:
            t = entry_tokens[i]
            if t is None:
                continue
            acc += t
        else:
            e = entries[i]
            if e.type != "message":
                continue
            acc += est(e.message or {})
        if acc >= keep_recent_tokens:
            c = _next_cut_point_v0(entries, i, end)
            if c is not None:
                cut = c
            break
    while cut > start:
        prev = entries[cut - 1]
        if prev.type in ("compaction", "message"):
            break
        cut -= 1
    cut_entry = entries[cut]
    is_user = cut_entry.type == "message" and cut_entry.role == "user"
    turn_start = None if is_user else find_turn_start_v0(entries, cut, start)
    return CutPoint(cut, turn_start, not is_user and turn_start is not None)


# ---------------------------------------------------------------------------------------- 1.x


def _is_cut_point(pe: ProjectedEntry) -> bool:
    return pe.source.type != "compaction" and any(m.get("role") in _CUT_ROLES_V1 for m in pe.messages)


def is_projected_turn_start(pe: ProjectedEntry) -> bool:
    return pe.source.type != "compaction" and any(m.get("role") in _TURN_START_ROLES_V1 for m in pe.messages)


def find_projected_turn_start(entries: Sequence[ProjectedEntry], index: int, start: int) -> int | None:
    for i in range(index, start - 1, -1):
        if is_projected_turn_start(entries[i]):
            return i
    return None




def find_projected_cut_point(
    entries: Sequence[ProjectedEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    tokens: Callable[[Mapping[str, Any]], int] | None = None,
) -> CutPoint:
    """Pi 1.x `findProjectedCutPoint` over projected entries."""
    est = tokens or (lambda m: estimate_tokens(m, "1"))
    cut_points = [i for i in range(start, end) if _is_cut_point(entries[i])]
    if not cut_points:
        return CutPoint(start, None, False)
    acc = 0
    exceeded = False
    cut = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        t = sum(est(m) for m in entries[i].messages)
        if t == 0:
            continue
        acc += t
        if acc >= keep_recent_tokens:
            exceeded = True
            cut = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    if exceeded:
        suffix = entries[cut + 1: end]

        def visible(pe: ProjectedEntry) -> bool:
            return pe.source.type != "context_edit" and len(entry_messages_v1(pe.source)) > 0

        def omitted(pe: ProjectedEntry) -> bool:
            return visible(pe) and not pe.messages

        omitted_ids = {pe.source.data.get("id", UNDEFINED) for pe in suffix if omitted(pe)}
        external = any(
            pe.source.type == "context_edit"
            and pe.source.data.get("replacement", UNDEFINED) is not None
            and pe.source.data.get("targetId", UNDEFINED) not in omitted_ids
            for pe in suffix
        )
        if (
            not external
            and any(pe.source.type == "message" and pe.source.role == "assistant" and omitted(pe) for pe in suffix)
            and all(pe.source.type != "compaction" and (not visible(pe) or omitted(pe)) for pe in suffix)
        ):
            cut += 1
    while cut > start:
        prev = entries[cut - 1]
        if prev.source.type == "compaction" or prev.messages:
            break
        cut -= 1
    starts_turn = is_projected_turn_start(entries[cut])
    turn_start = None if starts_turn else find_projected_turn_start(entries, cut, start)
    return CutPoint(cut, turn_start, not starts_turn and turn_start is not None)
