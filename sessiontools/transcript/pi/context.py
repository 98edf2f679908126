"""The messages Pi would send for a path: 0.x `buildSessionContext`, 1.x `buildSessionProjection`.

Messages are the same JSON-shaped dicts Pi builds (role, content, ...), so that estimates computed
over them match Pi's to the token. Raw session objects are never modified; a changed message is a
new dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sessiontools.jsvalues import UNDEFINED
from sessiontools.read.pi.entries import Entry

Message = Mapping[str, Any]


class ProjectedEntry(NamedTuple):
    """One selected entry and the model-visible messages it contributes (possibly none). A named
    tuple: contexts are built per request, and a frozen dataclass pays a setattr per field."""

    source: Entry
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Context:
    """What Pi would send for a path, with provenance."""

    pi_version: str
    entries: tuple[ProjectedEntry, ...]
    messages: tuple[Message, ...]
    compaction: Entry | None  # the newest compaction on the path, if any
    thinking_level: str = "off"
    model: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------------------------
# JavaScript value semantics Pi's message constructors rely on
# --------------------------------------------------------------------------------------------

_MAX_DATE_MS = 8.64e15
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def js_date_ms(value: Any) -> int | None:
    """`new Date(value).getTime()`; None stands for NaN (which JSON.stringify writes as null).

    ISO strings without an offset are taken as UTC (Node reads them as local time; CI runs in UTC).
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        if value != value or abs(value) > _MAX_DATE_MS:
            return None
        return int(value)
    if isinstance(value, str):
        s = value.strip()
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        delta = dt - _EPOCH
        return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    return None


def _drop_undefined(d: dict[str, Any], undefined_keys: Sequence[str]) -> dict[str, Any]:
    for k in undefined_keys:
        if d.get(k, UNDEFINED) is UNDEFINED:
            d.pop(k, None)
    return d




def compaction_summary_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's `createCompactionSummaryMessage(summary, tokensBefore, timestamp)`."""
    msg = {
        "role": "compactionSummary",
        "summary": entry.get("summary", UNDEFINED),
        "tokensBefore": entry.get("tokensBefore", UNDEFINED),
        "timestamp": js_date_ms(entry.get("timestamp")) if "timestamp" in entry else None,
    }
    return _drop_undefined(msg, ("summary", "tokensBefore"))


def branch_summary_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's `createBranchSummaryMessage(summary, fromId, timestamp)`."""
    msg = {
        "role": "branchSummary",
        "summary": entry.get("summary"),
        "fromId": entry.get("fromId", UNDEFINED),
        "timestamp": js_date_ms(entry.get("timestamp")) if "timestamp" in entry else None,
    }
    return _drop_undefined(msg, ("fromId",))


def custom_message(entry: Mapping[str, Any], *, default_content: bool) -> dict[str, Any]:
    """Pi's `createCustomMessage(customType, content, display, details, timestamp)`.

    1.x passes `content ?? []`; 0.x passes content as is.
    """
    content = entry.get("content", UNDEFINED)
    if default_content and (content is UNDEFINED or content is None):
        content = []
    msg = {
        "role": "custom",
        "customType": entry.get("customType", UNDEFINED),
        "content": content,
        "display": entry.get("display", UNDEFINED),
        "details": entry.get("details", UNDEFINED),
        "timestamp": js_date_ms(entry.get("timestamp")) if "timestamp" in entry else None,
    }
    return _drop_undefined(msg, ("customType", "content", "display", "details"))


# --------------------------------------------------------------------------------------------
# 0.x
# --------------------------------------------------------------------------------------------


def entry_messages_v0(entry: Entry) -> tuple[Message, ...]:
    """Pi 0.x: the messages one entry contributes to a context (before compaction selection)."""
    data = entry.data
    if entry.type == "message":
        msg = data.get("message")
        return (msg,) if msg is not None else ()
    if entry.type == "custom_message":
        return (custom_message(data, default_content=False),)
    if entry.type == "branch_summary" and data.get("summary"):
        return (branch_summary_message(data),)
    return ()


def _settings(path: Sequence[Entry]) -> tuple[str, Mapping[str, Any] | None]:
    """Thinking level and model in force at the end of the path (the last of each), scanning back."""
    thinking: Any = UNDEFINED
    model: Any = UNDEFINED
    for e in reversed(path):
        if thinking is UNDEFINED and e.type == "thinking_level_change":
            thinking = e.data.get("thinkingLevel")
        elif model is UNDEFINED and e.type == "model_change":
            model = {"provider": e.data.get("provider"), "modelId": e.data.get("modelId")}
        elif model is UNDEFINED and e.role == "assistant":
            msg = e.message or {}
            model = {"provider": msg.get("provider"), "modelId": msg.get("model")}
        if thinking is not UNDEFINED and model is not UNDEFINED:
            break
    return ("off" if thinking is UNDEFINED else thinking), (None if model is UNDEFINED else model)


