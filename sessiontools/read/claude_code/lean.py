"""The Claude Code reader without the long texts (issue 28): for a command that reads no message
text (`inspect`: counts, paths, compactions, usage), each line is validated as strict JSON by the C
scanner (`read._native.project_lines`, sessiontools/read/_project.c) and built whole except the
fields below, which are validated and never made into Python objects: tool results and tool inputs
(`toolUseResult`, a block's `content` and `input`), thinking and its signature, image and redacted
data, a usage's fields but its counts and `cache_creation`. Most of a transcript's bytes are these.

A skipped field the checks read (`checks._BLOCK`) must be of a JSON kind its check's fast mark
keeps (a tool result's `content` a string or a list, `thinking` a string), so the line's checks
drop nothing there; the loader then holds the rest to the checks' fast marks (`checks.TREE`) and
sends any other line the ordinary way (orjson, `check_line`, the careful fallback), as it does every
line the scanner is not sure orjson reads the same way. The records' fields, the tree, the usage and
the diagnostics are the ordinary way's; only the skipped texts are missing from `Record.raw`
(tests/read/test_claude_lean.py holds `inspect`'s output equal both ways).
"""

from __future__ import annotations

from typing import Any

from sessiontools.read.claude_code import checks

try:
    from sessiontools.read._native import project_lines
except ImportError:  # not built on this machine: the ordinary way, the same records
    project_lines = None

#: The first byte of a JSON value of each Python type a fast mark may keep.
_FIRST = {str: b'"', list: b"[", dict: b"{", type(None): b"n", bool: b"tf"}


def _skipped(table: dict[str, Any], key: str) -> bytes:
    """The first bytes a skipped value of `key` may start with: any (b"") when no check reads it,
    else the JSON kinds its check keeps whatever the value (its fast mark's types, numbers never)."""
    check = table.get(key)
    if check is None:
        return b""
    fast = check.fast
    if fast[1] or not fast[0] <= _FIRST.keys():
        raise ValueError(f"{key}: a check with numbers or odd types cannot be judged unbuilt")
    return b"".join(_FIRST[t] for t in sorted(fast[0], key=str))


#: What the records, the transcript and `inspect` read of a line (`records.parse_record`,
#: `transcript.claude_code`, `claude_usage`, `claude_paths`, `claude_attachments`), besides every
#: field the checks read: built whole. Any other field is validated and not built.
_LINE_READ = ("type", "uuid", "parentUuid", "logicalParentUuid", "subtype", "sessionId", "isSidechain",
              "entrypoint", "isCompactSummary", "isMeta", "isApiErrorMessage", "attachment", "summary")
_BLOCK_READ = ("type", "text", "name", "id", "tool_use_id")
#: The checked fields of a content block that no count reads: validated, not built.
_BLOCK_SKIPPED = ("content", "thinking")
#: What `transcript.claude_usage.usage_of` reads of a usage besides the checked counts (the
#: server tool counts, service tier, iterations, ... are validated, not built).
_USAGE_READ = ("cache_creation",)


def _built(*tables: Any, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    return dict.fromkeys([*(k for t in tables for k in t), *extra])


#: `project_lines`' spec (None: built whole; bytes: validated, not built, its first byte one of
#: these; {spec}: an object projected by spec, null kept, any other value the ordinary way; [spec]:
#: a list whose objects are projected by spec, other values built whole; a key not in a spec is
#: validated and not built).
LEAN_SPEC: dict[str, Any] = {
    **_built(checks._LINE, extra=_LINE_READ),
    "message": {**_built(checks._MESSAGE), "usage": _built(checks._USAGE, extra=_USAGE_READ), "content": [{
        **_built(_BLOCK_READ), **{k: _skipped(checks._BLOCK, k) for k in _BLOCK_SKIPPED}}]},
}
