"""The typed boundary of the Claude Code reader: the fields the toolkit reads from a transcript line,
checked once when the line is read (the checks live in `read.values`). A field that fails is removed
from the line and named in a `file:line: field: reason; dropped` diagnostic (kind `recovered`)."""

from __future__ import annotations

from typing import Any

from sessiontools.read.values import MAX_TOTAL_TOKENS, check_fields, count, optional_text, text


def _object(v: Any) -> tuple[Any, str | None]:
    return (v, None) if type(v) is dict else (None, f"not an object ({type(v).__name__})")


def _content(v: Any) -> tuple[Any, str | None]:
    if type(v) is str or type(v) is list:
        return v, None
    return None, f"not a string or a list ({type(v).__name__})"


def _list(v: Any) -> tuple[Any, str | None]:
    return (v, None) if type(v) is list else (None, f"not a list ({type(v).__name__})")


def _big_count(v: Any) -> tuple[int | None, str | None]:
    return count(v, MAX_TOTAL_TOKENS)


_LINE = {"timestamp": text, "version": text, "cwd": text, "gitBranch": text, "requestId": text,
         "compactMetadata": _object, "message": _object}
_MESSAGE = {"role": text, "model": text, "id": text, "stop_reason": optional_text, "content": _content,
            "usage": _object}
_USAGE = {"input_tokens": count, "output_tokens": count, "cache_creation_input_tokens": count,
          "cache_read_input_tokens": count}
_BLOCK = {"type": text, "text": text, "thinking": text, "name": text, "id": text, "tool_use_id": text,
          "content": _content}
_COMPACT = {"trigger": text, "preTokens": _big_count, "postTokens": _big_count, "preservedMessages": _object,
            "preservedSegment": _object}
_PRESERVED = {"uuids": _list, "allUuids": _list}
_SEGMENT = {"headUuid": text, "tailUuid": text, "anchorUuid": text}


def check_line(obj: dict[str, Any]) -> list[str]:
    """Check one line object in place; the reasons for what was dropped (empty when all is well)."""
    problems = check_fields(obj, _LINE, "")
    meta = obj.get("compactMetadata")
    if meta is not None:
        problems += check_fields(meta, _COMPACT, "compactMetadata.")
        if "preservedMessages" in meta:
            problems += check_fields(meta["preservedMessages"], _PRESERVED, "compactMetadata.preservedMessages.")
        if "preservedSegment" in meta:
            problems += check_fields(meta["preservedSegment"], _SEGMENT, "compactMetadata.preservedSegment.")
    msg = obj.get("message")
    if msg is None:
        return problems
    problems += check_fields(msg, _MESSAGE, "message.")
    usage = msg.get("usage")
    if usage is not None:
        problems += check_fields(usage, _USAGE, "message.usage.")
    content = msg.get("content")
    if type(content) is list:
        for i, block in enumerate(content):
            if type(block) is dict:
                problems += check_fields(block, _BLOCK, f"message.content[{i}].")
    return problems
