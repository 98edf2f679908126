"""Value fuzzing across the three readers and every command (issue 27): each mutated input sets
one to three fields of real-shaped records (any field of any line: Pi entries, Claude Code lines,
Codex rollout lines) to a value of the wrong type, magnitude or encoding (`mutate.ODD_VALUES`).

Inputs are run in batches, in-process: a directory of mutated files per agent and each command
once over it, with per-file containment on, so that every file a bug still hits is named in the
`internal error` lines checked here (a subprocess per input would cost a second each). A sample also
goes through the real CLI. `FUZZ_INPUTS` sets the number of inputs (default 10,200: CI's run)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.read import parallel
from tests.robust.mutate import BASES, ODD_VALUES, commands, field_paths, mutated, run, write

INPUTS = int(os.environ.get("FUZZ_INPUTS", "10200"))
#: Lines of each base kept (the first ones: header, meta, the first turns and usages); the fuzzing
#: reads each thousands of times.
BASE_LINES = {"pi": 32, "pi1": 40, "claude": 45, "codex": 30}
AGENTS = sorted(BASE_LINES)


def _base(agent: str) -> list[str]:
    return BASES[agent].read_text(encoding="utf-8").splitlines()[:BASE_LINES[agent]]


def _mutant(lines: list[str], rnd: random.Random) -> list[str]:
    import json

    for _ in range(rnd.choice((1, 1, 2, 3))):
        i = rnd.randrange(len(lines))
        paths = list(field_paths(json.loads(lines[i])))
        if paths:
            lines = mutated(lines, i, rnd.choice(paths), rnd.choice(ODD_VALUES))
    return lines


def _batch(d: Path, agent: str, n: int, seed: int) -> Path:
    rnd = random.Random(f"{agent}-{seed}")
    base = _base(agent)
    d.mkdir(parents=True)
    for k in range(n):
        write(d / f"{agent}-{k:05d}.jsonl", _mutant(base, rnd))
    return d


def _batches() -> list[tuple[str, int]]:
    """(agent, batch number): the inputs spread evenly over agents, 300 files a batch."""
    per_agent = -(-INPUTS // len(AGENTS))
    return [(a, b) for a in AGENTS for b in range(-(-per_agent // 300))]


#: Commands run over every batch (reading and inspect: where odd values meet the code first) and,
#: in rotation, one more per batch: each command sees a quarter to a fifth of the inputs.
EVERY_BATCH = ("inspect",)
ROTATION = ("replay", "estimate-error", "diff-summaries", "export", "inspect-table")


def _name(args: list[str]) -> str:
    return "inspect-table" if args[0] == "inspect" and "table" in args else args[0]


@pytest.mark.parametrize(("agent", "batch"), _batches())
def test_mutated_values_never_end_in_an_internal_error(agent: str, batch: int, tmp_path: Path) -> None:
    """Commands over a batch of mutated files: a documented exit code, no file's internal error."""
    per_agent = -(-INPUTS // len(AGENTS))
    n = min(300, per_agent - 300 * batch)
    d = _batch(tmp_path / "in", agent, n, batch)
    assert parallel.CONTAIN_ERRORS
    extra = ROTATION[(AGENTS.index(agent) + batch) % len(ROTATION)]
    for args in commands(d, tmp_path):
        name = _name(args)
        if name not in EVERY_BATCH and name != extra:
            continue
        code, err = run(args)
        bugs = [line for line in err.splitlines() if "internal error" in line]
        assert not bugs and code in (0, 1, 3), f"{name} -> {code}:\n" + "\n".join(bugs[:10])


@settings(max_examples=int(os.environ.get("ROBUSTNESS_EXAMPLES", "20")), deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(agent=st.sampled_from(AGENTS), seed=st.integers(0, 2**32))
def test_one_mutated_file_through_every_command(agent: str, seed: int) -> None:
    """One mutated file through every command (cut too), exceptions uncontained."""
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        f = write(Path(t) / "s.jsonl", _mutant(_base(agent), random.Random(seed)))
        old, parallel.CONTAIN_ERRORS = parallel.CONTAIN_ERRORS, False
        try:
            for args in commands(f, Path(t)):
                code, err = run(args)
                assert code in (0, 1, 2, 3), f"{args} -> {code}: {err}"
        finally:
            parallel.CONTAIN_ERRORS = old


def test_a_sample_through_the_real_cli(tmp_path: Path) -> None:
    """25 mutated files per agent through the real entry point (a subprocess, two worker processes)."""
    dirs = [str(_batch(tmp_path / agent, agent, 25, 99)) for agent in AGENTS]
    for args in (["inspect", *dirs, "--format", "json", "--jobs", "2"],
                 ["estimate-error", *dirs, "--format", "json", "--no-cache", "--jobs", "2"]):
        p = subprocess.run([sys.executable, "-m", "sessiontools", *args], capture_output=True, text=True,
                           timeout=300, env={k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"})
        assert p.returncode in (0, 1, 3), f"{args[0]} -> {p.returncode}: {p.stderr[-2000:]}"
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
