"""SessionTree.path: the fast walk (no cycle) and the careful one (a parent cycle cut at the first repeat)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read import session_from_records
from sessiontools.transcript.pi.tree import SessionTree


def _msg(i: str, parent: str | None) -> dict:  # type: ignore[type-arg]
    return {"type": "message", "id": i, "parentId": parent, "timestamp": "t",
            "message": {"role": "user", "content": i}}


def test_a_chain_is_walked_to_its_root() -> None:
    s = session_from_records([{"type": "session", "id": "s", "version": 3},
                              _msg("a", None), _msg("b", "a"), _msg("c", "b")])
    p = SessionTree(s).path()
    assert [e.id for e in p] == ["a", "b", "c"] and not p.cut_by_cycle


def test_a_parent_cycle_is_cut_at_the_first_repeat() -> None:
    s = session_from_records([{"type": "session", "id": "s", "version": 3},
                              _msg("a", "c"), _msg("b", "a"), _msg("c", "b"), _msg("d", "c")])
    p = SessionTree(s).path()
    assert [e.id for e in p] == ["a", "b", "c", "d"] and p.cut_by_cycle
    p = SessionTree(s).path("b")
    assert [e.id for e in p] == ["c", "a", "b"] and p.cut_by_cycle


def test_duplicate_ids_follow_the_last_one() -> None:
    s = session_from_records([{"type": "session", "id": "s", "version": 3},
                              _msg("a", None), _msg("x", "a"), _msg("x", "a"), _msg("c", "x")])
    p = SessionTree(s).path()
    assert [e.line for e in p] == [2, 4, 5] and not p.cut_by_cycle


_IDS = st.sampled_from(["a", "b", "c", "d", "", None, 0, "x"])  # (0: not a string, so no id)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_IDS, _IDS, st.sampled_from(["message", "label", "custom"])), max_size=12))
def test_leaves_branch_points_and_index_are_the_childrens(rows: list[tuple[Any, Any, str]]) -> None:
    """The tree's leaves and branch points (counted from the parent ids) are what its `children`
    groups say, and `by_id` is the last entry of each id, over duplicate, empty, missing and
    non-string ids, orphans and cycles."""
    records = [{"type": t, "id": i, "parentId": p} for i, p, t in rows]
    tree = SessionTree(session_from_records([{"type": "session", "id": "s", "version": 3}, *records]))
    children = tree.children
    has_child = {pid for pid in children if pid is not None}
    assert tree.leaves == [e for e in tree.entries if e.id is None or e.id not in has_child]
    assert tree.branch_points == [e for e in tree.entries
                                  if e.id is not None and len(children.get(e.id, ())) > 1]
    last = {}
    for e in tree.entries:
        if e.id is not None:
            last[e.id] = e
    assert tree.by_id == last and all(tree.by_id[k] is v for k, v in last.items())
