"""The entry tree of one session: ids, children, leaves, branch points, labels, paths."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from sessiontools.errors import NoSuchEntry
from sessiontools.jsvalues import js_truthy
from sessiontools.read.pi.entries import Entry, Session
from sessiontools.read.values import number_text


@dataclass(frozen=True, slots=True)
class Path:
    """Entries from the root to a leaf, header excluded. `index` in the docs is a position in it."""

    leaf_id: str | None
    entries: tuple[Entry, ...]
    cut_by_cycle: bool = False

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self.entries[i]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)

    def index_of(self, entry_id: str) -> int:
        """Position of the entry with this id in the path; raises NoSuchEntry."""
        for i, e in enumerate(self.entries):
            if e.id == entry_id:
                return i
        raise NoSuchEntry(f"entry {entry_id!r} is not on this path")


class SessionTree:
    """Index over a session's entries, resolving links the way Pi does (the last duplicate id wins)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.entries: tuple[Entry, ...] = session.entries
        self.by_id: dict[str, Entry] = dict(zip([e.id for e in self.entries], self.entries, strict=True))  # (the last wins)
        self.by_id.pop(None, None)  # type: ignore[call-overload]

    @cached_property
    def children(self) -> dict[str | None, list[Entry]]:
        """Children of each entry id in file order; key None holds the roots (and orphans)."""
        out: dict[str | None, list[Entry]] = {}
        for e in self.entries:
            parent = e.parent_id if e.parent_id in self.by_id else None
            out.setdefault(parent, []).append(e)
        return out

    @cached_property
    def _parent_ids(self) -> list[str | None]:
        return [e.parent_id for e in self.entries]

    @cached_property
    def leaves(self) -> list[Entry]:
        """Entries that no other entry names as parent, in file order."""
        # (an entry's id that another names is a key of `children`: no lookup in `by_id` needed)
        named = set(self._parent_ids)
        named.discard(None)
        return [e for e in self.entries if e.id not in named]

    @cached_property
    def branch_points(self) -> list[Entry]:
        """Entries with more than one child, in file order."""
        pids = self._parent_ids
        named = set(pids)
        named.discard(None)
        if len(pids) - pids.count(None) == len(named):
            return []  # no id is named twice as a parent: no entry has two children
        counts = Counter(pids)  # (the children of an id, as `children` groups them)
        return [e for e in self.entries if e.id is not None and counts.get(e.id, 0) > 1]

    @cached_property
    def labels(self) -> dict[str, str]:
        """Current label of each labelled entry id (an empty label clears it), as Pi's index keeps them."""
        out: dict[str, str] = {}
        for e in [e for e in self.entries if e.type == "label"]:
            target = e.data.get("targetId")
            if not isinstance(target, str):
                continue
            label = e.data.get("label")
            if label:
                out[target] = str(label)
            else:
                out.pop(target, None)
        return out

    @cached_property
    def session_name(self) -> str | None:
        """The latest `session_info` name (trimmed; empty clears it)."""
        infos = [e for e in self.entries if e.type == "session_info"]
        if not infos:
            return None
        name = infos[-1].data.get("name")
        return name.strip() or None if isinstance(name, str) else None

    @property
    def default_leaf(self) -> Entry | None:
        """The entry Pi resumes at: the last entry of the file (Pi's branch is empty if its id is no
        usable key, see `path`; its context still starts there, see `context_path`)."""
        return self.entries[-1] if self.entries else None

    def context_path(self) -> Path:
        """The entries Pi's SessionManager builds the resumed session's context from
        (`buildSessionContext(entries, leafId, byId)`, what it sends), which is not always its branch
        (`path()`: `getBranch()`, what compaction sees). Both start from the last entry's raw id: the
        branch is empty unless that id is truthy in JavaScript, but the context is empty only for an
        explicit `"id": null`; any other id that is no key (missing, "", 0, false) falls back to the
        last entry itself. So a last entry without an id is resumed with its ancestry as the context
        and an empty branch."""
        last = self.default_leaf
        if last is None or ("id" in last.data and last.data["id"] is None):
            return Path(None, ())
        return self.path(last)

    def resolve(self, ref: str, path: Sequence[Entry] | None = None) -> Entry:
        """An entry by id, or `#N` for the entry at index N of `path` (default: the default path)."""
        if ref.startswith("#"):
            seq = path if path is not None else self.path().entries
            n = number_text(ref[1:], int)
            if n is None:
                raise NoSuchEntry(f"{ref!r}: '#' must be followed by a path index")
            if not 0 <= n < len(seq):
                raise NoSuchEntry(f"{ref}: the path has {len(seq)} entries (indices 0..{len(seq) - 1})")
            return seq[n]
        entry = self.by_id.get(ref)
        if entry is None:
            raise NoSuchEntry(f"no entry with id {ref!r} in {self.session.path}")
        return entry

    def path(self, leaf: str | Entry | None = None) -> Path:
        """The path from the root to `leaf` (an id, `#N`, an entry, or None for Pi's default leaf)."""
        if leaf is None:
            start = self.default_leaf
            if start is not None and not js_truthy(start.data.get("id")):
                # Pi resumes at the last entry's id (`getBranch`: `startId ? byId.get(startId) : undefined`):
                # without a truthy one ("", 0, false, null, none) its branch is empty.
                return Path(None, ())
        elif isinstance(leaf, Entry):
            start = leaf
        else:
            start = self.resolve(leaf)
        if start is None:
            return Path(None, ())
        out: list[Entry] = []
        by_id, cur = self.by_id, start
        step, add, steps = by_id.get, out.append, len(by_id) + 1  # (bound once: a step per entry of the path)
        while cur is not None and steps:  # no cycle: at most one step per id
            add(cur)
            steps -= 1
            parent = cur.parent_id
            cur = step(parent) if parent else None
        if cur is None:
            out.reverse()
            return Path(start.id, tuple(out), False)
        out = []  # longer than the ids: a parent cycle; walk again, cutting at the first repeat
        seen: set[int] = set()
        cur = start
        cut = False
        while cur is not None:
            if id(cur) in seen:
                cut = True
                break
            seen.add(id(cur))
            out.append(cur)
            cur = self.by_id.get(cur.parent_id) if cur.parent_id else None
        out.reverse()
        return Path(start.id, tuple(out), cut)

    def all_paths(self) -> list[Path]:
        """One path per leaf, in the file order of the leaves."""
        return [self.path(leaf) for leaf in self.leaves]

