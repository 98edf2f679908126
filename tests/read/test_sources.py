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


def _every_reader(head: bytes):  # type: ignore[no-untyped-def]
    """`reader_for` without its Pi-header shortcut: every reader asked in turn."""
    from sessiontools.read.sources import FALLBACK, READERS

    return next((r for r in READERS if r.recognises(head)), FALLBACK)


_HEADS = [
    b'{"type":"session","version":3,"id":"a"}\n{"type":"message"}\n',
    b'\n\n  \n{"type":"session","id":"a"}\n',
    b'{"type":"session_meta","payload":{"id":"x"}}\n',
    b'{"type":"session"}{"type":"session_meta","payload":{}}\n',  # glued lines: not parsed here
    b'\xef\xbb\xbf{"type":"session","id":"a"}\n',  # a BOM: not parsed here
    b'{"type":"session","id":"a"',  # cut by the end of the head
    b'{"type":"summary","summary":"s","leafUuid":"u"}\n{"type":"session"}\n',
    b'[{"type":"session"}]\n', b'{"type":["session"]}\n', b'', b'\n\n', b'{"id":"r","instructions":"i"}\n',
    b'{"type":"session","sessionId":"s","uuid":"u"}\r\n',
]


@pytest.mark.parametrize("head", _HEADS)
def test_pi_header_shortcut_agrees_with_every_reader(head: bytes) -> None:
    """`reader_for` gives a file whose first line is a Pi header to Pi without asking the others
    (they are not imported for it); on any head it answers what asking every reader answers."""
    from sessiontools.read.sources import FALLBACK, pi_header_first, reader_for

    assert reader_for(head) is _every_reader(head)
    if pi_header_first(head):
        assert _every_reader(head) is FALLBACK


def test_pi_header_shortcut_agrees_on_every_sample_and_fixture() -> None:
    from sessiontools.read.sources import pi_header_first, reader_for

    files = sorted(SAMPLES.rglob("*.jsonl")) + sorted((SAMPLES.parent / "tests").rglob("*.jsonl"))
    shortcut = 0
    for f in files:
        head = f.read_bytes()[:65536]
        assert reader_for(head) is _every_reader(head), f
        shortcut += pi_header_first(head)
    assert shortcut >= 10 and len(files) - shortcut >= 10  # both ways exercised
