"""SessionTree.path: the fast walk (no cycle) and the careful one (a parent cycle cut at the first repeat)."""

from __future__ import annotations

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
