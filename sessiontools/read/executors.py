"""The per-file function of `parallel.map_sessions` on a Dask distributed cluster.

The same `_one(path, fn, ...)` that `--jobs` runs in a process pool is submitted to Dask, files
grouped by size into tasks, largest first (`batches`); results are gathered in file order, so output is
byte-identical to `--jobs 1`. Dask does the scheduling (no queue of ours): `on_done` is called as
each future completes, in whatever order the cluster finishes them, so a progress bar follows the
cluster rather than the file order.

Where the cluster is comes from the caller (`DaskCluster.address`; the CLI reads
`DASK_SCHEDULER_ADDRESS` / the dask config): core code reads no environment. Without an address a
`LocalCluster` of `workers` single-threaded processes is started on 127.0.0.1 and closed after.
Workers of a remote cluster need sessiontools installed (same version) and must be able to open
the files: use paths on a shared file system or fsspec URLs (`s3://...`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import UsageError
from sessiontools.read.values import number_text

INSTALL_HINT = "--executor dask needs Dask: pip install 'sessiontools[dask]' (dask and distributed)"


@dataclass(frozen=True, slots=True)
class DaskCluster:
    """Where to run: a scheduler `address` (tcp://host:8786), else a LocalCluster of `workers`."""

    address: str | None = None
    workers: int = 1


def require_dask(*, load: bool = True) -> None:
    """Raise a one-line `UsageError` (exit 2) naming the extra when Dask is not installed.

    `load=False` only looks the packages up (importing distributed takes about a second, which
    `dask_client` overlaps with the start of its workers)."""
    if not load:
        import importlib.util

        try:
            found = all(importlib.util.find_spec(m) is not None for m in ("dask", "distributed"))
        except (ImportError, ValueError):
            found = False
        if not found:
            raise UsageError(INSTALL_HINT)
        return
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@contextmanager
def dask_client(cluster: DaskCluster, preload: Sequence[str] = ()) -> Iterator[Any]:
    """A `distributed.Client` for `cluster`; a LocalCluster it started is closed on exit.

    `preload`: modules the LocalCluster's workers need (the task's), imported once in the
    forkserver they are forked from rather than by each worker."""
    if not cluster.address:
        # Workers' imports in the forkserver (another core) while this process imports distributed.
        require_dask(load=False)
        _start_forkserver(preload)
    require_dask(load=False)
    Client = import_client()
    from distributed import LocalCluster

    if cluster.address:
        with Client(cluster.address, set_as_default=False) as client:
            yield client
        return
    import logging

    import dask.config

    # forkserver, as the --jobs pool: workers start from a clean process (no inherited threads),
    # with distributed, the task's modules and the main module already imported, and the
    # forkserver's excepthook (`workers._quiet_spawn_after_shutdown`) in each of them.
    settings = dask.config.set(LOCAL_CLUSTER_CONFIG)
    interrupted = False
    try:
        with LocalCluster(n_workers=max(1, cluster.workers), threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address="127.0.0.1:0",
                          silence_logs=logging.CRITICAL) as lc, \
                Client(lc, set_as_default=False) as client:
            yield client
    except KeyboardInterrupt:
        # The settings stay: a cluster interrupted while it starts goes on starting nannies in its
        # event loop's thread, and each reads the start method when it starts its worker. With
        # distributed's default back in force that was a `multiprocessing.spawn` child, which
        # printed CPython's traceback (SemLock._rebuild: FileNotFoundError, or EOFError) after
        # "interrupted". The process is on its way out: nothing else reads them.
        interrupted = True
        stop_local_cluster()
        raise
    finally:
        if not interrupted:  # closed the polite way (done, a task's error, a consumer that stopped)
            settings.__exit__(None, None, None)


#: The LocalCluster's settings. `multiprocessing-method`: its workers are forked from our forkserver.
#: `worker-saturation`: every task is sent to a worker at once (files are grouped into tasks already).
LOCAL_CLUSTER_CONFIG = {"distributed.worker.multiprocessing-method": "forkserver",
                        "distributed.scheduler.worker-saturation": float("inf")}


def stop_local_cluster() -> None:
    """After a Ctrl-C: the LocalCluster's worker processes terminated and waited for, and the
    cluster forgotten, instead of closed the polite way. A cluster interrupted while it starts or
    stops cannot be closed (distributed's exit hook then printed an AssertionError traceback), and a
    worker still being spawned when this process exits fails to rebuild its semaphore and prints a
    FileNotFoundError traceback. Ctrl-C is ignored meanwhile (the terminal sends it to the whole
    group; a second one must not interrupt the cleanup)."""
    import multiprocessing
    import signal

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        previous = None
    try:
        try:
            from distributed.deploy.spec import SpecCluster

            for c in list(SpecCluster._instances):
                SpecCluster._instances.discard(c)  # (its exit hook would close it: not after a Ctrl-C)
        except (ImportError, AttributeError):
            pass
        # A nanny whose worker is stopped while it starts fails, and asyncio would log the failed
        # task ("Task exception was never retrieved", a traceback) when it is collected: after a
        # Ctrl-C nothing of the cluster's is worth a line, so its loggers are quiet from here on.
        import logging

        for name in ("asyncio", "distributed", "tornado"):
            logging.getLogger(name).disabled = True
        # The cluster's nannies go on starting (and restarting) workers for a moment: stop every
        # child until none is left for a quiet 0.3 s (at most about 5 s).
        import time

        deadline = time.monotonic() + 5
        while True:
            children = multiprocessing.active_children()
            for proc in children:
                try:
                    proc.terminate()
                except (OSError, ValueError):
                    pass
            for proc in children:
                proc.join(timeout=max(0.1, deadline - time.monotonic()))
            if time.monotonic() > deadline:
                break
            time.sleep(0.3)
            if not children and not multiprocessing.active_children():
                break
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


#: Packages `import distributed` loads that a client never uses: numpy (a receive buffer allocator;
#: `bytearray` is its fallback) and jinja2 (notebook widgets' templates). Together about a sixth of
#: the import's CPU (issue 28: the client's import is the gap between a running cluster and --jobs 2).
CLIENT_SKIPS = ("numpy", "jinja2")


def import_client() -> Any:
    """`distributed.Client`, imported without `CLIENT_SKIPS` when this process has not loaded them
    (each is blocked during the import only: a later `import numpy` works as usual, and numpy's
    serialisers are registered lazily by distributed when numpy is imported)."""
    import sys

    if "distributed" in sys.modules:
        from distributed import Client

        return Client
    blocked = [m for m in CLIENT_SKIPS if m not in sys.modules]
    for m in blocked:
        sys.modules[m] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        with _libyaml_safe_load():
            from distributed import Client
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    finally:
        for m in blocked:
            if sys.modules.get(m, False) is None:
                del sys.modules[m]
    return Client


@contextmanager
def _libyaml_safe_load() -> Iterator[None]:
    """`yaml.safe_load` by PyYAML's C loader (libyaml, when PyYAML was built with it) while dask and
    distributed read their configuration files on import: the same documents, parsed in a tenth of the
    pure-Python loader's time (about 0.05 s of the client's import, issue 28)."""
    try:
        import yaml
    except ImportError:
        yield
        return
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        yield
        return
    pure = yaml.safe_load

    def safe_load(stream: Any) -> Any:
        return yaml.load(stream, Loader=loader)  # noqa: S506 (the safe loader, in C)

    yaml.safe_load = safe_load
    try:
        yield
    finally:
        yaml.safe_load = pure


def _start_forkserver(preload: Sequence[str]) -> None:
    """Start the forkserver now, importing what every worker needs, while this process goes on
    importing and starting the scheduler. `__main__` stays in the list (multiprocessing's default):
    without it each worker re-runs the main module (for the CLI, every command's imports)."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    modules = ["__main__", "distributed", *preload]
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(dict.fromkeys(modules)))
    from sessiontools.read.workers import start_forkserver_ignoring_sigint

    start_forkserver_ignoring_sigint()  # a server already running keeps its own preload


#: Files per Dask task: enough tasks for about this many per worker thread (load balance), each
#: task several files when there are many (a task's round trip to the scheduler costs tens of ms).
TASKS_PER_THREAD = 8
MAX_BATCH = 64
#: What a file costs beyond its bytes (opening it, a result to send back), in bytes of input.
FILE_COST = 16384


def _batch(paths: Sequence[Any], task: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
    from sessiontools.read.workers import (
        frozen_heap,  # (the worker's imports, distributed's state: not walked)
    )

    with worker_malloc(), frozen_heap():
        return [task(p, *args) for p in paths]


#: glibc's malloc settings (`mallopt` parameters): the trim and mmap thresholds.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: While a task runs: where glibc's dynamic thresholds settle in a process that allocates large
#: blocks (the mmap threshold grows to its 32 MiB ceiling, the trim threshold to twice that).
TASK_MMAP_THRESHOLD = 32 << 20
TASK_TRIM_THRESHOLD = 64 << 20
#: glibc's mmap threshold when dynamic adjustment is off (a `MALLOC_*_` variable is set).
_GLIBC_MMAP_THRESHOLD = 128 * 1024
_MALLOC_LOCK = threading.Lock()
_MALLOC_TASKS = [0]


@contextmanager
def worker_malloc() -> Iterator[None]:
    """glibc's large-block thresholds raised while a batch runs on a Dask worker, then put back as the
    worker was started, with the freed memory returned to the system (`malloc_trim`).

    A nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (distributed's
    `pre-spawn-environ`, so that a worker hands memory back between tasks). Setting it turns off
    glibc's dynamic thresholds: every allocation over 128 KiB (a file's bytes, a large list) became
    its own mmap, zero-filled page by page and unmapped when freed. Reading a third of the bench
    corpus took 17x the page faults of a --jobs worker and 0.2 s more system time (issue 28). Only
    a process started that way is changed (the variable is the worker's own process state, not
    configuration); elsewhere, or without glibc, this does nothing."""
    import os

    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    libc = _glibc() if trim is not None else None
    if libc is None or trim is None:
        yield
        return
    with _MALLOC_LOCK:
        _MALLOC_TASKS[0] += 1
        if _MALLOC_TASKS[0] == 1:
            libc.mallopt(_M_MMAP_THRESHOLD, TASK_MMAP_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, TASK_TRIM_THRESHOLD)
    try:
        yield
    finally:
        with _MALLOC_LOCK:
            _MALLOC_TASKS[0] -= 1
            if _MALLOC_TASKS[0] == 0:  # the last batch running on this worker: its settings back
                libc.mallopt(_M_TRIM_THRESHOLD, number_text(trim, int, 128 * 1024))
                libc.mallopt(_M_MMAP_THRESHOLD, number_text(os.environ.get("MALLOC_MMAP_THRESHOLD_"), int,
                                                            _GLIBC_MMAP_THRESHOLD))
                libc.malloc_trim(0)


@functools.cache
def _glibc() -> Any:
    """The C library when it is glibc (with `mallopt` and `malloc_trim`), else None."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def batches(sizes: Sequence[int], threads: int) -> list[list[int]]:
    """Groups of indices into `sizes` (bytes per file), one Dask task each, largest files first.

    Files are taken in decreasing size and added to a group until it holds about 1 /
    (threads * TASKS_PER_THREAD) of the input (a larger file is a task alone) or MAX_BATCH files:
    big files start first and the last tasks are small, so the workers finish together."""
    n = len(sizes)
    weights = [max(0, s) + FILE_COST for s in sizes]
    order = sorted(range(n), key=lambda i: -weights[i])
    target = sum(weights) / max(1, threads * TASKS_PER_THREAD)
    groups: list[list[int]] = []
    group: list[int] = []
    load = 0.0
    for i in order:
        if group and (load + weights[i] > target or len(group) >= MAX_BATCH):
            groups.append(group)
            group, load = [], 0.0
        group.append(i)
        load += weights[i]
    if group:
        groups.append(group)
    return groups


