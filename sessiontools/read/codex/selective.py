"""The Codex reader's selective first pass (issue 28): a rollout line whose record keeps only a few
declared fields (`event_msg`, `token_usage_record`, `turn_context`: three lines in five, and the
`item_completed` events that repeat whole messages) is read by the C scanner
(`read._native.project_lines`, sessiontools/read/_project.c) into a dict of those fields alone. The
rest of the line (an event's copy of a message, its content strings) is validated as strict JSON in
the same pass and never made into Python objects.

The projection is typed as strictly as the reader's checks (`read.codex.checks`): a declared field
of another type or out of range sends the line the ordinary way (`orjson`, `check_line`,
`parse_line`'s diagnostics), as does any line the scanner is not sure orjson reads the same way. So a
line read here is one on which the checks would drop nothing, and its record is the one the
ordinary way builds from the whole object (tests/read/test_codex_selective.py and
tests/read/test_native_project.py hold the two equal). Where no compiler built the extension, every
line goes the ordinary way, with the same records.
"""

from __future__ import annotations

from typing import Any

from sessiontools.read.codex import checks
from sessiontools.read.values import count, total_count

#: The line types read here.
SELECTIVE_TYPES = frozenset({"event_msg", "token_usage_record", "turn_context"})


def _marks(table: dict[str, Any]) -> dict[str, Any]:
    """A check table's fields as the C scanner's checked leaves: each check's fast mark (a field
    whose check has none sends its line the ordinary way)."""
    return {key: getattr(check, "fast", None) or False for key, check in table.items()}


def _usage(check: Any) -> dict[str, Any]:
    return dict.fromkeys(checks.USAGE_KEYS, check.fast)


#: The projection of the C scanner (`read._native.project_lines`, sessiontools/read/_project.c), made
#: from the checks' own tables: every field `read.codex.checks.check_line` checks, as its check's
#: fast mark (a value that does not pass it sends the line the ordinary way), and every other field
#: `read.codex.load._record` reads, nested where only some of an object's fields are read (an
#: event's `item` is a whole message: only its type is built). A line with `content` or `output`
#: goes the ordinary way. So a projected line is one on which the checks would
#: drop nothing, and its record is the ordinary way's (tests/read/test_native_project.py).
NATIVE_SPEC: dict[str, Any] = {
    **_marks(checks.LINE), "type": SELECTIVE_TYPES, "ordinal": None,
    "payload": {
        **_marks(checks.PAYLOAD), "content": False, "output": False,
        "info": {**_marks(checks.INFO), "total_token_usage": _usage(total_count),
                 "last_token_usage": _usage(count)},
        "usage": _usage(count), "latest_token_usage_record": {"usage": _usage(count)},
        "item": {"type": None}, "error": {"message": None, "codex_error_info": None},
        "turn_attribution": {"turn_trigger": None}, "codex_error_info": None, "response_id": None, "cwd": None,
    },
}


#: The first byte of a JSON value of each Python type a fast mark may keep.
_FIRST = {str: b'"', dict: b"{"}


def _unbuilt(key: str, *kinds: type) -> bytes:
    """The first bytes a payload field left unbuilt may start with: the JSON kinds its check keeps
    whatever the value (`kinds`, which must be among its fast mark's types: a value of another kind,
    or one whose check looks inside it, a list of blocks, sends the line the ordinary way)."""
    types, numbers = checks.PAYLOAD[key].fast[:2]
    if numbers or not set(kinds) <= set(types):
        raise ValueError(f"{key}: its check does not keep every {kinds} unread")
    return b"".join(_FIRST[t] for t in kinds)


#: The lean reading of `inspect` (`read_rollout_bytes(lean=True)`, `Reader.selective`): also the
#: `response_item` lines (two lines in five, most of a rollout's bytes) are projected: their type,
#: role and ids built, their long fields (texts, tool calls' arguments and input, tool outputs,
#: reasoning and any field no check reads) validated and never built. A projected item's record
#: holds the projection; `Rollout.full_item` reads the whole item again where a transcript needs
#: its texts (`transcript.codex`: a user message's role, the summarisation call's reply). The
#: checks' fast marks on content blocks are held by `checks.TREE` on the projection
#: (`load._read_native`): a line that fails them goes the ordinary way.
LEAN_SPEC: dict[str, Any] = {
    **NATIVE_SPEC, "type": SELECTIVE_TYPES | {"response_item"},
    "payload": {
        **NATIVE_SPEC["payload"], "id": None,
        "content": [{"type": checks.BLOCK["type"].fast, "text": _FIRST[str]}],
        "output": _unbuilt("output", str, dict),
        **{key: _unbuilt(key, str) for key in ("arguments", "input", "name")},
    },
}
