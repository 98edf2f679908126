"""Which agent wrote a file is sniffed from its first lines; a JSONL that no reader recognises and
that has no Pi session header is not a session (issue 12 cause 9: it used to be read as Pi v3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.read.agents import Agent
from sessiontools.read.sources import detect_agent, load_source

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


@pytest.mark.parametrize(("rel", "agent"), [
    ("pi0-tiny.jsonl", Agent.PI),
    ("v1-tiny.jsonl", Agent.PI),
    ("codex/codex-pair-a.jsonl", Agent.CODEX),
    ("claude-code/claude-manual.jsonl", Agent.CLAUDE_CODE),
])
def test_samples_are_read_by_their_agents_reader(rel: str, agent: Agent) -> None:
    """Each bundled sample is recognised as the agent that wrote it and read by that agent's reader."""
    data = (SAMPLES / rel).read_bytes()[:65536]
    assert detect_agent(data) == agent
    assert load_source(SAMPLES / rel).agent == agent


def test_another_programs_jsonl_log_is_not_a_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A structured log with `type` keys Pi never wrote: exit 3 named alone, skipped with a note in a directory."""
    log = tmp_path / "events.jsonl"
    log.write_text('{"type":"event","level":"info","msg":"started"}\n{"type":"event","level":"warn","msg":"x"}\n')
    assert detect_agent(log.read_bytes()) == Agent.PI  # no reader claims it: Pi's reader decides
    assert main(["inspect", str(log), "--format", "json"]) == 3
    err = capsys.readouterr().err
    assert f"{log}:1: " in err and "not a Pi session" in err
    assert main(["inspect", str(tmp_path), "--format", "json"]) == 3  # nothing readable in the directory
    err = capsys.readouterr().err
    assert "skipped, not a Pi session" in err and "Traceback" not in err
