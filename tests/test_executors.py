"""`--executor dask`: the same per-file work on a Dask cluster, output byte-identical to `--jobs 1`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

REPLAY = ["replay", str(SAMPLES), "--context-window", "16000,24000", "--reserve", "3000", "--keep-recent", "4000",
          "--format", "json"]


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    """A LocalCluster of 2 single-threaded worker processes, shared by this module's tests."""
    import distributed  # in the `test` extra: a missing one fails here, it is not skipped
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as lc:
        yield lc


def test_replay_on_dask_gives_the_json_of_jobs_1(cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*REPLAY, "-o", str(tmp_path / "one.json"), "--jobs", "1"]) == 0
    err_one = capsys.readouterr().err.replace(str(tmp_path / "one.json"), "OUT")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    assert main([*REPLAY, "-o", str(tmp_path / "dask.json"), "--executor", "dask", "--jobs", "2"]) == 0
    err_dask = capsys.readouterr().err.replace(str(tmp_path / "dask.json"), "OUT")
    assert (tmp_path / "dask.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    assert err_dask == err_one, "notes and errors come in file order too"
    assert len(cluster.workers) == 2


def test_export_on_its_own_local_cluster_writes_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No scheduler address: the command starts (and stops) a LocalCluster of --jobs workers."""
    import dask.config
    import distributed  # noqa: F401
    import duckdb

    assert main(["export", str(SAMPLES), "-o", str(tmp_path / "one"), "--jobs", "1"]) == 0
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    with dask.config.set({"scheduler-address": None}):
        assert main(["export", str(SAMPLES), "-o", str(tmp_path / "dask"), "--executor", "dask", "--jobs", "2"]) == 0
    for table in ("sessions", "requests", "compactions", "summaries"):
        q = "SELECT * FROM read_parquet('{}/" + table + "/**/*.parquet', hive_partitioning = true) ORDER BY ALL"
        assert duckdb.sql(q.format(tmp_path / "dask")).fetchall() == duckdb.sql(q.format(tmp_path / "one")).fetchall()


def test_dask_map_keeps_file_order_and_reports_each_completion(cluster) -> None:  # type: ignore[no-untyped-def]
    from sessiontools.read.executors import DaskCluster, dask_map

    done: list[int] = []
    got = list(dask_map(DaskCluster(cluster.scheduler_address), _slow_identity, [3, 0, 2, 1, 0], (),
                        on_done=lambda: done.append(1)))
    assert got == [3, 0, 2, 1, 0] and len(done) == 5


def _slow_identity(x: int) -> int:
    import time

    time.sleep(0.05 * x)  # later files finish first: the order must still be the files'
    return x


LEAN_RUN = """
import sys, yaml
from sessiontools.cli import main
assert main(["inspect", sys.argv[1], "--format", "json", "-o", sys.argv[2], "--executor", "dask"]) == 0
print(sorted(m for m in ("numpy", "jinja2") if m in sys.modules), yaml.safe_load.__module__)
"""


def test_the_commands_dask_client_is_imported_the_lean_way(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`--executor dask` imports distributed through `executors.import_client` (no numpy or jinja2,
    the C YAML loader): an earlier `from distributed import ...` in `dask_map` had made the first
    import the ordinary one (issue 28: 0.2-0.3 s more of the client's CPU before its first task)."""
    import os
    import subprocess

    env = dict(os.environ, DASK_SCHEDULER_ADDRESS=cluster.scheduler_address)
    proc = subprocess.run([sys.executable, "-c", LEAN_RUN, str(SAMPLES), str(tmp_path / "out.json")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "yaml"], proc.stdout
    assert (tmp_path / "out.json").stat().st_size > 0


def test_cluster_from_environment_or_dask_config(monkeypatch: pytest.MonkeyPatch) -> None:
    import dask.config
    import distributed  # noqa: F401

    from sessiontools.cli.executor import dask_cluster

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert dask_cluster("processes", 2, []) is None
    with dask.config.set({"scheduler-address": None}):
        c = dask_cluster("dask", 3, [])
        assert c.address is None and c.workers == 3  # a LocalCluster of --jobs workers
    with dask.config.set({"scheduler-address": "tcp://10.1.2.3:8786"}):
        assert dask_cluster("dask", None, []).address == "tcp://10.1.2.3:8786"
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9999")
    assert dask_cluster("dask", None, []).address == "tcp://127.0.0.1:9999"


def test_without_dask_the_option_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    rc = main(["inspect", str(SAMPLES / "pi0-tiny.jsonl"), "--executor", "dask"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "pip install 'sessiontools[dask]'" in err[0]


def test_batches_cover_every_file_once_largest_first() -> None:
    from sessiontools.read.executors import MAX_BATCH, batches

    for n, threads in [(0, 2), (1, 2), (5, 2), (272, 2), (10_000, 4), (7, 100)]:
        groups = batches([0] * n, threads)
        assert sorted(i for g in groups for i in g) == list(range(n))
        assert all(0 < len(g) <= MAX_BATCH for g in groups)
    assert len(batches([0] * 272, 2)) == 16  # about 8 tasks per worker thread
    sizes = [10, 5_000_000, 20, 3_000_000, 30] + [1000] * 40
    groups = batches(sizes, 2)
    assert groups[0] == [1] and groups[1] == [3]  # the big files alone, first
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    weights = [sum(sizes[i] for i in g) for g in groups]
    assert weights == sorted(weights, reverse=True)  # the small tasks last


MALLOC_PROBE = """
import resource, sys
from sessiontools.read.executors import worker_malloc

def faults(tuned):
    def work():
        for _ in range(200):
            b = bytearray(1 << 20)  # a 1 MiB block, freed at once: what reading a file's bytes does
            b[::4096] = b"x" * 256
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    if tuned:
        with worker_malloc():
            work()
    else:
        work()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults(True)
print(faults(False), faults(True), faults(False))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_nannys_malloc_setting_no_longer_maps_every_large_block_during_a_task() -> None:
    """Under MALLOC_TRIM_THRESHOLD_=65536 (what a Dask nanny gives its workers) every block over
    128 KiB was its own mmap, faulted in page by page; inside `worker_malloc` it is reused, and
    after it the worker's settings are back (the same faults as before)."""
    import os
    import platform
    import subprocess

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    out = subprocess.run([sys.executable, "-c", MALLOC_PROBE], env=env, capture_output=True, text=True, check=True)
    plain, tuned, again = map(int, out.stdout.split())
    assert plain > 200 * 200, out.stdout  # 256 pages touched per block, most of them faulted
    assert tuned * 20 < plain, out.stdout
    assert again * 2 > plain, "the nanny's setting is back after the task"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", MALLOC_PROBE], env=clean, capture_output=True, text=True, check=True)
    plain, tuned, again = map(int, out.stdout.split())
    assert plain * 20 < 200 * 256 and tuned * 20 < 200 * 256, "glibc's own thresholds: nothing to change"


def _freeze_count(path: str) -> tuple[str, int]:
    import gc

    return path, gc.get_freeze_count()


def test_a_dask_batch_runs_with_the_workers_objects_frozen() -> None:
    """A batch on a worker runs inside `workers.frozen_heap`: the objects the worker held when it
    started (its imports, distributed's state) are out of the collector's full passes, and are
    unfrozen when the batch ends."""
    import gc

    from sessiontools.read.executors import _batch

    before = gc.get_freeze_count()
    out = _batch(["a", "b"], _freeze_count, ())
    assert [p for p, _ in out] == ["a", "b"]
    assert all(n > before and n > 1000 for _, n in out), out
    assert gc.get_freeze_count() == before
