"""The bench's synthetic Codex and Claude Code corpora read cleanly: `sessiontools inspect` finds no
problem in them and counts the requests, compactions and subagents each generator intended."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench import corpus_claude, corpus_codex
from bench.corpus_agents import Generated, build
from sessiontools.cli import main

# (seed, target bytes): a large session with compactions (and, for Claude Code, subagents), a small one
SESSIONS = [(1, 1_200_000), (2, 1_200_000), (0, 40_000)]


def _write(gens: list[Generated], out: Path) -> None:
    for g in gens:
        for rel, data in g.files.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)


@pytest.mark.parametrize("module", [corpus_codex, corpus_claude], ids=["codex", "claude-code"])
def test_generated_sessions_read_as_intended(module, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gens = [module.session(random.Random(seed), n, size) for n, (seed, size) in enumerate(SESSIONS)]
    assert sum(g.compactions for g in gens) > 0
    if module is corpus_claude:
        assert sum(g.sidechains for g in gens) > 0
    _write(gens, tmp_path / "corpus")
    assert main(["inspect", str(tmp_path / "corpus"), "--format", "json", "-o", str(tmp_path / "out.json")]) == 0
    sessions = json.loads((tmp_path / "out.json").read_text())["sessions"]
    assert len(sessions) == len(gens)
    agent = "codex" if module is corpus_codex else "claude-code"
    for s, g in zip(sessions, gens, strict=True):
        assert s["agent"] == agent
        assert (s["skipped_lines"], s["recovered_lines"], s["notices"], s["fatal"]) == ([], [], [], [])
        # inspect counts billed calls: a Codex compaction's summarisation call is one (not a path request)
        assert s["requests"] == g.requests + (g.compactions if module is corpus_codex else 0)
        assert len(s["compactions"]) == g.compactions
        assert all(c["kind"] == "threshold" and c["tokens_before"] and c["tokens_after"] for c in s["compactions"])
        assert s["sidechains"] == g.sidechains


def test_generation_is_deterministic_and_built_once(tmp_path: Path) -> None:
    a = corpus_claude.session(random.Random(5), 0, 200_000)
    b = corpus_claude.session(random.Random(5), 0, 200_000)
    assert a.files == b.files
    files = build(corpus_codex.session, tmp_path / "c", total_mb=0.5, seed=3)
    assert files and (tmp_path / "c" / ".complete-3-0.5").exists()
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert build(corpus_codex.session, tmp_path / "c", total_mb=0.5, seed=3) == files
    assert [f.stat().st_mtime_ns for f in files] == mtimes
