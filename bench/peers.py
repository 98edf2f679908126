"""`inspect_cpu_vs_ccusage_<agent>`: the CPU time of the whole `sessiontools inspect DIR --format json`
process against ccusage 20.0.24's native binary (`ccusage <pi|claude|codex> session --json --offline`)
over the same files, for each agent's bench corpus (issue 28; target <= 1.0).

- Whole-process CPU: user + system time of the child and of every child it waited for (its worker
  processes), from `os.wait4`; ccusage's threads are in its own figure.
- The same files where each tool looks: hard links (ccusage skips symlinks) into a home laid out as
  the agent's own (`~/.pi/agent/sessions/<project>/`, `$CLAUDE_CONFIG_DIR/projects/<project>/` with
  a session's `<id>/subagents/` beside it, `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`);
  `sessiontools inspect` is given the project (or day) directory holding those same links.
- Both write their JSON to a file (not a terminal), offline, TZ=UTC, the page cache warm (one
  untimed run of each first).
- Interleaved: each round runs both (the order alternating), the ratio of that pair is kept, and the
  figure is the median of the pairs' ratios (this shared machine's speed wanders between rounds).
- Each side's output is checked to hold sessions (a tool that found no files would look fast).
- Beside each ratio, where our CPU goes (`inspect_phases_<agent>`, in a fresh process of its own,
  CPU time per phase over the same files): reading (`read.sources.load_source`: decode, checks,
  records; a Pi session read selectively, as the command reads it), the transcript, inspect's
  counting, the JSON output, and as the floor of a Python reader, orjson decoding every line and
  nothing else. What the whole-process figure has beyond
  the phases is start-up (imports) and the per-file machinery.

Same work? Not for Codex (session 11, `strace -f -y` of `ccusage codex session --json --offline`
over the 88 rollouts, and its source, rust/adapters/codex/src/parser.rs of ccusage/ccusage). It
reads every byte once (105.6 MB of reads for 104.9 MB of rollouts, 128 KiB `read`s, no mmap; each
file opened a second time for an 8 KiB head), on 4 threads, but it parses only the lines that can
carry usage: each line is searched (memchr's memmem) for `"type":"event_msg"` with
`"type":"token_count"`, `"type":"turn_context"`, `token_usage_record`, `compacted` or a usage
field, and only those are decoded (serde_json); the response items (most of a rollout's bytes) are
never parsed or validated. `inspect` validates every line as strict JSON and UTF-8 (a line orjson
would not read gets its `file:line` diagnostic) and builds the conversation path, its compactions
and the summarisation calls it drops, so the ratio compares more work against less.

Is <= 1.0 reachable for Codex? Not while doing that work (session 12, callgrind, whole process of
`inspect bench/corpus-codex --format json --jobs 1`, 88 rollouts, 105 MB): 1,259M instructions before
the session, 1,060M after (the summary's columns and rows instead of a Message and a Request per
item -114M; AVX2 plain runs in the scanner -47M; no collections during the imports and at exit
-38M). Of the 1,060M, start-up is ~409M (inspect of one 33 KB rollout: the interpreter and the
editable install's finder 88M, orjson's import 63M, typer's 90M, the CLI 18M, the command's modules
and one file ~150M), and the C's one strict pass over the bytes ~510M (~4.9 instructions a byte:
UTF-8 checked once, every line tokenized, its fields looked up). The start-up alone is 0.55-0.6 of
ccusage's whole run (`inspect_cpu_vs_ccusage_codex_floor`); what is left for reading 105 MB would be
~0.04 s of CPU, ~2.5 GB/s on one core for validating and tokenizing every line, where ccusage parses
only the few usage lines. The target is blocked on that floor, not on the per-file machinery (the
fork pool costs no measurable CPU here: default --jobs and --jobs 1 took 0.320 s and 0.325 s, medians
of 7 interleaved runs).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROUNDS = 5
CLI = Path(sys.executable).parent / "sessiontools"
KINDS = {"pi": "pi", "claude_code": "claude", "codex": "codex"}


@dataclass(frozen=True)
class Run:
    cpu_s: float
    wall_s: float
    out: bytes


def cpu_run(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Run `argv` to completion; its CPU (user + sys, waited-for children included) and stdout."""
    import time

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:3])} exited {proc.returncode}: {err.read()[-2000:]!r}")
        return Run(ru.ru_utime + ru.ru_stime, wall, out.read())


