"""The per-file function of `parallel.map_sessions` on a Dask distributed cluster.

The same `_one(path, fn, ...)` that `--jobs` runs in a process pool is submitted to Dask, a few
consecutive files per task (`batches`); results are gathered in file order, so output is
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

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import UsageError

INSTALL_HINT = "--executor dask needs Dask: pip install 'sessiontools[dask]' (dask and distributed)"


@dataclass(frozen=True, slots=True)
class DaskCluster:
    """Where to run: a scheduler `address` (tcp://host:8786), else a LocalCluster of `workers`."""

    address: str | None = None
    workers: int = 1


def require_dask() -> None:
    """Raise a one-line `UsageError` (exit 2) naming the extra when Dask is not installed."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@contextmanager
def dask_client(cluster: DaskCluster) -> Iterator[Any]:
    """A `distributed.Client` for `cluster`; a LocalCluster it started is closed on exit."""
    require_dask()
    from distributed import Client, LocalCluster

    if cluster.address:
        with Client(cluster.address, set_as_default=False) as client:
            yield client
        return
    import dask.config

    # forkserver, as the --jobs pool: workers start from a clean process (no inherited threads) and,
    # unlike dask's default spawn, without re-running the main module: a start of 1-5 s, not 8-10.
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver",
                          "distributed.scheduler.worker-saturation": float("inf")}), \
            LocalCluster(n_workers=max(1, cluster.workers), threads_per_worker=1, processes=True,
                         host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as lc, \
            Client(lc, set_as_default=False) as client:
        yield client


#: Files per Dask task: enough tasks for about this many per worker thread (load balance), each
#: task several files when there are many (a task's round trip to the scheduler costs tens of ms).
TASKS_PER_THREAD = 8
MAX_BATCH = 64


def _batch(paths: Sequence[str], task: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
    return [task(p, *args) for p in paths]


def batches(n: int, threads: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) slices of n files: about TASKS_PER_THREAD per thread, at most MAX_BATCH."""
    size = max(1, min(MAX_BATCH, -(-n // max(1, threads * TASKS_PER_THREAD))))
    return [(a, min(n, a + size)) for a in range(0, n, size)]


def dask_map(
    cluster: DaskCluster, task: Callable[..., Any], paths: Sequence[str], args: tuple[Any, ...],
    on_done: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """`task(path, *args)` for every path on the cluster, yielded in path order.

    Consecutive paths are grouped into tasks (`batches`); a result is yielded as soon as it and
    every result before it are in; `on_done()` is called once per file as its task finishes, in
    completion order. A task that raises re-raises here.
    """
    from distributed import as_completed

    with dask_client(cluster) as client:
        threads = sum(client.nthreads().values()) or 1
        spans = batches(len(paths), threads)
        futures = [client.submit(_batch, list(paths[a:b]), task, args, pure=False) for a, b in spans]
        index = {f.key: i for i, f in enumerate(futures)}
        ready: dict[int, list[Any]] = {}
        nxt = 0
        for fut in as_completed(futures, loop=client.loop):
            results = fut.result()
            ready[index[fut.key]] = results
            fut.release()
            if on_done is not None:
                for _ in results:
                    on_done()
            while nxt in ready:
                yield from ready.pop(nxt)
                nxt += 1
