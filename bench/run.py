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
#: The ratios with a target (from the issues). The Codex and Claude Code readers' CLI ratios are
#: reported without one: first measured in this round (about 0.2 against Pi's 0.4-0.6).
#: `replay_vs_pi_js` (one setting against Node) is reported, not judged (issue 28): CPython's reading
#: and parsing alone are ~0.6 of Node's whole run (`replay_parse_only_vs_pi_js`, the floor beside it);
#: what users run is a grid, judged as `replay_grid25_vs_pi_js`.
TARGETS = {
    "inspect_vs_orjson": (">=", 0.5),
    "inspect_cli_vs_orjson": (">=", 0.5),
    "jobs2_vs_jobs1": ("<=", 0.75),
    "inspect_table_vs_json": ("<=", 1.5),
    "startup_s": ("<=", 0.25),
    "o200k_vs_tiktoken": (">=", 0.7),
    "warm_vs_cold": (">=", 10),
    "grid25_vs_one": ("<=", 3),
    "replay_grid25_vs_pi_js": ("<=", 0.5),
    "dask_local_vs_jobs": ("<=", 1.3),
    # issue 28: whole-process CPU against ccusage 20.0.24's native binary (bench/peers.py), a running
    # Dask cluster against --jobs 2, cold estimate-error against raw tiktoken (bench/tokens.py)
    "inspect_cpu_vs_ccusage_pi": ("<=", 1.0),
    "inspect_cpu_vs_ccusage_claude_code": ("<=", 1.0),
    "inspect_cpu_vs_ccusage_codex": ("<=", 1.0),
    "dask_running_vs_jobs": ("<=", 1.3),
    "estimate_error_cold_vs_tokenize": ("<=", 1.5),
}

#: Targets of issues the tracker holds as blocked on this machine: still measured and judged
#: (`meets_target` says false), listed in results.json with the reason, and not failing the run.
BLOCKED = {
    "dask_local_vs_jobs": "issue 18, blocked: on 2 cores a LocalCluster's fixed start (~2.3 s: importing "
                          "distributed, the scheduler, 2 worker processes) exceeds 1.3 x the whole --jobs 2 "
                          "run (~1.3 s over 300 MB)",
    "dask_running_vs_jobs": "issue 28, blocked: on 2 cores the Dask client's fixed start alone (importing distributed "
                            "and connecting, dask_client_fixed_s ~0.32-0.37 s) is most of a --jobs 2 run over the 315 MB "
                            "corpus (~0.4 s), so the ratio's floor (dask_running_floor, Dask costing nothing else) is "
                            "1.83-1.84 against the 1.3 target",
    "inspect_cpu_vs_ccusage_codex": "issue 28, blocked: the interpreter's start and the CLI's imports "
                                    "(inspect_cpu_vs_ccusage_codex_floor) are 0.67-0.69 of ccusage's whole run over "
                                    "the Codex corpus (0.075-0.10 s), and reading and validating its 105 MB "
                                    "(inspect_phases_codex_read_s 0.059-0.069 s, ~1.6 GB/s) is another 0.6-0.8: "
                                    "the two alone are over 1.0 before inspect computes anything",
}


