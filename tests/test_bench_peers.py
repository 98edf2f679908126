"""bench/peers.py: the files laid out where each tool looks (hard links, the same inodes), and the
CPU figure counting the child's own children (a process pool's workers)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench import peers
from bench.peers import cpu_run, lay_out


@pytest.mark.parametrize(("agent", "top"), [("pi", ".pi/agent/sessions/--bench--"),
                                            ("claude_code", "projects/-bench"), ("codex", "sessions/2026/01/01")])
def test_lay_out_hard_links_every_file(tmp_path: Path, agent: str, top: str) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "s1" / "subagents").mkdir(parents=True)
    files = [corpus / "s0.jsonl", corpus / "s1.jsonl", corpus / "s1" / "subagents" / "agent-1.jsonl"]
    for f in files:
        f.write_bytes(b"{}\n")
    got = lay_out(agent, corpus, tmp_path / "home")
    assert got == tmp_path / "home" / top
    linked = sorted(got.rglob("*.jsonl"))
    assert len(linked) == 3
    assert {p.stat().st_ino for p in linked} == {f.stat().st_ino for f in files}
    assert not any(p.is_symlink() for p in linked)
    if agent == "claude_code":
        assert (got / "s1" / "subagents" / "agent-1.jsonl").exists()
    if agent == "codex":
        assert all(p.name.startswith("rollout-2026-01-01T") for p in linked)


def test_cpu_run_counts_waited_children() -> None:
    spin = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\n"
    code = f"import subprocess,sys\nsubprocess.run([sys.executable,'-c',{spin!r}])\nprint('ok')"
    r = cpu_run([sys.executable, "-c", code], dict(os.environ), Path.cwd())
    assert r.out.strip() == b"ok"
    assert r.cpu_s >= 0.3  # the grandchild's 0.3 s of CPU is in the child's figure


def test_cpu_run_raises_on_failure() -> None:
    with pytest.raises(RuntimeError, match="exited 3"):
        cpu_run([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ), Path.cwd())


def test_the_floor_is_the_clis_import_alone() -> None:
    from bench.peers import FLOOR, floor_cpu

    assert FLOOR[1:] == ["-c", "import sessiontools.cli"]
    assert 0 < floor_cpu(1) < 5


def test_the_package_is_byte_compiled_before_timing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without byte-code (PYTHONDONTWRITEBYTECODE=1, an editable install) our side would time the compiler."""
    import importlib.util

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text("X = 1\n")
    monkeypatch.setattr(peers, "CLI_PACKAGE", pkg)
    peers.compile_package()
    assert Path(importlib.util.cache_from_source(str(pkg / "mod.py"))).is_file()