def _build_v0(path: Sequence[Entry]) -> Context:
    thinking, model = _settings(path)
    compaction_idx = -1
    for i, e in enumerate(path):
        if e.type == "compaction":
            compaction_idx = i
    projected: list[ProjectedEntry] = []
    if compaction_idx >= 0:
        comp = path[compaction_idx]
        projected.append(ProjectedEntry(comp, (compaction_summary_message(comp.data),)))
        first_kept = comp.data.get("firstKeptEntryId")
        found = False
        for e in path[:compaction_idx]:
            if e.id == first_kept:
                found = True
            if found:
                projected.append(ProjectedEntry(e, entry_messages_v0(e)))
        for e in path[compaction_idx + 1:]:
            projected.append(ProjectedEntry(e, entry_messages_v0(e)))
    else:
        projected = [ProjectedEntry(e, entry_messages_v0(e)) for e in path]
    messages = tuple(m for p in projected for m in p.messages)
    return Context(
        "0", tuple(projected), messages, path[compaction_idx] if compaction_idx >= 0 else None, thinking, model
    )


# --------------------------------------------------------------------------------------------
# 1.x
# --------------------------------------------------------------------------------------------


def entry_messages_v1(entry: Entry) -> tuple[Message, ...]:
    """Pi 1.x `sessionEntryToContextMessages`: the messages one entry contributes before edits."""
    data = entry.data
    if entry.type == "message":
        msg = data.get("message")
        if not isinstance(msg, Mapping):
            return ()
        role = msg.get("role")
        if role == "system" and msg.get("content") is None:
            return ({**msg, "content": ""},)
        if role in ("user", "assistant", "toolResult") and msg.get("content") is None:
            return ({**msg, "content": []},)
        return (msg,)
    if entry.type == "custom_message":
        return (custom_message(data, default_content=True),)
    if entry.type == "branch_summary" and data.get("summary"):
        return (branch_summary_message(data),)
    if entry.type == "compaction":
        summary = compaction_summary_message(data)
        system = data.get("systemMessage")
        return (system, summary) if system else (summary,)
    return ()


_EDITABLE_ROLES = ("user", "assistant", "toolResult", "custom")


def project_entry_v1(entry: Entry, edit: Entry | None) -> tuple[Message, ...]:
    """Pi 1.x `projectContextEntry`: an entry's messages with its latest context edit applied."""
    messages = entry_messages_v1(entry)
    if edit is None:
        return messages
    replacement = edit.data.get("replacement", UNDEFINED)
    if replacement is None:
        return ()
    if not isinstance(replacement, Mapping):
        return messages  # Pi would throw on this malformed edit; the reader reports it
    new_content = replacement.get("content", UNDEFINED)
    out = []
    for m in messages:
        if m.get("role") not in _EDITABLE_ROLES:
            out.append(m)
            continue
        if m.get("role") in ("assistant", "toolResult") and isinstance(new_content, str):
            content: Any = [{"type": "text", "text": new_content}]
        else:
            content = new_content
        nm = dict(m)
        if content is UNDEFINED:
            nm.pop("content", None)
        else:
            nm["content"] = content
        out.append(nm)
    return tuple(out)


def context_entries_v1(path: Sequence[Entry]) -> tuple[list[Entry], Entry | None]:
    """Pi 1.x `buildContextEntries`: the newest compaction, its kept range, and what follows."""
    compaction_idx = -1
    for i, e in enumerate(path):
        if e.type == "compaction":
            compaction_idx = i
    if compaction_idx < 0:
        return list(path), None
    comp = path[compaction_idx]
    out = [comp]
    first_kept = comp.data.get("firstKeptEntryId")
    found = False
    for e in path[:compaction_idx]:
        if e.id == first_kept:
            found = True
        if found and e.role != "system":
            out.append(e)
    out.extend(path[compaction_idx + 1:])
    return out, comp


def _build_v1(path: Sequence[Entry]) -> Context:
    thinking, model = _settings(path)
    selected, comp = context_entries_v1(path)
    edits: dict[Any, Entry] = {}
    for e in selected:
        if e.type == "context_edit":
            edits[e.data.get("targetId")] = e
    projected = tuple(
        ProjectedEntry(
            e,
            () if e.type == "compaction" and i > 0 else project_entry_v1(e, edits.get(e.id) if e.id is not None else None),
        )
        for i, e in enumerate(selected)
    )
    messages = tuple(m for p in projected for m in p.messages)
    return Context("1", projected, messages, comp, thinking, model)


def build_context(path: Sequence[Entry], pi_version: str) -> Context:
    """The context Pi `pi_version` ("0" or "1") would build for a path (root to leaf)."""
    if pi_version == "1":
        return _build_v1(path)
    if pi_version == "0":
        return _build_v0(path)
    raise ValueError(f"unknown Pi version {pi_version!r} (expected '0' or '1')")