def _link(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.link(src, dest)


def lay_out(agent: str, corpus: Path, home: Path) -> Path:
    """Hard-link every `*.jsonl` of `corpus` into `home` laid out as `agent`'s own; returns the
    directory holding the links (what `sessiontools inspect` is given)."""
    files = sorted(corpus.rglob("*.jsonl"))
    if agent == "pi":
        top = home / ".pi" / "agent" / "sessions" / "--bench--"
        for f in files:
            _link(f, top / f.relative_to(corpus))
    elif agent == "claude_code":
        top = home / "projects" / "-bench"
        for f in files:
            _link(f, top / f.relative_to(corpus))  # a session's subagents stay in <session>/subagents/
    elif agent == "codex":
        top = home / "sessions" / "2026" / "01" / "01"
        for k, f in enumerate(files):
            _link(f, top / f"rollout-2026-01-01T00-00-{k % 60:02d}-{f.stem}.jsonl")
    else:
        raise ValueError(agent)
    return top


def _peer_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": "UTC", "NO_COLOR": "1",
            "CLAUDE_CONFIG_DIR": str(home), "CODEX_HOME": str(home)}


def _ours_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    env.update({"TZ": "UTC", "NO_COLOR": "1"})
    return env


def _sessions(out: bytes, key: str) -> int:
    doc = json.loads(out)
    items = doc.get(key)
    return len(items) if isinstance(items, list) else 0


#: The phases of `inspect DIR --format json`, timed in a child process (argv[1]: the directory).
_PHASES = """
import json, sys, time
from pathlib import Path
import orjson
from sessiontools.read.parse import gc_paused
from sessiontools.read.parallel import reads_selectively
from sessiontools.read.sources import expand_sources, load_source
from sessiontools.analysis.inspect import inspect_source
from sessiontools.transcript.load import transcript_of
from sessiontools.analysis.inspect_transcript import inspect_transcript
cpu = time.process_time
t = dict.fromkeys(("read", "transcript", "inspect", "output", "orjson_every_line"), 0.0)
files = list(expand_sources([sys.argv[1]]))
selective = reads_selectively(inspect_source)  # (read as the command reads: Pi selectively)
for f in files:
    a = cpu(); src = load_source(f, selective=selective); b = cpu(); t["read"] += b - a  # (as inspect reads)
    if src.agent.value == "pi":
        doc = inspect_source(src); c = cpu(); t["inspect"] += c - b
    else:
        tr = transcript_of(src); c = cpu(); t["transcript"] += c - b
        doc = inspect_transcript(tr); t["inspect"] += cpu() - c
    a = cpu(); orjson.dumps(doc); t["output"] += cpu() - a
    for p in [f, *(s.path for s in getattr(src, "subagents", ()))]:  # (the files read: subagents too)
        data = Path(p).read_bytes()
        a = cpu()
        with gc_paused():
            for line in data.split(b"\\n"):
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
        t["orjson_every_line"] += cpu() - a
print(json.dumps({"files": len(files), **{k: round(v, 3) for k, v in t.items()}}))
"""


def phases(agent: str, top: Path, env: dict[str, str]) -> dict[str, float]:
    """`inspect_phases_<agent>_*`: the CPU of each phase of inspect over `top` (see `_PHASES`)."""
    out = subprocess.run([sys.executable, "-c", _PHASES, str(top)], env=env, capture_output=True, check=True)
    got = json.loads(out.stdout)
    print(f"inspect_phases_{agent} (in process, CPU s, {got.pop('files')} files): "
          + ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in got.items()))
    return {f"inspect_phases_{agent}_{k}_s": v for k, v in got.items()}