#: How each judged ratio is measured: the clock, warm or cold, the rounds, and the result key of its
#: floor (what the ratio would be if our side cost nothing but what it cannot avoid), where it has one.
#: Printed beside each ratio and written into results.json (`method`); tests hold it to TARGETS.
METHOD = {
    "inspect_vs_orjson": ("wall, in process, page cache warm, best of 3 interleaved; no floor beside it: the "
                          "baseline is the floor (orjson decoding every line, nothing kept)", None),
    "inspect_cli_vs_orjson": ("wall of the CLI process vs in-process orjson, page cache warm, best of 7 interleaved; "
                              "no floor beside it: the baseline is the floor", None),
    "jobs2_vs_jobs1": ("wall of the CLI process, page cache warm, best of 7 interleaved; no floor measured: "
                       "2 cores bound it at 0.5", None),
    "inspect_table_vs_json": ("wall of the CLI process, page cache warm, best of 7 interleaved; no floor measured: "
                              "the same analysis bounds it at 1.0", None),
    "startup_s": ("wall of `sessiontools --help`, page cache and byte-code warm, best of 10; the floor: "
                  "the interpreter and `import typer`, best of 10 interleaved with it", "startup_floor_s"),
    "o200k_vs_tiktoken": ("CPU of this process (all threads), cold token cache, vocabulary loaded on both sides, "
                          "median of 3 interleaved rounds' ratios (raw side before and after each); the floor is "
                          "the bound: raw over raw plus building the texts", "o200k_vs_tiktoken_floor"),
    "warm_vs_cold": ("wall, cold vs warm caches of the same files (sessions read before either clock), best of 3; "
                     "no floor measured (a warm run still builds the report from the cached rows)", None),
    "grid25_vs_one": ("process CPU, warm, median of 9 interleaved pairs' ratios; no floor measured: the "
                      "shared reading and truth fit bound it at 1.0", None),
    "replay_grid25_vs_pi_js": ("process CPU of both sides, warm, median of 9 interleaved pairs' ratios",
                               "replay_grid25_node_parse_share"),
    "dask_local_vs_jobs": ("wall, the LocalCluster's start and stop included (cold cluster), best of 2 interleaved",
                           "dask_local_startup_s"),
    "dask_running_vs_jobs": ("wall, cluster running and warm (one untimed run first), page cache warm, median of 5 interleaved pairs' ratios",
                             "dask_running_floor"),
    "inspect_cpu_vs_ccusage_pi": ("whole-process CPU, page cache warm, median of 5 interleaved pairs' ratios",
                                  "inspect_cpu_vs_ccusage_pi_floor"),
    "inspect_cpu_vs_ccusage_claude_code": ("whole-process CPU, page cache warm, median of 5 interleaved pairs' ratios",
                                           "inspect_cpu_vs_ccusage_claude_code_floor"),
    "inspect_cpu_vs_ccusage_codex": ("whole-process CPU, page cache warm, median of 5 interleaved pairs' ratios",
                                     "inspect_cpu_vs_ccusage_codex_floor"),
    "estimate_error_cold_vs_tokenize": ("whole-process CPU of both (threads, waited-for children), empty token cache "
                                        "and vocabulary loaded by each process (cold), page cache warm, median of 3 "
                                        "interleaved pairs' ratios, order alternating",
                                        "estimate_error_cold_vs_tokenize_floor"),
}


#: What `--only` can choose: each runs its benchmarks of the list above (`agents`: the Codex and
#: Claude Code corpora's CLI ratios; `peers`: the ccusage ratios, which need those corpora too).
PIECES = ("inspect", "cli", "agents", "peers", "replay", "tokens", "estimate_cold", "dask_local", "dask_running",
          "rss")


