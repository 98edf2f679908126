"""`make bench`: throughput and scaling ratios of sessiontools, each against a baseline measured in
the same run, written to bench/results.json (see the issue "Scale and speed" for the targets)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "inspect_vs_orjson": (">=", 0.5),
    "o200k_vs_tiktoken": (">=", 0.7),
    "warm_vs_cold": (">=", 10),
    "replay_vs_pi_js": ("<=", 1.0),
    "grid25_vs_one": ("<=", 3),
    "dask_local_vs_jobs": ("<=", 1.3),
}


def best_of(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def orjson_baseline(files: list[Path]) -> float:
    """Raw parsing: read each file and orjson.loads every line."""
    def run() -> None:
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        orjson.loads(line)
    return best_of(2, run)


def inspect_time(files: list[Path]) -> float:
    from sessiontools.analysis.inspect import inspect_session
    from sessiontools.read import load_session

    def run() -> None:
        for f in files:
            inspect_session(load_session(f))
    return best_of(2, run)


def replay_times(session_file: Path, window: int) -> tuple[float, float, float]:
    """(one setting, 5 x 5 grid, Node over Pi's functions), seconds."""
    from lab.pi_env import ensure_pi
    from sessiontools.read import load_session
    from sessiontools.replay import replay_session

    def one() -> None:
        replay_session(load_session(session_file), windows=[window], reserves=[16384], keeps=[20000], policy="pi-0")

    def grid() -> None:
        replay_session(load_session(session_file), windows=[window], reserves=[4096, 8192, 16384, 24576, 32768],
                       keeps=[5000, 10000, 20000, 30000, 40000], policy="pi-0")

    # This machine's timings wobble (a shared VM): interleave and keep the best of several runs.
    t_one = t_grid = float("inf")
    for _ in range(4):
        t_one = min(t_one, best_of(2, one))
        t_grid = min(t_grid, best_of(1, grid))
    env = ensure_pi("0")
    js = []
    for _ in range(5):
        out = subprocess.run([str(env.node), str(ROOT / "bench" / "pi_replay.mjs"), str(env.package_dir), str(session_file),
                              str(window), "16384", "20000"], capture_output=True, text=True, check=True)
        js.append(json.loads(out.stdout)["ms"] / 1000)
    return t_one, t_grid, min(js)


def peak_rss(corpus: Path) -> float:
    """Peak RSS (MB) of `sessiontools inspect` over the whole corpus in one process (--jobs 1)."""
    # VmHWM, not getrusage: ru_maxrss survives exec and would report this (large) parent process.
    code = (
        "from sessiontools.cli import main;"
        f"rc=main(['inspect',{str(corpus)!r},'--format','json','-o',{os.devnull!r},'--jobs','1']);"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, default=ROOT / "bench" / "corpus")
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results.json")
    a = ap.parse_args()
    from bench.corpus import build

    t = time.perf_counter()
    files = build(a.corpus, a.mb)
    total = sum(f.stat().st_size for f in files)
    largest = max(files, key=lambda f: f.stat().st_size)
    print(f"corpus: {len(files)} sessions, {total / 1e6:.1f} MB (built/checked in {time.perf_counter() - t:.1f}s)")
    results: dict[str, object] = {}

    t_orjson = t_inspect = float("inf")
    for _ in range(3):  # interleaved, best of each: this VM's speed wanders between runs
        t_orjson = min(t_orjson, orjson_baseline(files))
        t_inspect = min(t_inspect, inspect_time(files))
    results["inspect_vs_orjson"] = round(t_orjson / t_inspect, 3)
    print(f"inspect {total / 1e6 / t_inspect:.0f} MB/s vs raw orjson {total / 1e6 / t_orjson:.0f} MB/s")

    # Replay on a session of about 1,000 entries (the yardstick), with a window it crosses.
    from sessiontools.read import load_session

    sized = sorted(files, key=lambda f: abs(sum(1 for _ in open(f, "rb")) - 1000))
    rfile = sized[0]
    t_one, t_grid, t_js = replay_times(rfile, 200_000)
    results["replay_vs_pi_js"] = round(t_one / t_js, 3)
    results["grid25_vs_one"] = round(t_grid / t_one, 3)
    print(f"replay {rfile.name} ({len(load_session(rfile).entries)} entries): one {t_one * 1000:.0f} ms, "
          f"grid 5x5 {t_grid * 1000:.0f} ms, Pi's functions in Node {t_js * 1000:.0f} ms")

    try:
        from bench.tokens import token_ratios

        results.update(token_ratios(files))
    except ImportError as exc:
        print(f"token ratios not measured: {exc}")

    from bench.executors import dask_local_vs_jobs

    results.update(dask_local_vs_jobs(a.corpus))

    results["peak_rss_mb"] = round(peak_rss(a.corpus), 1)
    results["largest_session_mb"] = round(largest.stat().st_size / 1e6, 1)
    limit = 2 * results["largest_session_mb"] + 100  # type: ignore[operator]
    verdicts = {}
    for key, (op, target) in TARGETS.items():
        if key in results:
            v = results[key]
            verdicts[key] = bool(v >= target if op == ">=" else v <= target)  # type: ignore[operator]
    verdicts["peak_rss_mb"] = bool(results["peak_rss_mb"] <= limit)  # type: ignore[operator]
    payload = {
        **results,
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()} | {"peak_rss_mb": "<= 2 x largest_session_mb + 100"},
        "meets_target": verdicts,
        "corpus": {"sessions": len(files), "mb": round(total / 1e6, 1)},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(payload, indent=2) + "\n")
    for k, v in results.items():
        mark = "" if k not in verdicts else ("  ok" if verdicts[k] else "  MISSES TARGET")
        print(f"{k:22s} {v}{mark}")
    print(f"written to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
