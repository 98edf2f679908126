"""The typed boundary of the Pi reader: every field the toolkit reads from an entry has its type and
range checked here, once, when the file is read (the checks themselves live in `read.values`).

A field that fails is removed from the entry and named in a `file:line: field: reason; dropped`
diagnostic (kind `recovered`: the line is read after a repair, so `--strict` exits 3). Removing is
what Pi itself would come closest to: its code reads `usage.input ?? 0`, `role === "user"`, and so
on, so an absent field is the one shape every consumer already handles. Entries keep their raw
objects (`Entry.data`, for parity with Pi), so the repair is made on those objects in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind
from sessiontools.read.values import (
    MAX_EPOCH_MS,
    a_list,
    amount,
    an_object,
    apply_changes,
    check_fields,
    content,
    count,
    epoch_ms,
    fast_pass,
    optional_object,
    optional_text,
    scan_fields,
    text,
    total_count,
    tree_spec,
)

try:
    from sessiontools.read._native import check_trees
except ImportError:  # not built on this machine: `check_entry` on every object, with the same results
    check_trees = None


def _text_or_ms(v: Any) -> tuple[Any, str | None]:
    """An entry timestamp: an ISO string as Pi writes, or a number of milliseconds."""
    if type(v) is str:
        return v, None
    return epoch_ms(v)


fast_pass(_text_or_ms, (str,), (int, float), 0, MAX_EPOCH_MS)


_ENTRY = {"type": text, "id": optional_text, "parentId": optional_text, "timestamp": _text_or_ms}
_BY_TYPE: dict[str, dict[str, Any]] = {
    "message": {"message": an_object},
    "compaction": {"summary": text, "firstKeptEntryId": optional_text, "tokensBefore": total_count,
                   "usage": an_object, "details": an_object, "systemMessage": an_object},
    "branch_summary": {"summary": text, "fromId": optional_text, "details": an_object},
    "model_change": {"provider": text, "modelId": text},
    "thinking_level_change": {"thinkingLevel": text},
    "custom_message": {"customType": text, "content": content},
    "label": {"targetId": optional_text, "label": optional_text},
    "session_info": {"name": optional_text},
    "context_edit": {"targetId": optional_text, "replacement": optional_object},
}
_MESSAGE = {
    "role": text, "content": content, "model": text, "provider": text, "api": text, "stopReason": text,
    "errorMessage": text, "toolCallId": text, "toolName": text, "responseId": text, "timestamp": epoch_ms,
    "usage": an_object, "command": text, "output": text, "summary": text, "customType": text,
    "tokensBefore": total_count, "fromId": optional_text, "toolsAdded": a_list, "toolsRemoved": a_list,
    "sections": an_object,
}
_USAGE = {"input": count, "output": count, "cacheRead": count, "cacheWrite": count, "totalTokens": count,
          "cost": an_object}
_COST = {"input": amount, "output": amount, "cacheRead": amount, "cacheWrite": amount, "total": amount}
_BLOCK = {"type": text, "text": text, "thinking": text, "name": text, "id": text, "data": text,
          "mimeType": text}


def _null_kept(check: Any) -> Any:
    """`check`, but a null passes as written: Pi keeps a null field and its own code meets it, so the
    exact port must see it too (the toolkit's consumers read a null and a missing field alike)."""
    def kept(v: Any) -> tuple[Any, str | None]:
        return (None, None) if v is None else check(v)
    fast = getattr(check, "fast", None)
    if fast is not None:
        fast_pass(kept, (*fast[0], type(None)), tuple(fast[1]), fast[2], fast[3])
    return kept


def _nulls_kept(checks: dict[str, Any]) -> dict[str, Any]:
    return {k: _null_kept(f) for k, f in checks.items()}


_ENTRY, _MESSAGE, _USAGE, _COST, _BLOCK = map(_nulls_kept, (_ENTRY, _MESSAGE, _USAGE, _COST, _BLOCK))
_BY_TYPE = {t: _nulls_kept(fields) for t, fields in _BY_TYPE.items()}
_REPLACEMENT = _nulls_kept({"content": content})


def _usage(usage: dict[str, Any], where: str) -> list[str]:
    problems = check_fields(usage, _USAGE, where)
    cost = usage.get("cost")
    if cost is not None:
        problems += check_fields(cost, _COST, where + "cost.")
    return problems


def check_entry(obj: dict[str, Any]) -> list[str]:
    """Check one entry object in place; the reasons for what was dropped (empty when all is well)."""
    problems = check_fields(obj, _ENTRY, "")
    t = obj.get("type")
    fields = _BY_TYPE.get(t) if type(t) is str else None
    if fields is None:
        return problems
    problems += check_fields(obj, fields, "")
    if t == "compaction" and type(obj.get("usage")) is dict:
        problems += _usage(obj["usage"], "usage.")
    for key in ("message", "systemMessage"):
        msg = obj.get(key)
        if type(msg) is dict:
            problems += _message(msg, key + ".")
    if t == "custom_message" and type(obj.get("content")) is list:
        problems += _blocks(obj["content"], "content")
    elif t == "context_edit" and obj.get("replacement") is not None:
        problems += check_fields(obj["replacement"], _REPLACEMENT, "replacement.")
    return problems


def _message(msg: dict[str, Any], where: str) -> list[str]:
    problems = check_fields(msg, _MESSAGE, where)
    usage = msg.get("usage")
    if usage is not None:
        problems += _usage(usage, where + "usage.")
    content = msg.get("content")
    if type(content) is list:
        problems += _blocks(content, where + "content")
    for key in ("toolsAdded", "toolsRemoved"):  # (1.x system messages: tools by name)
        if type(msg.get(key)) is list:  # (a null one is kept, like every null field)
            problems += _blocks(msg[key], where + key)
    return problems


def _blocks(content: list[Any], where: str) -> list[str]:
    problems: list[str] = []
    for i, block in enumerate(content):
        if type(block) is dict and (changes := scan_fields(block, _BLOCK)) is not None:
            problems += apply_changes(block, _BLOCK, changes, f"{where}[{i}].")  # (named only then)
    return problems


def check_objects(objects: list[dict[str, Any]], lines: Sequence[int], path: str,
                  only: Sequence[int] | None = None) -> list[Diagnostic]:
    """`check_entry` over a file's entry objects (those at the indexes `only`, when given: the
    others pass as they are, as a selective reading's projections do): one diagnostic per dropped
    field. With the C extension, `check_entry` runs only on the objects `read._native.check_trees`
    does not pass (`TREES`: one of their checked fields is off its check's fast mark), the others
    having nothing it would drop or change."""
    if only is not None:
        picked = [objects[k] for k in only]
        return check_objects(picked, [lines[k] for k in only], path) if picked else []
    todo: Iterable[int] = range(len(objects)) if check_trees is None else check_trees(objects, TREES, TREE)
    diags = []
    for k in todo:
        for why in check_entry(objects[k]):
            diags.append(Diagnostic(path, lines[k], why, DiagnosticKind.RECOVERED))
    return diags


#: The checks above as specs of `read._native.check_trees` (`values.tree_spec`), one per entry type
#: (`TREE`: an entry of another type), nested exactly where `check_entry` checks further.
_BLOCKS = [tree_spec(_BLOCK)]
_USAGE_TREE = tree_spec(_USAGE, cost=tree_spec(_COST))
_MESSAGE_TREE = tree_spec(_MESSAGE, usage=_USAGE_TREE, content=_BLOCKS, toolsAdded=_BLOCKS, toolsRemoved=_BLOCKS)
_PER_TYPE: dict[str, dict[str, Any]] = {"compaction": {"usage": _USAGE_TREE}, "custom_message": {"content": _BLOCKS},
                                        "context_edit": {"replacement": tree_spec(_REPLACEMENT)}}
TREE = tree_spec(_ENTRY)
TREES = {t: tree_spec({**_ENTRY, **fields}, message=_MESSAGE_TREE, systemMessage=_MESSAGE_TREE, **_PER_TYPE.get(t, {}))
         for t, fields in _BY_TYPE.items()}
assert all(not set(_ENTRY) & set(fields) for fields in _BY_TYPE.values())  # (merged above: no field twice)