def best_of(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def orjson_run(files: list[Path]):  # type: ignore[no-untyped-def]
    """Raw parsing: read each file and orjson.loads every line."""
    def run() -> None:
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        orjson.loads(line)
    return run


def inspect_run(files: list[Path]):  # type: ignore[no-untyped-def]
    from sessiontools.read import load_session
    from sessiontools.transcript.pi.inspect import inspect_session

    def run() -> None:
        for f in files:
            inspect_session(load_session(f))
    return run


def commit() -> str | None:
    """The commit measured (with "-dirty" when the work tree has changes); None outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


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


def agent_ratios(mb: float, corpora: dict[str, Path]) -> dict[str, float]:
    """The CLI against raw orjson over the synthetic Codex and Claude Code corpora (built once, each
    put in `corpora` under its agent's name)."""
    from bench import corpus_claude, corpus_codex
    from bench.cli import agent_cli_ratio
    from bench.corpus_agents import build

    out: dict[str, float] = {}
    for name, gen in (("codex", corpus_codex.session), ("claude_code", corpus_claude.session)):
        corpus = ROOT / "bench" / f"corpus-{name.replace('_', '-')}"
        files = build(gen, corpus, mb)
        corpora[name] = corpus
        print(f"{name} corpus: {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB")
        out.update(agent_cli_ratio(f"inspect_cli_vs_orjson_{name}", corpus, orjson_run(files)))
    return out


#: The committed results: written only by a whole run (no `--only`) that meets every target not blocked.
RESULTS = ROOT / "bench" / "results.json"


def refuse_write(out_path: Path | None, partial: bool, missed: list[str]) -> str | None:
    """Why `out_path` must not be written, or None. bench/results.json holds one whole run meeting
    every target (issue 28): a partial run (`--only`) or one that missed a target goes elsewhere
    (`--out`) or nowhere."""
    if out_path is None or out_path.resolve() != RESULTS.resolve():
        return None
    if partial:
        return f"{RESULTS.name} holds whole runs only: --only measures a part"
    if missed:
        return f"{RESULTS.name} holds runs meeting every target; missed: {', '.join(missed)}"
    return None


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file beside it and a rename: a reader sees the old
    results or the new ones, never half a file."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, default=ROOT / "bench" / "corpus")
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--agent-mb", type=float, default=100, help="size of the Codex and Claude Code corpora")
    ap.add_argument("--out", type=Path, default=None,
                    help="where to write the results (default bench/results.json, written only by a whole run meeting "
                         "every target; with --only, nowhere unless given)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated pieces to run, of: {', '.join(PIECES)} (the rest is not measured)")
    a = ap.parse_args()
    only = set(PIECES) if a.only is None else {p.strip() for p in a.only.split(",") if p.strip()}
    unknown = only - set(PIECES)
    if unknown:
        ap.error(f"unknown piece(s) {', '.join(sorted(unknown))}; pieces: {', '.join(PIECES)}")
    out_path = a.out if a.out is not None else (ROOT / "bench" / "results.json" if a.only is None else None)
    from bench.corpus import build

    t = time.perf_counter()
    files = build(a.corpus, a.mb)
    total = sum(f.stat().st_size for f in files)
    largest = max(files, key=lambda f: f.stat().st_size)
    print(f"corpus: {len(files)} sessions, {total / 1e6:.1f} MB (built/checked in {time.perf_counter() - t:.1f}s)")
    results: dict[str, object] = {}

    raw, lib = orjson_run(files), inspect_run(files)
    if "inspect" in only:
        t_orjson = t_inspect = float("inf")
        for _ in range(3):  # interleaved, best of each: this VM's speed wanders between runs
            t_orjson = min(t_orjson, best_of(1, raw))
            t_inspect = min(t_inspect, best_of(1, lib))
        results["inspect_vs_orjson"] = round(t_orjson / t_inspect, 3)
        print(f"inspect {total / 1e6 / t_inspect:.0f} MB/s vs raw orjson {total / 1e6 / t_orjson:.0f} MB/s")

    if "cli" in only:
        from bench.cli import cli_ratios

        results.update(cli_ratios(a.corpus, raw))
    corpora = {"pi": a.corpus}
    if "agents" in only or "peers" in only:
        results.update(agent_ratios(a.agent_mb, corpora))
    if "peers" in only:
        from bench.peers import ccusage_ratios

        results.update(ccusage_ratios(corpora))

    if "replay" in only:
        # Replay on a session of about 1,000 entries (the yardstick), with a window it crosses.
        from bench.replay import replay_ratios

        sized = sorted(files, key=lambda f: abs(sum(1 for _ in open(f, "rb")) - 1000))
        results.update(replay_ratios(sized[0]))

    if "tokens" in only:
        from bench.tokens import token_ratios

        results.update(token_ratios(files))

    if "estimate_cold" in only:
        from bench.tokens import estimate_cold_vs_tokenize

        results.update(estimate_cold_vs_tokenize(files))

    from bench.executors import dask_local_vs_jobs, dask_running_vs_jobs

    if "dask_local" in only:
        results.update(dask_local_vs_jobs(a.corpus))
    if "dask_running" in only:
        results.update(dask_running_vs_jobs(a.corpus))

    verdicts = {}
    if "rss" in only:
        results["peak_rss_mb"] = round(peak_rss(a.corpus), 1)
        results["largest_session_mb"] = round(largest.stat().st_size / 1e6, 1)
        limit = 2 * results["largest_session_mb"] + 100  # type: ignore[operator]
        verdicts["peak_rss_mb"] = bool(results["peak_rss_mb"] <= limit)  # type: ignore[operator]
    for key, (op, target) in TARGETS.items():
        if key in results:
            v = results[key]
            verdicts[key] = bool(v >= target if op == ">=" else v <= target)  # type: ignore[operator]
    if "replay_same_compactions" in results:
        verdicts["replay_same_compactions"] = results["replay_same_compactions"] is True
    payload = {
        **results,
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()}
        | {"peak_rss_mb": "<= 2 x largest_session_mb + 100", "replay_same_compactions": "true"},
        "meets_target": verdicts,
        "method": {k: {"how": how, **({"floor": results.get(floor)} if floor else {})}
                   for k, (how, floor) in METHOD.items() if k in results},
        "blocked": {k: v for k, v in BLOCKED.items() if k in verdicts},
        "corpus": {"sessions": len(files), "mb": round(total / 1e6, 1)},
        "commit": commit(),
        "load_average": [round(x, 2) for x in os.getloadavg()],  # at the end of the run
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    missed = [k for k, ok in verdicts.items() if not ok and k not in BLOCKED]
    refused = refuse_write(out_path, a.only is not None, missed)
    if out_path is not None and refused is None:
        write_atomically(out_path, json.dumps(payload, indent=2) + "\n")
    for k, v in results.items():
        mark = "" if k not in verdicts else ("  ok" if verdicts[k] else "  MISSES TARGET")
        how, floor = METHOD.get(k, (None, None))
        note = f"  [{how}{f'; floor {floor} = {results.get(floor)}' if floor else ''}]" if how else ""
        print(f"{k:22s} {v}{mark}{'  (blocked: see results.json)' if mark and not verdicts[k] and k in BLOCKED else ''}"
              f"{note}")
    print(f"written to {out_path}" if out_path is not None and refused is None
          else f"not written ({refused or '--only without --out'})")
    if missed:
        print(f"bench: targets missed: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