def dask_map(
    cluster: DaskCluster, task: Callable[..., Any], paths: Sequence[Any], args: tuple[Any, ...],
    on_done: Callable[[], None] | None = None, *, sizes: Sequence[int] | None = None,
    preload: Sequence[str] = (),
) -> Iterator[Any]:
    """`task(path, *args)` for every path on the cluster, yielded in path order.

    Paths are grouped into tasks by `sizes` (bytes per path; equal when not given, see `batches`),
    submitted largest first; a result is yielded as soon as it and every result before it are in;
    `on_done()` is called once per path as its task finishes, in completion order. A task that
    raises re-raises here.
    """
    with dask_client(cluster, preload) as client:  # (imports distributed the lean way: `import_client`)
        from distributed import as_completed

        threads = sum(client.nthreads().values()) or 1
        groups = batches(list(sizes) if sizes is not None else [0] * len(paths), threads)
        futures = [client.submit(_batch, [paths[i] for i in g], task, args, pure=False, priority=len(groups) - k)
                   for k, g in enumerate(groups)]
        index = {f.key: k for k, f in enumerate(futures)}
        ready: dict[int, Any] = {}
        nxt = 0
        # with_results: each task's results are gathered by the client's event loop as it finishes,
        # while this thread hands earlier ones on (not one gather round trip after another here).
        for fut, results in as_completed(futures, loop=client.loop, with_results=True):
            fut.release()
            for i, r in zip(groups[index[fut.key]], results, strict=True):
                ready[i] = r
                if on_done is not None:
                    on_done()
            while nxt in ready:
                yield ready.pop(nxt)
                nxt += 1
