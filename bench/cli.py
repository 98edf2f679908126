"""What users run: the `sessiontools` command as a subprocess, end to end (interpreter start-up,
imports, worker processes, JSON written).

- `inspect_cli_vs_orjson`: raw orjson over the same bytes (in this process) / `sessiontools
  inspect DIR --format json` with the default `--jobs`;
- `inspect_cli_vs_orjson_codex`, `inspect_cli_vs_orjson_claude_code`: the same over the synthetic
  Codex and Claude Code corpora (`agent_cli_ratio`; bench/corpus_codex.py, bench/corpus_claude.py);
- `jobs2_vs_jobs1`: the same command with `--jobs 2` / with `--jobs 1`;
- `inspect_table_vs_json`: `sessiontools inspect DIR` as a table (the folder answer) / as JSON
  (issue 26: drawing the table must not cost more than the analysis, at most 1.5x);
- `startup_s`: wall time of `sessiontools --help`; beside it `startup_floor_s`, the interpreter's
  start and `import typer` (what any Typer CLI pays before its own code).

Each is interleaved with its baseline, best of ROUNDS rounds (this shared machine's speed wanders:
with inspect at ~0.3 s of wall, a best of 3 gave `jobs2_vs_jobs1` 0.57, 0.74 and 0.88 for the same
code within ten minutes; 7 rounds cost ~15 s more).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROUNDS = 7
CLI = Path(sys.executable).parent / "sessiontools"


def _wall(args: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of `sessiontools ARGS` (this environment, or `env`); raises when it fails."""
    env = dict(os.environ) if env is None else env
    t = time.perf_counter()
    proc = subprocess.run([str(CLI), *args], capture_output=True, env=env)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"sessiontools {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
    return dt


def cli_ratios(corpus: Path, orjson_run: Callable[[], None]) -> dict[str, float]:
    inspect = ["inspect", str(corpus), "--format", "json", "-o", os.devnull]
    table = ["inspect", str(corpus), "--format", "table"]  # stdout captured by _wall: a pipe, not a terminal
    t_raw = t_cli = t_j1 = t_j2 = t_tab = float("inf")
    for _ in range(ROUNDS):
        t = time.perf_counter()
        orjson_run()
        t_raw = min(t_raw, time.perf_counter() - t)
        t_cli = min(t_cli, _wall(inspect))
        t_j1 = min(t_j1, _wall([*inspect, "--jobs", "1"]))
        t_j2 = min(t_j2, _wall([*inspect, "--jobs", "2"]))
        t_tab = min(t_tab, _wall(table))
    t_help = t_typer = float("inf")
    for _ in range(10):  # interleaved with its floor: a slow moment of this shared machine moves both
        t_help = min(t_help, _wall(["--help"]))
        t_typer = min(t_typer, _python_wall(["-c", "import typer"]))
    print(f"CLI: inspect (default --jobs) {t_cli:.2f}s vs raw orjson {t_raw:.2f}s; --jobs 1 {t_j1:.2f}s, "
          f"--jobs 2 {t_j2:.2f}s; --help {t_help * 1000:.0f} ms")
    return {
        "inspect_cli_vs_orjson": round(t_raw / t_cli, 3),
        "jobs2_vs_jobs1": round(t_j2 / t_j1, 3),
        "inspect_table_vs_json": round(t_tab / t_cli, 3),
        "startup_s": round(t_help, 3),
        "startup_floor_s": round(t_typer, 3),
    }


def _python_wall(args: list[str]) -> float:
    """Wall time of this interpreter run with `args` (the floor of any Typer CLI: `-c "import typer"`)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True)
    return time.perf_counter() - t


def agent_cli_ratio(key: str, corpus: Path, orjson_run: Callable[[], None]) -> dict[str, float]:
    """`key` = raw orjson over every line of `corpus` (its files and subagent files) / `sessiontools
    inspect DIR --format json` with the default `--jobs`: the same measure as `inspect_cli_vs_orjson`,
    for another agent's corpus (`inspect_cli_vs_orjson_codex`, `..._claude_code`)."""
    inspect = ["inspect", str(corpus), "--format", "json", "-o", os.devnull]
    t_raw = t_cli = float("inf")
    for _ in range(ROUNDS):
        t = time.perf_counter()
        orjson_run()
        t_raw = min(t_raw, time.perf_counter() - t)
        t_cli = min(t_cli, _wall(inspect))
    print(f"CLI {key}: inspect (default --jobs) {t_cli:.2f}s vs raw orjson {t_raw:.2f}s")
    return {key: round(t_raw / t_cli, 3)}
