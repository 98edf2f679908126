"""Bring entries of any format version to the current shape, as Pi's `migrateSessionEntries` does.

- v1 -> v2: entries get ids and `parentId` links in file order; a compaction's
  `firstKeptEntryIndex` (an index into the file's entries, header = 0) becomes `firstKeptEntryId`.
  Pi draws random ids; we assign deterministic ones, `v1-<index>`, so that results are reproducible
  and `v1-293` is the entry a v1 `firstKeptEntryIndex: 293` points at.
- v2 -> v3: message role `hookMessage` becomes `custom`.
- 1.x additions (system messages, `context_edit`, compaction `systemMessage`/`usage`) need no
  migration: they are read as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.pi.entries import KNOWN_ENTRY_TYPES, KNOWN_ROLES, Entry, Header
from sessiontools.read.values import count

CURRENT_VERSION = 3


def v1_id(index: int) -> str:
    """The deterministic id we give the v1 entry at file index `index` (header = 0)."""
    return f"v1-{index}"


def header_version(header: dict[str, Any] | None, objects: Sequence[dict[str, Any]]) -> int:
    """The format version a file was written in: the header's `version`, absent meaning 1."""
    if header is not None:
        version, why = count(header.get("version", 1), 1000)
        return 1 if why is not None or version is None else version
    # No header (Pi would refuse the file): infer from the entries themselves.
    return CURRENT_VERSION if any("id" in o for o in objects) else 1


def migrate_objects(objects: list[dict[str, Any]], version: int) -> list[tuple[int, str]]:
    """Migrate the non-header entry objects in place from `version` to the current one.

    `objects[k]` is the file entry with index k + 1 (the header being index 0). Returns
    (position in `objects`, reason) for every reference the migration could not resolve.
    """
    problems: list[tuple[int, str]] = []
    if version < 2:
        prev: str | None = None
        for k, obj in enumerate(objects):
            index = k + 1
            obj["id"] = v1_id(index)
            obj["parentId"] = prev
            prev = obj["id"]
            if obj.get("type") == "compaction" and "firstKeptEntryIndex" in obj:
                target = obj.pop("firstKeptEntryIndex")
                # Pi assigns ids in order, so only already-visited entries (<= this one) have one.
                if isinstance(target, int) and not isinstance(target, bool) and 1 <= target <= index:
                    obj["firstKeptEntryId"] = v1_id(target)
                else:
                    problems.append((k, f"v1 compaction firstKeptEntryIndex {target!r} names no earlier entry; nothing is kept"))
    if version < 3:
        for obj in objects:
            if obj.get("type") == "message":
                msg = obj.get("message")
                if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                    msg["role"] = "custom"
    return problems


def make_header(obj: dict[str, Any], line: int) -> Header:
    version = obj.get("version", 1)
    return Header(
        id=obj["id"],
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        cwd=obj.get("cwd") if isinstance(obj.get("cwd"), str) else None,
        timestamp=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None,
        line=line,
        data=obj,
    )


def make_entries(objects: Sequence[dict[str, Any]], lines: Sequence[int]) -> tuple[Entry, ...]:
    out = []
    for k, (obj, line) in enumerate(zip(objects, lines, strict=True)):
        t = obj.get("type")
        eid = obj.get("id")
        pid = obj.get("parentId")
        out.append(
            Entry(
                t if type(t) is str else "<missing>",
                eid if type(eid) is str else None,
                pid if type(pid) is str else None,
                line,
                k + 1,
                obj,
            )
        )
    return tuple(out)


def check_structure(entries: Sequence[Entry], path: str) -> list[Diagnostic]:
    """Notices about entries Pi reads without complaint but that a user should know of.

    Unknown entry types and roles (kept, not fatal), entries without ids, duplicate ids (Pi's index
    keeps the last one), parents that do not exist (Pi treats the entry as a root) and parent cycles
    (Pi would loop forever; we cut the walk).
    """
    diags: list[Diagnostic] = []
    unknown_types: dict[str, list[int]] = {}
    unknown_roles: dict[str, list[int]] = {}
    first_line: dict[str, int] = {}
    # One pass: a parent that always precedes its child in the file (what Pi writes) and no
    # duplicate id mean no cycle and no missing parent, so the slower checks can be skipped.
    ordered = True
    for e in entries:
        t = e.type
        if t not in KNOWN_ENTRY_TYPES:
            unknown_types.setdefault(t, []).append(e.line)
        elif t == "message":
            if e.message is None:
                diags.append(Diagnostic(path, e.line, "message entry without a message object"))
            elif e.role not in KNOWN_ROLES:
                unknown_roles.setdefault(str(e.message.get("role")), []).append(e.line)
        if ordered and e.parent_id is not None and e.parent_id not in first_line:
            ordered = False
        eid = e.id
        if eid is None:
            diags.append(Diagnostic(path, e.line, f"{t} entry has no id; nothing can link to it"))
            continue
        if eid in first_line:
            ordered = False  # a duplicate id re-links earlier children: check properly
            diags.append(
                Diagnostic(
                    path, e.line, f"duplicate id {eid!r} (first at line {first_line[eid]}); Pi links to the last one"
                )
            )
        else:
            first_line[eid] = e.line
    for kind, found in (("entry type", unknown_types), ("message role", unknown_roles)):
        for name, lines in found.items():
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            diags.append(Diagnostic(path, lines[0], f"unknown {kind} {name!r} kept as is{more}"))
    if not ordered:
        by_id = {e.id: e for e in entries if e.id is not None}
        for e in entries:
            if e.parent_id is not None and e.parent_id not in by_id:
                diags.append(
                    Diagnostic(path, e.line, f"parent {e.parent_id!r} does not exist; the entry is treated as a root")
                )
        diags.extend(_find_cycles(entries, by_id, path))
    return diags


def _find_cycles(entries: Iterable[Entry], by_id: dict[str, Entry], path: str) -> list[Diagnostic]:
    """Parent links that loop, following links as Pi resolves them (by id, the last duplicate wins)."""
    state: dict[int, int] = {}  # id(entry) -> 1 on the current walk, 2 known acyclic or reported
    diags = []
    for start in entries:
        if state.get(id(start)):
            continue
        walk: list[Entry] = []
        cur: Entry | None = start
        while cur is not None and not state.get(id(cur)):
            state[id(cur)] = 1
            walk.append(cur)
            cur = by_id.get(cur.parent_id) if cur.parent_id is not None else None
        if cur is not None and state.get(id(cur)) == 1:
            ring = walk[[id(w) for w in walk].index(id(cur)):]
            ids = " -> ".join(repr(w.id) for w in ring)
            diags.append(
                Diagnostic(path, min(w.line for w in ring), f"parent cycle {ids}; paths through it are cut there")
            )
        for w in walk:
            state[id(w)] = 2
    return diags
