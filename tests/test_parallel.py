"""`parallel.map_sessions` in processes: file order kept, largest files started first, same results as one process."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read import parallel
from tests.conftest import SAMPLES


def test_two_processes_give_the_results_of_one_in_file_order() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    assert len(files) > 2
    fn = partial(inspect_source)
    one = list(parallel.map_sessions(files, fn, jobs=1))
    two = list(parallel.map_sessions(files, fn, jobs=2))
    assert [r.path for r in two] == files
    assert [(r.value, r.readable, r.error, r.agent) for r in two] == [(r.value, r.readable, r.error, r.agent) for r in one]


def test_a_failing_file_stops_the_pool_and_raises_in_the_parent(tmp_path: Path) -> None:
    import pytest

    from sessiontools.errors import UsageError

    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    with pytest.raises(UsageError):
        list(parallel.map_sessions(files, partial(inspect_source, leaf="no-such-leaf"), jobs=2))



FROZEN = """
import gc, sys
from sessiontools.read import parallel, workers

def frozen_objects(session):
    return gc.get_freeze_count()

assert workers._start_method() == "fork", workers._threads()
before = gc.get_freeze_count()
results = list(parallel.map_sessions(sys.argv[1:], frozen_objects, jobs=2))
print(before, gc.get_freeze_count(), *[r.value for r in results])
"""


def test_forked_workers_start_with_the_parents_objects_frozen() -> None:
    """A forked worker's collector does not walk (and copy, page by page) the objects it inherited:
    they are frozen when the pool forks, and the parent unfreezes them at once (issue 28: `--jobs 2`
    cost 0.2-0.45 s more CPU than `--jobs 1`). In a fresh interpreter: one thread, so workers fork."""
    import subprocess
    import sys

    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))[:4]
    proc = subprocess.run([sys.executable, "-c", FROZEN, *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    before, after, *workers = map(int, proc.stdout.split())
    assert before == after == 0
    assert len(workers) == 4 and all(n > 10_000 for n in workers), workers


WARM = """
import os, sys
from sessiontools.read import parallel, workers

def pid(session):  # (what a file's first analysis imports: inherited by the workers, not imported again)
    inherited = "sessiontools.report.svg" in sys.modules
    import sessiontools.report.svg  # noqa: F401
    return os.getpid(), inherited

pid.selective_read = True  # (as inspect: the functions the parent warms up with)
assert workers._start_method() == "fork", workers._threads()
print(os.getpid(), *[f"{r.path}={r.value[0]}:{r.value[1]}" for r in parallel.map_sessions(sys.argv[1:], pid, jobs=2)])
"""


def test_the_parent_reads_the_smallest_file_before_forking() -> None:
    """With forked workers the parent does the smallest file first (for inspect), so that what every worker
    imported and built for its first file (the reader, the transcript, the price table) is done once
    and inherited (issue 28); then it is one of the `jobs` processes: `--jobs 2` forks one worker, and
    the parent takes the batches that worker has not started (the smallest, from the end)."""
    import os
    import subprocess
    import sys

    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl") if "pi" in p.name)[:5]
    assert len(files) == 5
    proc = subprocess.run([sys.executable, "-c", WARM, *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    parent, *done = proc.stdout.split()
    who = dict(item.rsplit("=", 1) for item in done)
    assert list(who) == files
    order = sorted(range(len(files)), key=lambda i: -os.path.getsize(files[i]))  # largest first, ties in file order
    assert who.pop(files[order[-1]]) == f"{parent}:False"
    assert all(w.endswith(":True") for w in who.values()), who
    pids = {w.split(":")[0] for w in who.values()}
    assert len(pids - {parent}) == 1, who  # one worker forked for two jobs
    assert who[files[order[0]]] != f"{parent}:True"  # the largest file, submitted first: the worker's
    assert os.getpid() != int(parent)


def test_with_a_process_pool_the_parent_takes_the_batches_no_worker_started(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Where this process may not fork (other threads: a forkserver's pool), inspect's parent is still
    one of the `jobs` processes (`_take_one`); results as with one process, in file order."""
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    fn = partial(inspect_source)
    one = list(parallel.map_sessions(files, fn, jobs=1))
    taken: list[bool] = []
    real = parallel._take_one

    def spy(*args):  # type: ignore[no-untyped-def]
        taken.append(real(*args))
        return taken[-1]

    monkeypatch.setattr(parallel, "_start_method", lambda: "forkserver")
    monkeypatch.setattr(parallel, "_take_one", spy)
    two = list(parallel.map_sessions(files, fn, jobs=2))
    assert [(r.path, r.value, r.readable, r.error) for r in two] == [(r.path, r.value, r.readable, r.error) for r in one]
    assert taken  # (asked: whether it got a batch depends on the worker's pace)


class _Cycle:
    """An object that only the cyclic collector can free (it refers to itself), with some weight."""

    def __init__(self) -> None:
        self.me = self
        self.weight = [[k] for k in range(50)]


def test_a_files_cyclic_garbage_is_collected_after_its_pause() -> None:
    """Each file's work runs with the cyclic collector paused (`parallel._one`), so a collection does
    not walk the file's objects while they live; the pause ends with the file, and the cyclic garbage
    each file's work left is freed by the collections that follow: a run over many files does not
    grow without bound."""
    import gc
    import weakref

    left: list[weakref.ref[_Cycle]] = []

    def leaves_a_cycle(source: object) -> int:
        c = _Cycle()
        left.append(weakref.ref(c))
        return len(c.weight)

    assert gc.isenabled()
    files = [str(SAMPLES / "pi0-pair-a.jsonl")] * 300
    results = list(parallel.map_sessions(files, leaves_a_cycle, jobs=1))
    assert gc.isenabled()
    assert [r.value for r in results] == [50] * 300
    freed = sum(r() is None for r in left)
    assert freed >= 250, freed  # (all but the garbage of the last files, made since the last collection)
