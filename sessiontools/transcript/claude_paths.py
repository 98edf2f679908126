"""The paths of a Claude Code transcript file: the resumed path and each sidechain, as lists of records
(`transcript.claude_code` builds the neutral paths from them; its module docstring says how)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from operator import attrgetter

from sessiontools.read.claude_code import ClaudeFile, Record
from sessiontools.read.values import iso_seconds

_LINE = attrgetter("line")  # sort key of records


def _children(nodes: dict[str, Record]) -> dict[str, list[Record]]:
    kids: dict[str, list[Record]] = {}
    for r in nodes.values():
        if r.parent:
            kids.setdefault(r.parent, []).append(r)
    return kids


def _walk(leaf: Record, nodes: dict[str, Record], talk: Sequence[Record] = ()) -> list[Record]:
    """The chain from the root to `leaf`; a boundary whose ``logicalParentUuid`` names a line the file
    does not hold continues from the newest conversation line (`talk`, in file order) written just
    before it (`_written_before`; real 2.1.22 - 2.1.63 files: the pre-compaction history is in the
    file, its last message is not)."""
    chain: list[Record] = []
    seen: set[str] = set()
    cur: Record | None = leaf
    while cur is not None and cur.uuid not in seen and cur.sidechain == leaf.sidechain:
        seen.add(cur.uuid or "")
        chain.append(cur)
        # a boundary (rule: transcript.claude_code, "Compactions")
        boundary = cur.subtype == "compact_boundary" and cur.type == "system"
        nxt = cur.parent or (cur.logical_parent if boundary else None)
        prev = cur
        cur = nodes.get(nxt) if nxt else None
        if cur is None and boundary and nxt and not prev.parent:
            cur = _written_before(prev, talk)
    chain.reverse()
    return chain


#: A compaction's boundary is written within this many seconds of the line before it (its summary
#: request starts at the check before the next request; real files: 1 - 2 minutes). A boundary later
#: than that after the newest line before it was copied from another session when it was resumed (a
#: real 2.0.8 file: 19 hours, its logical parent in the other session's file).
_BOUNDARY_GAP_S = 900.0


def _written_before(r: Record, talk: Sequence[Record]) -> Record | None:
    """The newest of `talk` (conversation lines in file order) before the boundary `r`'s line, on its
    side, when `r` was written within `_BOUNDARY_GAP_S` of it; else None."""
    i = bisect_left(talk, r.line, key=_LINE)
    prev = next((x for x in reversed(talk[:i]) if x.sidechain == r.sidechain), None)
    at, before = iso_seconds(r.timestamp), iso_seconds(prev.timestamp if prev else None)
    return prev if at is not None and before is not None and 0 <= at - before <= _BOUNDARY_GAP_S else None


def _has_tool_result(r: Record) -> bool:
    c = r.content
    return isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c)


def _response_id(r: Record) -> str | None:
    return r.message.get("id") if r.type == "assistant" else None


def _with_side_results(chain: list[Record], kids: dict[str, list[Record]]) -> list[Record]:
    """The chain plus the lines of a parallel tool call that hang off it (see module docstring)."""
    on = {r.uuid for r in chain}
    extra: list[Record] = []
    todo = list(chain)
    while todo:
        r = todo.pop()
        for k in kids.get(r.uuid or "", ()):
            if k.uuid in on or k.sidechain != r.sidechain:
                continue
            side_result = k.type == "user" and _has_tool_result(k) and not kids.get(k.uuid or "")
            sibling = k.type == "assistant" and _response_id(k) is not None and _response_id(k) == _response_id(r)
            if side_result or sibling:
                on.add(k.uuid)
                extra.append(k)
                todo.append(k)
    return sorted(chain + extra, key=_LINE) if extra else chain


def record_paths(f: ClaudeFile, nodes: dict[str, Record]) -> list[tuple[list[Record], bool]]:
    kids = _children(nodes)
    talk = sorted((r for r in nodes.values() if r.type in ("user", "assistant")), key=_LINE)
    main = [r for r in talk if not r.sidechain]
    out: list[tuple[list[Record], bool]] = []
    if main:
        out.append((_with_side_results(_walk(main[-1], nodes, talk), kids), False))
    side_leaves = [r for r in talk if r.sidechain and not any(k.type in ("user", "assistant")
                                                              for k in kids.get(r.uuid or "", []))]
    for leaf in sorted(side_leaves, key=_LINE):
        if _has_tool_result(leaf) and leaf.parent and leaf.parent in nodes and any(
                k.uuid != leaf.uuid for k in kids.get(leaf.parent, [])):
            continue  # a parallel tool result: put back on its sibling's path below
        out.append((_with_side_results(_walk(leaf, nodes, talk), kids), True))
    return out
