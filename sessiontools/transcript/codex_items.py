"""Codex response items as neutral messages (`transcript.codex`): the role, id and units of each
kind of item (`item_message`), and the same without units for a lean reading (`lean_item_message`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sessiontools.read.codex.records import SUMMARY_PREFIX
from sessiontools.transcript.model import Message, Role, Unit, UnitKind

_MAP = (dict, Mapping)  # a dict (what JSON gives) is tested first, without the ABC machinery
ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "developer": Role.SYSTEM, "system": Role.SYSTEM}
ASSISTANT_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "reasoning",
                             "web_search_call", "image_generation_call", "tool_search_call"})
TOOL_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
#: json.dumps(x, ensure_ascii=False), without building an encoder per call
_JSON = json.JSONEncoder(ensure_ascii=False).encode


def _text_parts(content: Any) -> list[tuple[str, bool]]:
    """(text, is_image) parts of a message's content."""
    if isinstance(content, str):
        return [(content, False)]
    out = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, _MAP):
            continue
        if isinstance(part.get("text"), str):
            out.append((part["text"], False))
        elif part.get("type") in ("input_image", "image"):
            out.append(("", True))
    return out


def output_text(out: Any) -> str:
    """The text of a Codex tool output (a string, {content}, or a list of text parts)."""
    if isinstance(out, str):
        return out
    if isinstance(out, _MAP):
        return str(out.get("content", ""))
    if isinstance(out, list):
        return "".join(p.get("text", "") for p in out if isinstance(p, _MAP) and isinstance(p.get("text"), str))
    return ""


def is_summary_item(item: Mapping[str, Any]) -> bool:
    """A user message carrying a compaction summary (Codex's fixed prefix) or an encrypted summary."""
    if item.get("type") in ("compaction", "compaction_summary"):
        return True
    if item.get("type") != "message" or item.get("role") != "user":
        return False
    return any(t.startswith(SUMMARY_PREFIX) for t, _ in _text_parts(item.get("content")))


#: User-role messages Codex itself writes inside a turn (0.77 - 0.1xx, after a shell `apply_patch`): no
#: prompt, so Role.OTHER (they start no turn); Codex still keeps them as user messages on compaction.
INJECTED_USER_PREFIXES = ("Warning: apply_patch was requested via",)


def item_message(item: Mapping[str, Any], index: int, line: int, timestamp: str | None) -> Message:
    """One response item as a neutral message."""
    kind = item.get("type")
    if kind in TOOL_ITEMS:  # (the most common items first; none of these is a summary item)
        return Message(index, _call_id(item), line, Role.TOOL,
                       (Unit(UnitKind.TOOL_RESULT, output_text(item.get("output"))),), timestamp, item)
    if kind == "function_call":
        args = item.get("arguments")
        text = f"{item.get('name', '')} {args if isinstance(args, str) else json.dumps(args)}"
        return Message(index, _call_id(item), line, Role.ASSISTANT, (Unit(UnitKind.TOOL_CALL, text),), timestamp, item)
    if is_summary_item(item):
        texts = [t for t, _ in _text_parts(item.get("content"))]
        return Message(index, None, line, Role.SUMMARY, (Unit(UnitKind.SUMMARY, "\n".join(texts)),), timestamp, item)
    if kind == "message":
        role = ROLES.get(str(item.get("role")), Role.OTHER)
        if role == Role.USER and any(t.startswith(INJECTED_USER_PREFIXES) for t, _ in _text_parts(item.get("content"))):
            role = Role.OTHER
        ukind = {Role.SYSTEM: UnitKind.SYSTEM, Role.USER: UnitKind.USER, Role.ASSISTANT: UnitKind.TEXT}.get(
            role, UnitKind.OTHER)
        units = tuple(Unit(UnitKind.IMAGE, "") if img else Unit(ukind, t) for t, img in _text_parts(item.get("content")))
        return Message(index, _id(item), line, role, units, timestamp, item)
    if kind in ("function_call", "custom_tool_call"):
        args = item.get("arguments") if kind == "function_call" else item.get("input")
        text = f"{item.get('name', '')} {args if isinstance(args, str) else json.dumps(args)}"
        return Message(index, _call_id(item), line, Role.ASSISTANT, (Unit(UnitKind.TOOL_CALL, text),), timestamp, item)
    if kind == "local_shell_call":
        text = "shell " + _JSON(item.get("action"))
        return Message(index, _call_id(item), line, Role.ASSISTANT, (Unit(UnitKind.TOOL_CALL, text),), timestamp, item)
    if kind == "reasoning":
        parts = [p.get("text", "") for key in ("summary", "content") for p in item.get(key) or []
                 if isinstance(p, _MAP) and isinstance(p.get("text"), str)]
        return Message(index, _id(item), line, Role.ASSISTANT, tuple(Unit(UnitKind.THINKING, t) for t in parts)
                       or (Unit(UnitKind.THINKING, ""),), timestamp, item)
    if kind in TOOL_ITEMS:
        return Message(index, _call_id(item), line, Role.TOOL,
                       (Unit(UnitKind.TOOL_RESULT, output_text(item.get("output"))),), timestamp, item)
    role = Role.ASSISTANT if kind in ASSISTANT_ITEMS else Role.OTHER
    return Message(index, _id(item), line, role, (Unit(UnitKind.OTHER, _JSON(item)),),
                   timestamp, item)


#: The tool calls `item_message` gives an assistant message whose id is the call's id.
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


def lean_item_message(item: Mapping[str, Any], index: int, line: int, timestamp: str | None) -> Message | None:
    """`item_message` for a lean reading (`read_rollout_bytes(lean=True)`: the item may be a
    projection without texts) without units (a count reads none): the same index, id, line, role and
    timestamp; None for a user message, whose texts decide its role (the caller reads it whole).
    tests/transcript/test_codex_lean.py holds the two equal on every kind."""
    kind = item.get("type")
    if type(kind) is not str:
        return item_message(item, index, line, timestamp)
    if kind in TOOL_ITEMS:
        return Message(index, _call_id(item), line, Role.TOOL, (), timestamp, item)
    if kind in CALLS:
        return Message(index, _call_id(item), line, Role.ASSISTANT, (), timestamp, item)
    if kind == "message":
        role = item.get("role")
        if role == "user":  # (a summary or a message Codex wrote itself: `is_summary_item`, the prefixes)
            return None
        return Message(index, _id(item), line, ROLES.get(str(role), Role.OTHER), (), timestamp, item)
    if kind in ("compaction", "compaction_summary"):  # (`is_summary_item`)
        return Message(index, None, line, Role.SUMMARY, (), timestamp, item)
    return Message(index, _id(item), line, Role.ASSISTANT if kind in ASSISTANT_ITEMS else Role.OTHER, (),
                   timestamp, item)


def _id(item: Mapping[str, Any]) -> str | None:
    return item["id"] if isinstance(item.get("id"), str) else None


def _call_id(item: Mapping[str, Any]) -> str | None:
    return item["call_id"] if isinstance(item.get("call_id"), str) else _id(item)
