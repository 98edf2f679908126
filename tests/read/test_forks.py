"""`--jobs` workers forked directly (`read.forks`, for inspect in a one-thread process): no process
pool's imports, `jobs - 1` workers besides this process, results in file order as with one process,
a worker's exception raised here, a worker that dies an error naming it (never a hang)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import SAMPLES

FORKED = """
import os, sys
from sessiontools.read import parallel, workers

def pid(source):
    return os.getpid()

pid.selective_read = True  # (as inspect's function: the forked path)
assert workers._start_method() == "fork", workers._threads()
files = sys.argv[1:]
one = [(r.path, r.readable, r.agent) for r in parallel.map_sessions(files, pid, jobs=1)]
got = list(parallel.map_sessions(files, pid, jobs=3))
assert [(r.path, r.readable, r.agent) for r in got] == one
pool = [m for m in ("multiprocessing", "concurrent.futures", "logging", "pickle") if m in sys.modules]
print(os.getpid(), len({r.value for r in got if r.value is not None} - {os.getpid()}), *pool)
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def test_inspect_forks_jobs_minus_one_workers_without_a_process_pool() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    assert len(files) > 6
    proc = _run(FORKED, *files)
    assert proc.returncode == 0, proc.stderr
    parent, workers, *imported = proc.stdout.split()
    assert 1 <= int(workers) <= 2  # (3 jobs: this process and at most two workers)
    assert imported == []


DIES = """
import os, sys
from sessiontools.read import parallel

PARENT = os.getpid()

def dies(source):
    if os.getpid() != PARENT:
        os._exit(9)
    return 1

dies.selective_read = True
try:
    list(parallel.map_sessions(sys.argv[1:], dies, jobs=2))
except RuntimeError as exc:
    print(exc)
"""


def test_a_worker_that_dies_is_an_error_naming_its_exit_status() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    proc = _run(DIES, *files)
    assert proc.returncode == 0, proc.stderr
    assert "worker process ended unexpectedly (exit status 9)" in proc.stdout, proc.stdout


FAILS = """
import os, sys
from sessiontools.errors import UsageError
from sessiontools.read import parallel

PARENT = os.getpid()

def fails(source):
    if os.getpid() != PARENT:
        raise UsageError("from a worker")
    return 1

fails.selective_read = True
try:
    list(parallel.map_sessions(sys.argv[1:], fails, jobs=2))
except UsageError as exc:
    print(f"{exc}|{type(exc.__cause__).__name__}|{'in fails' in str(exc.__cause__)}")
"""


def test_a_workers_exception_is_raised_here_with_its_traceback() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    proc = _run(FAILS, *files)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "from a worker|RemoteTraceback|True", proc.stdout
