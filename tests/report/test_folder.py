"""The pieces every folder answer shares (report/folder.py) and the first-lines facts they group by
(read/facts.py), on hand-made values and on each agent's real first lines (the samples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.read.facts import SessionFacts, facts_from_head, session_facts
from sessiontools.report.folder import ELLIPSIS, folder_names, group_label, middle, more_line, session_groups
from tests.conftest import SAMPLES


def test_middle_keeps_both_ends() -> None:
    assert middle("short", 10) == "short"
    cut = middle("pi/--home-dev-alpha--/2026-03-02T10-20-00-000Z_00000050", 20)
    assert len(cut) == 20 and cut.startswith("pi/--home") and cut.endswith("0-000Z_00000050"[-10:])
    assert ELLIPSIS in cut


def test_folder_names_are_relative_to_the_common_folder() -> None:
    names = folder_names(["/a/b/pi/x.jsonl", "/a/b/codex/2026/y.jsonl", "/a/b/pi/z.jsonl"])
    assert names == {"/a/b/pi/x.jsonl": "pi/x", "/a/b/codex/2026/y.jsonl": "codex/2026/y", "/a/b/pi/z.jsonl": "pi/z"}
    assert folder_names(["/only/one.jsonl"]) == {"/only/one.jsonl": "one"}
    long = folder_names([f"/r/{'d' * 60}/{i}.jsonl" for i in range(2)], width=20)
    assert all(len(v) <= 20 for v in long.values()) and len(set(long.values())) == 2


@pytest.mark.parametrize(("by", "expected"), [
    ("agent", "codex"), ("model", "openai/gpt-5"), ("provider", "openai"), ("project", "/w/p"),
    ("day", "2026-03-08"), ("week", "2026-W10"), ("month", "2026-03"),
])
def test_group_label(by: str, expected: str) -> None:
    facts = SessionFacts("codex", "/w/p", "2026-03-08T23:59:00.000Z")  # a Sunday: ISO week 10
    assert group_label(by, facts, "openai/gpt-5") == expected


def test_group_label_without_facts() -> None:
    assert group_label("day", SessionFacts("pi", None, None), None) == "(unknown)"
    assert group_label("model", None, None) == "(unknown)"
    with pytest.raises(ValueError):
        session_groups("year", [])


def test_more_line() -> None:
    assert more_line(5, 288, "sessions", "--per-session shows each") == (
        "... and 283 more sessions: --per-session shows each; JSON/CSV have every row")
    assert more_line(3, 3, "sessions", "--per-session shows each").startswith("all 3 sessions shown")


def test_facts_from_each_agents_first_lines() -> None:
    """Pi's header, Codex's session_meta and Claude Code's first lines give agent, cwd and start."""
    cases = [(SAMPLES / "pi0-tiny.jsonl", "pi"), (SAMPLES / "codex" / "codex-overflow.jsonl", "codex"),
             (SAMPLES / "claude-code" / "claude-manual.jsonl", "claude-code")]
    for path, agent in cases:
        if not path.exists():
            pytest.skip("sample_sessions/ is empty")
        f = session_facts(path)
        assert f.agent == agent
        assert f.cwd and f.cwd.endswith("/workspace")
        assert f.started and f.started[:4].isdigit() and f.started[10] == "T"


def test_facts_of_bad_heads() -> None:
    assert facts_from_head(b"") == SessionFacts("pi", None, None)
    f = facts_from_head(b'{"type":"session","cwd":"/a\\"b","timestamp":"2026-01-02T03:04:05Z"}\n')
    assert f.cwd == '/a"b' and f.started == "2026-01-02T03:04:05Z"
    assert session_facts(Path("/nonexistent/file.jsonl")).cwd is None