def cpu_vs_ccusage(agent: str, corpus: Path, binary: Path, rounds: int = ROUNDS) -> dict[str, float]:
    """`inspect_cpu_vs_ccusage_<agent>` (median of interleaved pairs) and each side's median CPU."""
    corpus = corpus.resolve()
    work = Path(tempfile.mkdtemp(prefix=".peer-", dir=corpus.parent))  # same file system: hard links
    try:
        home = work / "home"
        top = lay_out(agent, corpus, home)
        ours = [str(CLI), "inspect", str(top), "--format", "json"]
        peer = [str(binary), KINDS[agent], "session", "--json", "--offline"]
        o_env, p_env = _ours_env(), _peer_env(home)
        warm_o, warm_p = cpu_run(ours, o_env, work), cpu_run(peer, p_env, work)
        n_ours, n_peer = _sessions(warm_o.out, "sessions"), _sessions(warm_p.out, "sessions")
        if not n_ours or not n_peer:
            raise RuntimeError(f"{agent}: a side found no sessions (ours {n_ours}, ccusage {n_peer})")
        ratios, t_o, t_p = [], [], []
        for r in range(rounds):
            if r % 2:
                p = cpu_run(peer, p_env, work)
                o = cpu_run(ours, o_env, work)
            else:
                o = cpu_run(ours, o_env, work)
                p = cpu_run(peer, p_env, work)
            ratios.append(o.cpu_s / p.cpu_s)
            t_o.append(o.cpu_s)
            t_p.append(p.cpu_s)
        in_process = phases(agent, top, o_env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    key = f"inspect_cpu_vs_ccusage_{agent}"
    print(f"{key}: ours {statistics.median(t_o):.2f}s CPU ({n_ours} sessions) vs ccusage "
          f"{statistics.median(t_p):.2f}s CPU ({n_peer} sessions); pairs "
          f"{', '.join(f'{x:.2f}' for x in ratios)}")
    return {key: round(statistics.median(ratios), 3),
            f"{key}_ours_cpu_s": round(statistics.median(t_o), 3),
            f"{key}_peer_cpu_s": round(statistics.median(t_p), 3), **in_process}


#: The floor under any `sessiontools` command: the interpreter's start and the CLI's imports.
FLOOR = [sys.executable, "-c", "import sessiontools.cli"]


def floor_cpu(rounds: int = ROUNDS) -> float:
    """The median CPU of `FLOOR` (one untimed run first, as the ratios' runs): what the whole-process
    figure of every command pays before its first file."""
    cpu_run(FLOOR, _ours_env(), Path.cwd())
    return statistics.median(cpu_run(FLOOR, _ours_env(), Path.cwd()).cpu_s for _ in range(rounds))


def ccusage_ratios(corpora: dict[str, Path], rounds: int = ROUNDS) -> dict[str, float]:
    """Every agent's ratio, and beside it its floor (`inspect_cpu_vs_ccusage_<agent>_floor`: `FLOOR`'s
    CPU over ccusage's, the ratio no reader reaches); ccusage installed (once) from npm like the pinned Pi."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lab.ccusage_env import ensure_ccusage

    binary = ensure_ccusage(quiet=False).binary
    out: dict[str, float] = {}
    for agent, corpus in corpora.items():
        out.update(cpu_vs_ccusage(agent, corpus, binary, rounds))
    floor = floor_cpu(rounds)
    out["inspect_cpu_floor_s"] = round(floor, 3)
    for agent in corpora:
        peer = out[f"inspect_cpu_vs_ccusage_{agent}_peer_cpu_s"]
        out[f"inspect_cpu_vs_ccusage_{agent}_floor"] = round(floor / peer, 3)
        print(f"inspect_cpu_vs_ccusage_{agent}_floor: {floor:.2f}s CPU ({' '.join(FLOOR[1:])}) vs ccusage "
              f"{peer:.2f}s: {floor / peer:.2f}")
    return out


def compile_package() -> None:
    """Byte-code for every module of the package, as an installed package has it (`make bench` does
    the same first): an editable install under PYTHONDONTWRITEBYTECODE=1 never writes any, and then
    every run of ours compiles ~50 modules, 0.14 s of CPU over the Claude Code corpus (0.59 s against
    0.45 s, medians of 7 interleaved pairs): the ratio would time the compiler, not the reading."""
    import compileall

    compileall.compile_dir(CLI_PACKAGE, quiet=1)


#: The package's sources, whose byte-code `compile_package` writes.
CLI_PACKAGE = Path(__file__).resolve().parent.parent / "sessiontools"


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pi", type=Path)
    ap.add_argument("--claude-code", type=Path)
    ap.add_argument("--codex", type=Path)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    a = ap.parse_args()
    corpora = {k: v for k, v in (("pi", a.pi), ("claude_code", a.claude_code), ("codex", a.codex)) if v}
    compile_package()
    print(json.dumps(ccusage_ratios(corpora, a.rounds), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
