"""The Pi reader's selective reading (issue 28): for a command that does not replay (`inspect`), each
line decoded into the few fields such a command reads, in one pass in C (`read._native.pi_project_lines`,
_pi.c), instead of every entry whole.

Every line is still validated as JSON, and every field the reader's checks (`read.pi.checks`) look at
is still checked, in place: a field a command reads is built when it passes its check's fast mark;
any other checked field (message content and its blocks, summaries, details, tool output) is only
checked for its kind (a string, an object, a list whose objects' fields are strings, ...) and never
built. A line with a field off its mark, or anything the scanner is not sure orjson reads the same
way, goes the reader's ordinary way (`load._Objects.add_line`), so the diagnostics, the recovered
glued lines and the error classes are the ordinary reading's. The projected entries pass the checks
as they are, so the session is the ordinary one but for the fields left out.

A session read this way (`Session.selective`) holds no message content: it is for counting (inspect),
never for replay or tokens. tests/read/test_pi_selective.py holds inspect's report of every sample,
fixture and real file read this way equal to the ordinary reading's, and the projections equal
orjson's values restricted to the declared fields.
"""

from __future__ import annotations

from typing import Any

from sessiontools.read.pi import checks

#: The top-level fields of an entry, beyond the checked ones, that inspect reads (built whole).
ENTRY_READ = frozenset({"type", "id", "parentId", "firstKeptEntryId", "tokensBefore", "fromHook", "targetId",
                        "label", "name", "firstKeptEntryIndex"})
#: The message fields inspect reads (usage is projected whole, with its checks; of its cost, the total).
MESSAGE_READ = frozenset({"role", "model", "provider", "stopReason", "errorMessage"})
COST_READ = frozenset({"total"})

_STR, _OBJ = frozenset({str, type(None)}), frozenset({dict, type(None)})
_LIST, _CONTENT = frozenset({list, type(None)}), frozenset({str, list, type(None)})


def _kind(check: Any, read: bool, blocks: dict[str, Any]) -> Any:
    """The spec value of one checked field (`_pi.c`): its check's fast mark when it is read (built,
    kept only when it passes), else the kind its mark keeps, checked and not built (a number against the mark itself)."""
    fast = check.fast
    types, numbers = fast[0], fast[1]
    if read:
        return fast
    if numbers:
        return ("mark", fast)
    if types == _STR:
        return "str"
    if types == _OBJ:
        return "object"
    if types == _LIST:
        return ("list", blocks)
    if types == _CONTENT:
        return ("content", blocks)
    raise AssertionError(f"no check-only kind for the fast mark {fast!r}")  # (a new check: give it one)


def _fields(table: dict[str, Any], read: frozenset[str], blocks: dict[str, Any]) -> dict[str, Any]:
    return {k: _kind(c, k in read, blocks) for k, c in table.items()}


def _spec() -> dict[str, Any]:
    blocks = _fields(checks._BLOCK, frozenset(), {})
    usage: dict[str, Any] = {"*": None, **_fields(checks._USAGE, frozenset(checks._USAGE), {}),
                             "cost": _fields(checks._COST, COST_READ, {})}
    message = {**_fields(checks._MESSAGE, MESSAGE_READ, blocks), "usage": usage}
    top: dict[str, Any] = _fields(checks._ENTRY, ENTRY_READ, blocks)
    for fields in checks._BY_TYPE.values():
        for k, v in _fields(fields, ENTRY_READ, blocks).items():
            assert top.get(k, v) == v, k  # (a field checked alike wherever it is checked)
            top[k] = v
    top.update(message=message, systemMessage=message, usage=usage,
               replacement={"content": _kind(checks._REPLACEMENT["content"], False, {})})
    for k in ENTRY_READ - top.keys():
        top[k] = None  # read, not checked: built whole
    return top


#: The spec of `read._native.pi_project_lines` (see _pi.c): made from the checks' own tables.
SPEC = _spec()
