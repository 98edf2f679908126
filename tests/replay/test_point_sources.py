"""`read._native.point_sources` (sessiontools/read/_price.c) counts a run's truth sources as
`replay.run_document.source_counts`'s Python rule does (the list of `truth_source`s and its
`list.count` of each of `_SOURCES`): on every run of every sample under a grid, and on odd points and
sources one at a time, where it counts the same or hands the run to Python."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay import replay_source, run_document
from sessiontools.replay.records import RequestPoint, TruthSource
from tests.conftest import SAMPLES, shared_sessions

pytestmark = pytest.mark.skipif(run_document.c_point_sources is None, reason="the C extension is not built here")

SOURCES = run_document._SOURCES


def _rule(requests: list) -> tuple[int, ...]:
    points = [r.truth_source for r in requests]
    return tuple(points.count(s) for s in SOURCES)


def _c(requests: Any) -> Any:
    return run_document.c_point_sources(requests, RequestPoint, SOURCES)


@pytest.mark.parametrize("path", sorted(SAMPLES.rglob("*.jsonl")) + shared_sessions(), ids=lambda p: p.name)
def test_every_sample_runs_sources_are_counted_as_python(path: Path) -> None:
    prs = replay_source(load_source(path), windows=[100000, 24000], reserves=[4000, 16384], keeps=[2000, 20000],
                        policy=None, all_leaves=True)
    for pr in prs:
        for run in pr.runs:
            assert _c(run.requests) == _rule(run.requests) == run_document.source_counts(run)


class _Str(str):
    pass


class _Equal:
    def __eq__(self, o: object) -> bool:
        return True

    __hash__ = object.__hash__


class _Point(RequestPoint):
    @property
    def truth_source(self) -> Any:  # type: ignore[override]
        return TruthSource.MODEL


def test_odd_points_and_sources_are_counted_as_python() -> None:
    """Generated runs of the three sources, then one point's source (or the point) replaced by each odd
    value: the C counts as the rule, or says None (then `source_counts` is the rule's); it takes the
    plain ones and gives up on each odd one that is not a member."""
    rng = random.Random(7)
    base = RequestPoint(0, None, 1.0, TruthSource.MODEL, None, False)
    odd: list[Any] = ["recorded", "model", "provider", _Str("recorded"), None, 0, _Equal(), TruthSource.MODEL]
    for _ in range(200):
        reqs = [base._replace(truth_source=rng.choice(SOURCES)) for _ in range(rng.randint(1, 30))]
        assert _c(reqs) == _rule(reqs)
        assert _c(tuple(reqs)) is None  # not a list
        i = rng.randrange(len(reqs))
        cases = [reqs[:i] + [reqs[i]._replace(truth_source=v)] + reqs[i + 1:] for v in odd]
        cases += [reqs[:i] + [q] + reqs[i + 1:] for q in (tuple(reqs[i]), _Point(*reqs[i]),
                                                           tuple.__new__(RequestPoint, reqs[i][:4]))]
        for case in cases:
            try:
                want: Any = _rule(case)
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                want = type(e)
            member = type(case[i]) is RequestPoint and len(case[i]) == 10 and case[i][3] is TruthSource.MODEL
            assert _c(case) == (want if member else None), (case[i], want)
            try:
                got: Any = run_document.source_counts(replace(_run(), requests=case))
            except Exception as e:  # noqa: BLE001
                got = type(e)
            assert got == want


def _run() -> Any:
    from sessiontools.replay.records import ReplayRun, ReplaySettings

    return ReplayRun(ReplaySettings(1000, 100, 100, "pi-1"))
