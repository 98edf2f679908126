"""The truth fit's one-pass contexts of a 0.x path without compactions equal the incremental
builder's (`transcript.pi.incremental`), on every sample and real session path read as 0.x."""

from __future__ import annotations

import pytest

from sessiontools.read import load_session
from sessiontools.replay.truth import _contexts_incremental, _contexts_v0_linear, chars4_counter
from sessiontools.transcript.pi.tree import SessionTree
from tests.conftest import SAMPLES, shared_sessions


@pytest.mark.parametrize("path", [*sorted(SAMPLES.glob("*.jsonl")), *shared_sessions()], ids=lambda p: p.name)
def test_linear_contexts_equal_incremental(path) -> None:  # type: ignore[no-untyped-def]
    count = chars4_counter("0")
    for p in SessionTree(load_session(path)).all_paths():
        entries = [e for e in p.entries if e.type != "compaction"]  # what a path without compactions holds
        size = {id(e): sum(count(m) for m in ([e.message] if e.message else [])) + 1 for e in entries}
        positions = {i: None for i, e in enumerate(entries) if e.role == "assistant"}
        linear = _contexts_v0_linear(entries, positions, size)
        generic = _contexts_incremental(entries, "0", positions, size)
        assert [(i, lst[:n], n, t) for i, lst, n, t in linear] == [(i, lst[:n], n, t) for i, lst, n, t in generic]
        assert linear or not positions
