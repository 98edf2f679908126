"""The typed boundary of the Claude Code reader: the fields the toolkit reads from a transcript line,
checked once when the line is read (the checks live in `read.values`). A field that fails is removed
from the line and named in a `file:line: field: reason; dropped` diagnostic (kind `recovered`)."""

from __future__ import annotations

from typing import Any

from sessiontools.read.values import (
    a_list,
    an_object,
    apply_changes,
    check_fields,
    content,
    count,
    optional_text,
    scan_fields,
    text,
    total_count,
    tree_spec,
)

try:
    from sessiontools.read._native import check_tree
except ImportError:  # not built on this machine: `check_line` on every line, with the same results
    check_tree = None

_LINE = {"timestamp": text, "version": text, "cwd": text, "gitBranch": text, "requestId": text,
         "compactMetadata": an_object, "message": an_object}
_MESSAGE = {"role": text, "model": text, "id": text, "stop_reason": optional_text, "content": content,
            "usage": an_object}
_USAGE = {"input_tokens": count, "output_tokens": count, "cache_creation_input_tokens": count,
          "cache_read_input_tokens": count}
_BLOCK = {"type": text, "text": text, "thinking": text, "name": text, "id": text, "tool_use_id": text,
          "content": content}
_COMPACT = {"trigger": text, "preTokens": total_count, "postTokens": total_count, "preservedMessages": an_object,
            "preservedSegment": an_object}
_PRESERVED = {"uuids": a_list, "allUuids": a_list}
_SEGMENT = {"headUuid": text, "tailUuid": text, "anchorUuid": text}


#: `check_line`'s tables as a spec of `read._native.check_tree` (`values.tree_spec`), nested exactly
#: where `check_line` checks further: a line that passes it has nothing `check_line` would drop.
TREE = tree_spec(_LINE, compactMetadata=tree_spec(_COMPACT, preservedMessages=tree_spec(_PRESERVED),
                                                  preservedSegment=tree_spec(_SEGMENT)),
                 message=tree_spec(_MESSAGE, usage=tree_spec(_USAGE), content=[tree_spec(_BLOCK)]))


def check_line(obj: dict[str, Any]) -> list[str]:
    """Check one line object in place; the reasons for what was dropped (empty when all is well)."""
    if check_tree is not None and check_tree(obj, TREE):
        return []  # (every checked field passes its check's fast mark: nothing to drop or change)
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
                if (changes := scan_fields(block, _BLOCK)) is not None:
                    problems += apply_changes(block, _BLOCK, changes, f"message.content[{i}].")
    return problems
