"""The per-file function of `parallel.map_sessions` on a Dask distributed cluster.

The same `_one(path, fn, ...)` that `--jobs` runs in a process pool is submitted as one Dask task
per file; results are gathered in file order, so output is byte-identical to `--jobs 1`. Dask does
the scheduling (no queue of ours): `on_done` is called as each future completes, in whatever order
the cluster finishes them, so a progress bar follows the cluster rather than the file order.

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
    with LocalCluster(n_workers=max(1, cluster.workers), threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR) as lc, \
            Client(lc, set_as_default=False) as client:
        yield client


def dask_map(
    cluster: DaskCluster, task: Callable[..., Any], paths: Sequence[str], args: tuple[Any, ...],
    on_done: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """`task(path, *args)` for every path on the cluster, yielded in path order.

    A result is yielded as soon as it and every result before it are in; `on_done()` is called once
    per finished future, in completion order. A task that raises re-raises here.
    """
    from distributed import as_completed

    with dask_client(cluster) as client:
        futures = [client.submit(task, p, *args, pure=False) for p in paths]
        index = {f.key: i for i, f in enumerate(futures)}
        ready: dict[int, Any] = {}
        nxt = 0
        for fut in as_completed(futures, loop=client.loop):
            ready[index[fut.key]] = fut.result()
            fut.release()
            if on_done is not None:
                on_done()
            while nxt in ready:
                yield ready.pop(nxt)
                nxt += 1
