"""A 0.x path's messages built in C (`read._native.pi_path_messages`, read/_pi_path.c) are the Python
loop's (`transcript.pi.neutral._PathBuilder`): the same messages (every field, Pi's own message object
itself), entry positions, spans and first slots, on every sample and real session and on generated
entries the C must leave to the loop (odd roles, data, timestamps, subclasses), whose errors are the
loop's too."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.pi import neutral
from tests.conftest import SAMPLES, shared_sessions

native = pytest.importorskip("sessiontools.read._native")
if not hasattr(native, "pi_path_messages"):
    pytest.skip("the C extension predates pi_path_messages", allow_module_level=True)


class _Path:
    def __init__(self, entries: tuple[Any, ...]) -> None:
        self.entries = entries


def _built(entries: tuple[Any, ...], version: str) -> tuple[Any, ...]:
    b = neutral._PathBuilder(_Path(entries), version)  # type: ignore[arg-type]
    # (Pi's own message object itself where the entry holds one; a compaction's summary message is
    # made anew by each build, so by value)
    msgs = [(m.index, m.id, m.line, m.role, m.timestamp, type(m), m.raw is entries[b.of_message[k]].message, m.raw)
            for k, m in enumerate(b.messages)]
    return msgs, b.of_message, b.span, b.first_slot


def _both(entries: tuple[Any, ...], version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def outcome() -> Any:
        try:
            return _built(entries, version)
        except Exception as exc:  # the loop's own error, which the C must leave it to raise
            return type(exc)

    c = outcome()
    with monkeypatch.context() as m:
        m.setattr(neutral, "_c_messages", None)
        py = outcome()
    assert c == py


def _paths(path: Any) -> list[tuple[tuple[Any, ...], str]]:
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.pi.tree import SessionTree

    s = load_source(path)
    tree = SessionTree(s)
    return [(tuple(p.entries), s.pi_version) for p in tree.all_paths()]


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.jsonl")))
def test_every_sample_path_builds_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for entries, version in _paths(SAMPLES / name):
        for v in ("0", version):
            _both(entries, v, monkeypatch)


def test_every_real_session_path_builds_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    files = shared_sessions()
    if not files:
        pytest.skip("../shared/sessions/pi is absent")
    for f in files:
        for entries, version in _paths(f):
            _both(entries, version, monkeypatch)


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _Entry(Entry):
    __slots__ = ()


def _entry(rng: random.Random, i: int) -> Any:
    kind = rng.choice(["message"] * 6 + ["model_change", "custom_message", "branch_summary", "compaction"])
    data: dict[str, Any] = {"type": kind, "id": f"e{i}", "parentId": f"e{i - 1}" if i else None}
    r = rng.random()
    if r < 0.8:
        data["timestamp"] = rng.choice(["2026-01-01T00:00:00Z", _Str("2026"), 5, None])
    if kind == "message":
        role = rng.choice(["user", "assistant", "toolResult", "bashExecution", "system", "weird", None, 7, _Str("user")])
        msg: dict[str, Any] = {"content": "hi"}
        if role is not None:
            msg["role"] = role
        data["message"] = _Dict(msg) if rng.random() < 0.05 else msg
    elif kind == "compaction":
        data.update(summary="s", firstKeptEntryId="e0", tokensBefore=10)
    elif kind == "custom_message":
        data.update(customType="x", content="c", display=True)
    elif kind == "branch_summary":
        data.update(summary="b", fromId="e0")
    cls = _Entry if rng.random() < 0.05 else Entry
    e = cls(kind, data["id"], data["parentId"], i + 1, i + 1, _Dict(data) if rng.random() < 0.05 else data)
    return e


def test_generated_entries_build_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    for _ in range(300):
        entries = tuple(_entry(rng, i) for i in range(rng.randint(0, 30)))
        _both(entries, "0", monkeypatch)


def test_an_unhashable_role_raises_as_the_loop_does(monkeypatch: pytest.MonkeyPatch) -> None:
    e = Entry("message", "a", None, 1, 1, {"type": "message", "message": {"role": ["x"], "content": "c"}})
    _both((e,), "0", monkeypatch)
