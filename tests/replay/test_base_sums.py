"""The replay's `BaseSums` (prefix sums over the base path for a compaction's summarised messages)
give the same records as measuring each message, on every sample and real session."""

from __future__ import annotations

import pytest

from sessiontools.read import load_session
from sessiontools.replay import replay_session
from sessiontools.replay.memo import BaseSums
from sessiontools.replay.session import run_record
from tests.conftest import SAMPLES, shared_sessions


def _records(path, monkeypatch, use_sums: bool) -> list:  # type: ignore[no-untyped-def]
    if not use_sums:
        monkeypatch.setattr(BaseSums, "usable", staticmethod(lambda base: False))
    out = []
    s = load_session(path)
    for window in (8000, 24000, 200000):
        prs = replay_session(s, windows=[window], reserves=[1000, 2000], keeps=[500, 2000, 20000], policy=None,
                             all_leaves=True)
        out += [run_record(pr, r) for pr in prs for r in pr.runs]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("path", [*sorted(SAMPLES.glob("*.jsonl")), *shared_sessions()], ids=lambda p: p.name)
def test_base_sums_change_no_record(path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fast = _records(path, monkeypatch, True)
    slow = _records(path, monkeypatch, False)
    assert fast == slow
    assert any(r["compactions"] for r in fast) or path.stat().st_size < 20000
