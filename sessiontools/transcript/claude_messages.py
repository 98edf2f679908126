"""Claude Code's lines as neutral messages (`transcript.claude_code`'s docstring, "Messages"): the
units of a line's content blocks, a user line's role (summary, tool result, user text, meta or
local command) and the summary text inside a compact summary message."""

from __future__ import annotations

import json
from typing import Any

from sessiontools.read.claude_code import CONTINUATION_PREFIX, Record, content_text
from sessiontools.transcript.model import Message, Role, Unit, UnitKind

_COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                     "<local-command-stderr>", "<local-command-caveat>")
_SUMMARY_TAILS = ("\n\nIf you need specific details from before compaction", "\nIf you need specific details",
                  "\n\nContinue the conversation from where it left off", "\n\nPlease continue the conversation")
#: json.dumps(x, ensure_ascii=False), without building an encoder per call
_JSON = json.JSONEncoder(ensure_ascii=False).encode


def block_units(content: Any, assistant: bool) -> list[Unit]:
    """The units of a message's content (a string or a list of blocks), in order."""
    text_kind = UnitKind.TEXT if assistant else UnitKind.USER
    if isinstance(content, str):
        return [Unit(text_kind, content)]
    units: list[Unit] = []
    append = units.append
    for b in content if isinstance(content, list) else ():
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            append(Unit(text_kind, b.get("text") or ""))
        elif t == "tool_use":
            append(Unit(UnitKind.TOOL_CALL, f"{b.get('name') or ''} {_JSON(b.get('input'))}"))
        elif t == "tool_result":
            c = b.get("content")
            append(Unit(UnitKind.TOOL_RESULT, c if isinstance(c, str) else content_text(c)))
            if isinstance(c, list):  # (not a string: that would test every character)
                units += [Unit(UnitKind.IMAGE, "") for x in c if isinstance(x, dict) and x.get("type") == "image"]
        elif t == "thinking" or t == "redacted_thinking":
            append(Unit(UnitKind.THINKING, b.get("thinking") or ""))
        elif t == "image":
            append(Unit(UnitKind.IMAGE, ""))
        else:
            append(Unit(UnitKind.OTHER, _JSON(b)))
    return units


def user_message(r: Record, index: int, content: Any, texts: bool = True) -> Message:
    """A user line's message; without `texts` (a lean file, `ClaudeFile.texts`) of no units but
    the summary's, its role decided as with them."""
    full = content_text(content)
    text = full.lstrip()
    # the summary (rule: transcript.claude_code, "Messages")
    if r.raw.get("isCompactSummary") or text.startswith(CONTINUATION_PREFIX):
        return Message(index, r.uuid, r.line, Role.SUMMARY, (Unit(UnitKind.SUMMARY, full),), r.timestamp, r.raw)
    if texts:
        units = tuple(block_units(content, False))
        tool = any(u.kind is UnitKind.TOOL_RESULT for u in units)
    else:  # (the blocks `_block_units` makes a TOOL_RESULT unit of)
        units = ()
        tool = type(content) is list and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    if r.raw.get("isMeta") or text.startswith(_COMMAND_PREFIXES):
        role = Role.OTHER
    else:
        role = Role.TOOL if tool else Role.USER  # claude_paths._has_tool_result
    return Message(index, r.uuid, r.line, role, units, r.timestamp, r.raw)


def summary_text(text: str) -> str:
    """The summary inside Claude Code's summary message: after ``Summary:``, before its instructions."""
    i = text.find("Summary:")
    s = text[i + len("Summary:"):] if i >= 0 else text
    cut = min((j for t in _SUMMARY_TAILS if (j := s.find(t)) >= 0), default=len(s))
    return s[:cut].strip()
