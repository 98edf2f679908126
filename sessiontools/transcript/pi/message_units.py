"""The text units of one Pi message by kind (`transcript.model.Unit`): what Pi's `estimateTokens`
sees of it, which a `PiMessage` of the neutral transcript makes on first read of its `units`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.jsvalues import json_stringify
from sessiontools.transcript.model import Unit, UnitKind

RawMessage = Mapping[str, Any]


def _content_units(content: Any, kind: UnitKind) -> list[Unit]:
    if isinstance(content, str):
        return [Unit(kind, content)]
    out = []
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            out.append(Unit(kind, b["text"]))
        elif b.get("type") == "image":
            out.append(Unit(UnitKind.IMAGE, ""))
    return out


def _assistant_units(content: Any) -> list[Unit]:
    out = []
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text" and isinstance(b.get("text"), str):
            out.append(Unit(UnitKind.TEXT, b["text"]))
        elif t == "thinking" and isinstance(b.get("thinking"), str):
            out.append(Unit(UnitKind.THINKING, b["thinking"]))
        elif t == "toolCall":
            name = b.get("name") if isinstance(b.get("name"), str) else ""
            out.append(Unit(UnitKind.TOOL_CALL, name + (json_stringify(b.get("arguments")) or "")))
    return out


def message_units(msg: RawMessage) -> tuple[Unit, ...]:
    """The text units of one Pi message, as Pi's `estimateTokens` sees them (by kind)."""
    role = msg.get("role")
    if role == "assistant":
        return tuple(_assistant_units(msg.get("content")))
    if role == "toolResult":
        return tuple(_content_units(msg.get("content"), UnitKind.TOOL_RESULT))
    if role == "bashExecution":
        text = "\n".join(v for v in (msg.get("command"), msg.get("output")) if isinstance(v, str))
        return (Unit(UnitKind.TOOL_RESULT, text),)
    if role in ("branchSummary", "compactionSummary"):
        summary = msg.get("summary")
        return (Unit(UnitKind.SUMMARY, summary),) if isinstance(summary, str) else ()
    if role == "system":
        units = _content_units(msg.get("content"), UnitKind.SYSTEM)
        sections = msg.get("sections")
        if isinstance(sections, dict):
            units += [Unit(UnitKind.SYSTEM, v) for v in sections.values() if isinstance(v, str) and v]
        return tuple(units)
    kind = UnitKind.USER if role in ("user", "custom") else UnitKind.OTHER
    return tuple(_content_units(msg.get("content"), kind))
