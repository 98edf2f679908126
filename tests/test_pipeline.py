"""`sessiontools.read.pipeline`: files finished in order while later ones are started, and the CLI's
one-process path (`parallel.map_sessions`) pipelining estimate-error's workers to the same results."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sessiontools.analysis.estimate import EstimateErrorOptions
from sessiontools.analysis.estimate.run import SessionWorker
from sessiontools.read import parallel
from sessiontools.read.pipeline import SWITCH_INTERVAL, in_order, short_switch_interval
from tests.conftest import SAMPLES


class _Job:
    def __init__(self, log: list[str], name: str, ready: bool) -> None:
        self.log, self.name, self._ready = log, name, ready
        log.append(f"start {name}")

    def ready(self) -> bool:
        return self._ready


def test_in_order_finishes_in_order_as_soon_as_ready_or_over_the_lookahead() -> None:
    log: list[str] = []
    readiness = {"a": False, "b": True, "c": False, "d": False, "e": True}

    def started():  # type: ignore[no-untyped-def]
        for name, ready in readiness.items():
            yield name, (None if name == "b" else _Job(log, name, ready))

    def finish(name: str, job: object) -> str:
        log.append(f"finish {name}")
        return name

    assert list(in_order(started(), finish, lookahead=2)) == list(readiness)
    # a is not ready: b (no job) and c are started; over the lookahead, a is finished (waiting), then
    # b at once; c waits until d is started and the queue is over the lookahead again.
    assert log == ["start a", "start c", "finish a", "finish b", "start d", "start e", "finish c", "finish d",
                   "finish e"]


def test_switch_interval_is_lowered_then_restored() -> None:
    before = sys.getswitchinterval()
    with short_switch_interval():
        assert sys.getswitchinterval() == min(before, SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before


class _Plain:
    """The same worker without `start`: map_sessions calls it file by file, no pipeline."""

    def __init__(self, worker: SessionWorker) -> None:
        self.worker = worker

    def __call__(self, session: object) -> object:
        return self.worker(session)


def test_the_one_process_pipeline_gives_the_file_by_file_results(tmp_path: Path) -> None:
    files = sorted(SAMPLES.glob("*.jsonl"))[:6]
    for f in files:
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "broken.jsonl").write_bytes(b'{"type":"session"\n\x00\x01 not json\n')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    paths = sorted(tmp_path.iterdir())
    worker = SessionWorker(EstimateErrorOptions(estimators=("chars4", "o200k")), None)
    piped = list(parallel.map_sessions(paths, worker, jobs=1))
    plain = list(parallel.map_sessions(paths, _Plain(worker), jobs=1))
    assert [r.path for r in piped] == [str(p) for p in paths]
    for a, b in zip(piped, plain, strict=True):
        assert (a.error, a.readable, a.diagnostics, a.unsupported) == (b.error, b.readable, b.diagnostics, b.unsupported)
        assert (a.value is None) == (b.value is None)
        if a.value is not None:
            assert a.value.frame.equals(b.value.frame) and a.value.session == b.value.session
    assert sum(r.value is not None for r in piped) == len(files)
