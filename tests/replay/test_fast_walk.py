"""The replay walk's inlined common case (`_Sim._walk_plain`) gives the same runs, request by request,
as the general step (`_Sim._request`), on every sample and real session, at windows that overflow."""

from __future__ import annotations

import pytest

from sessiontools.read import load_session
from sessiontools.replay import replay_session
from sessiontools.replay.records import RequestPoint
from sessiontools.replay.session import run_record
from sessiontools.replay.simulate import _Sim
from tests.conftest import SAMPLES, shared_sessions


def _runs(path, monkeypatch, fast: bool) -> tuple[list, list, int]:  # type: ignore[no-untyped-def]
    taken = []
    plain, walk_plain = _Sim._plain, _Sim._walk_plain
    monkeypatch.setattr(_Sim, "_plain", lambda self: fast and plain(self))
    monkeypatch.setattr(_Sim, "_walk_plain", lambda self: (taken.append(1), walk_plain(self))[1])
    runs, records = [], []
    s = load_session(path)
    for window in (8000, 24000, 200000):
        prs = replay_session(s, windows=[window], reserves=[1000, 2000], keeps=[500, 2000, 20000], policy="pi-0",
                             all_leaves=True)
        runs += [r for pr in prs for r in pr.runs]
        records += [run_record(pr, r) for pr in prs for r in pr.runs]
    monkeypatch.undo()
    return runs, records, len(taken)


@pytest.mark.parametrize("path", [*sorted(SAMPLES.glob("*.jsonl")), *shared_sessions()], ids=lambda p: p.name)
def test_fast_walk_changes_no_run(path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fast_runs, fast_records, _ = _runs(path, monkeypatch, True)
    slow_runs, slow_records, slow_taken = _runs(path, monkeypatch, False)
    assert slow_taken == 0
    assert fast_runs == slow_runs
    assert all(type(p) is RequestPoint for r in fast_runs for p in r.requests)  # not plain tuples (equal as tuples)
    assert fast_records == slow_records


def test_fast_walk_is_taken_and_overflows() -> None:
    """The inlined path runs on a plain 0.x sample, and through its overflow branch at a small window."""
    s = load_session(SAMPLES / "pi0-pair-a.jsonl")
    (pr,) = replay_session(s, windows=[8000], reserves=[1000], keeps=[2000], policy="pi-0")
    sim = _Sim(pr.workload, pr.truth, pr.runs[0].settings)
    assert sim._plain()
    assert sim.walk() == pr.runs[0]
