"""`dask_local_vs_jobs`: `sessiontools inspect` over the corpus with `--executor dask` on a
LocalCluster of 2 workers / the same command with `--jobs 2` (a process pool of 2), end to end as
users run it (the LocalCluster's start and stop included). Interleaved, best of a few rounds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 2
CLI = Path(sys.executable).parent / "sessiontools"


def _wall(args: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}  # a LocalCluster, not a remote one
    t = time.perf_counter()
    proc = subprocess.run([str(CLI), *args], capture_output=True, env=env)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"sessiontools {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
    return dt


def dask_local_vs_jobs(corpus: Path) -> dict[str, float]:
    inspect = ["inspect", str(corpus), "--format", "json", "-o", os.devnull, "--jobs", "2"]
    t_jobs = t_dask = float("inf")
    for _ in range(ROUNDS):
        t_jobs = min(t_jobs, _wall(inspect))
        t_dask = min(t_dask, _wall([*inspect, "--executor", "dask"]))
    print(f"inspect --jobs 2 {t_jobs:.2f}s; --executor dask (LocalCluster, 2 workers) {t_dask:.2f}s")
    return {"dask_local_vs_jobs": round(t_dask / t_jobs, 3)}
