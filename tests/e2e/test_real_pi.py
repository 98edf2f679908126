"""End to end: the real Pi CLI (print mode) against the lab model server, read back by sessiontools.

Each case records a short session (5 prompts, about 10 s) whose settings force at least one
compaction, then checks that the project reader sees every line and exactly the compactions Pi wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.driver import Recording, record
from tests.conftest import require_pi

ROOT = Path(__file__).resolve().parents[2]


def _plain_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.e2e
@pytest.mark.parametrize("major", ["0", "1"])
def test_real_pi_session_is_read_completely(major: str, tmp_path: Path) -> None:
    require_pi(major)
    rec = Recording(f"e2e-pi{major}", major, seed=51, prompts=5, window=10000, reserve=2500, keep=2000)
    out = tmp_path / "session.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=120)
    assert result.seconds < 120, f"recording took {result.seconds:.0f}s"
    assert all(r.returncode == 0 for r in result.runs), [r.stderr for r in result.runs if r.returncode]

    # Facts from the file with plain json: what Pi wrote.
    lines = _plain_lines(out)
    assert lines[0]["type"] == "session" and lines[0]["version"] == 3
    n_compactions = sum(1 for e in lines if e["type"] == "compaction")
    assert n_compactions >= 1, "the settings must force at least one compaction"
    assistants = [e["message"] for e in lines if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert assistants and all(m["usage"]["input"] + m["usage"]["cacheRead"] > 0 for m in assistants)
    assert any(m["usage"]["cacheRead"] > 0 for m in assistants[1:]), "prefix cache never hit"
    tool_calls = [b for m in assistants for b in m["content"] if b["type"] == "toolCall"]
    assert {b["name"] for b in tool_calls} >= {"read", "bash"}
    assert sum(1 for e in lines if e["type"] == "message" and e["message"]["role"] == "user") == 5

    # The project reader sees every line.
    from sessiontools.read import load_session

    session = load_session(out)
    assert session.skipped == []
    assert len(session.entries) == len(lines) - 1
    assert sum(1 for e in session.entries if e.type == "compaction") == n_compactions

    # And so does the CLI.
    cli = Path(sys.executable).with_name("sessiontools")
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-m", "sessiontools.cli"]
    proc = subprocess.run([*cmd, "inspect", str(out), "--format", "json"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["sessions"][0]
    assert report["skipped_lines"] == []
    assert len(report["compactions"]) == n_compactions
