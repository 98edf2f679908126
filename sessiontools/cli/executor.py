"""`--executor processes|dask`: where the per-file work of a many-file command runs.

`processes` (default) is the local process pool of `--jobs`. `dask` submits the same per-file
function to a Dask distributed cluster: the one at `DASK_SCHEDULER_ADDRESS` or the dask config's
`scheduler-address` when set, else a LocalCluster of `--jobs` worker processes (127.0.0.1, no
dashboard). Output is byte-identical to `--jobs 1` either way. Only the CLI reads the environment.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import Enum
from typing import Annotated, Any

import typer


class Executor(str, Enum):
    processes = "processes"
    dask = "dask"


ExecutorOpt = Annotated[
    Executor,
    typer.Option("--executor", help="Run the per-file work in local processes (--jobs) or on a Dask cluster: "
                 "DASK_SCHEDULER_ADDRESS or the dask config's scheduler-address, else a LocalCluster of --jobs "
                 "workers. Needs pip install 'sessiontools[dask]'. Output is the same either way."),
]


def scheduler_address(env: Any = None) -> str | None:
    """`DASK_SCHEDULER_ADDRESS`, else the dask config's `scheduler-address` (which dask also fills
    from that variable and its YAML files), else None."""
    env = os.environ if env is None else env
    addr = env.get("DASK_SCHEDULER_ADDRESS")
    if addr:
        return str(addr)
    import dask.config

    value = dask.config.get("scheduler-address", None)
    return str(value) if value else None


def dask_cluster(executor: Executor | str | None, jobs: int | None, files: Sequence[Any]) -> Any:
    """The `executors.DaskCluster` for `--executor dask` (None for processes); exit 2 without Dask."""
    if executor is None or Executor(executor) != Executor.dask:
        return None
    from sessiontools.read.executors import DaskCluster, require_dask
    from sessiontools.read.parallel import default_jobs

    require_dask(load=False)  # installed? (distributed itself is imported as the cluster starts)
    return DaskCluster(address=scheduler_address(), workers=jobs or default_jobs(files))
