"""`dask_local_vs_jobs`: `sessiontools inspect` over the corpus with `--executor dask` on a
LocalCluster of 2 workers / the same command with `--jobs 2` (a process pool of 2), end to end as
users run it (the LocalCluster's start and stop included). Interleaved, best of a few rounds."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.cli import _wall as wall

ROUNDS = 2


def _wall(args: list[str]) -> float:
    # a LocalCluster, not a remote one
    return wall(args, {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"})


def dask_local_vs_jobs(corpus: Path) -> dict[str, float]:
    inspect = ["inspect", str(corpus), "--format", "json", "-o", os.devnull, "--jobs", "2"]
    t_jobs = t_dask = float("inf")
    for _ in range(ROUNDS):
        t_jobs = min(t_jobs, _wall(inspect))
        t_dask = min(t_dask, _wall([*inspect, "--executor", "dask"]))
    print(f"inspect --jobs 2 {t_jobs:.2f}s; --executor dask (LocalCluster, 2 workers) {t_dask:.2f}s")
    return {"dask_local_vs_jobs": round(t_dask / t_jobs, 3)}


def _cpu(procs: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """CPU seconds so far: of this process's waited-for children (`us`: the runs timed), of the
    scheduler (`procs[0]`), and of the workers with their nannies (the rest, with descendants)."""
    import resource

    import psutil

    def tree(pid: int) -> float:
        try:
            p = psutil.Process(pid)
            return sum(sum(q.cpu_times()[:2]) for q in [p, *p.children(recursive=True)])
        except psutil.Error:
            return 0.0

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"us": kids.ru_utime + kids.ru_stime, "scheduler": tree(procs[0].pid),
            "workers": sum(tree(p.pid) for p in procs[1:])}


def dask_running_vs_jobs(corpus: Path, rounds: int = 5) -> dict[str, float]:
    """`dask_running_vs_jobs`: `inspect --executor dask` against a 2-worker cluster started before
    the clock (a `dask scheduler` and 2 single-threaded `dask worker` processes, reached through
    DASK_SCHEDULER_ADDRESS) / `inspect --jobs 2`, wall time; the median of `rounds` interleaved pairs'
    ratios. The cluster's workers are warmed by one untimed run. `dask_running_floor`: the same ratio
    if Dask cost nothing but the client's fixed start (`client_fixed_cost`, measured each round).
    Where the time goes is printed beside it: the CPU of each run's processes (`--jobs 2`'s; the Dask
    client's, the scheduler's, the workers'). `dask_local_startup_s`: timed inside a fresh process,
    `import distributed` and a LocalCluster of 2 workers started and closed (reported, no target)."""
    import tempfile

    inspect = ["inspect", str(corpus), "--format", "json", "-o", os.devnull, "--jobs", "2"]
    base = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    bindir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as d:
        sched_file = Path(d) / "scheduler.json"
        quiet = dict(base, DASK_DISTRIBUTED__LOGGING__DISTRIBUTED="error")
        procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                   "--no-dashboard", "--scheduler-file", str(sched_file)],
                                  env=quiet, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        try:
            deadline = time.time() + 60
            while not sched_file.exists() and time.time() < deadline:
                time.sleep(0.1)
            import json

            time.sleep(0.2)
            address = json.loads(sched_file.read_text())["address"]
            for _ in range(2):
                procs.append(subprocess.Popen([str(bindir / "dask"), "worker", address, "--nworkers", "1",
                                               "--nthreads", "1", "--no-dashboard"], env=quiet,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            from distributed import Client

            with Client(address, timeout=60) as c:
                c.wait_for_workers(2, timeout=60)
            env = dict(base, DASK_SCHEDULER_ADDRESS=address)
            wall([*inspect, "--executor", "dask"], env)  # warm: the workers' imports
            cpu: list[dict[str, float]] = []
            for _ in range(rounds):
                before = _cpu(procs)
                t_jobs = wall(inspect, base)
                middle = _cpu(procs)
                t_dask = wall([*inspect, "--executor", "dask"], env)
                after = _cpu(procs)
                cpu.append({"jobs2": middle["us"] - before["us"], "t_jobs": t_jobs, "t_dask": t_dask,
                            "fixed": client_fixed_cost(address, base),
                            **{k: after[k] - middle[k] for k in ("us", "scheduler", "workers")}})
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
    code = ("import time,logging;t=time.perf_counter();from distributed import LocalCluster\n"
            "with LocalCluster(n_workers=2,threads_per_worker=1,processes=True,host='127.0.0.1',"
            "dashboard_address=None,silence_logs=logging.CRITICAL): pass\nprint(time.perf_counter()-t)")
    starts = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=base, check=True)
        starts.append(float(out.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(c[k] for c in cpu) for k in cpu[0]}
    ratio = statistics.median(c["t_dask"] / c["t_jobs"] for c in cpu)
    floor = statistics.median((c["t_jobs"] + c["fixed"]) / c["t_jobs"] for c in cpu)
    print(f"inspect --jobs 2 {med['t_jobs']:.2f}s; --executor dask on a running 2-worker cluster {med['t_dask']:.2f}s "
          f"(wall, warm, medians of {rounds} interleaved pairs, load {os.getloadavg()[0]:.1f}); "
          f"LocalCluster start+stop {min(starts):.2f}s")
    print(f"  CPU per run (medians): --jobs 2 {med['jobs2']:.2f}s (process and workers); Dask: the client "
          f"{med['us']:.2f}s, the scheduler {med['scheduler']:.2f}s, the workers and their nannies "
          f"{med['workers']:.2f}s (their background polling included: it grows with the wall time)")
    print(f"  the floor: the client's import of distributed and its connection, {med['fixed']:.2f}s of wall before "
          f"any task can start, added to --jobs 2's run: {floor:.2f}")
    return {"dask_running_vs_jobs": round(ratio, 3), "dask_running_floor": round(floor, 3),
            "dask_client_fixed_s": round(med["fixed"], 3), "dask_local_startup_s": round(min(starts), 3)}


#: A fresh process importing the client the way the CLI does and connecting (nothing submitted).
CLIENT_PROBE = ("import sys,time;t=time.perf_counter()\nfrom sessiontools.read.executors import import_client\n"
                "with import_client()(sys.argv[1], set_as_default=False) as c: c.nthreads()\n"
                "print(time.perf_counter()-t)")


def client_fixed_cost(address: str, env: dict[str, str]) -> float:
    """Wall seconds from a fresh interpreter to a client connected to `address` (the CLI's import,
    `executors.import_client`): what a Dask run pays before its first task and `--jobs` does not."""
    out = subprocess.run([sys.executable, "-c", CLIENT_PROBE, address], capture_output=True, text=True, env=env,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])
