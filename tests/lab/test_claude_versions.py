"""`lab.claude_versions` (per-CLI-version figures over a folder) on synthetic files written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import claude_versions
from tests.read.test_claude_code import _bytes
from tests.replay.test_claude_code_real_shapes import _manual_after_too_long, _threshold_before_rate_limit


def _folder(tmp_path: Path) -> Path:
    proj = tmp_path / "projects" / "-w"
    proj.mkdir(parents=True)
    (proj / "a.jsonl").write_bytes(_bytes(_manual_after_too_long("2.1.12")))
    (proj / "b.jsonl").write_bytes(_bytes(_threshold_before_rate_limit()))
    (proj / "meta.jsonl").write_bytes(_bytes([{"type": "summary", "summary": "s", "leafUuid": "x"}]))
    (proj / "agent-1.jsonl").write_bytes(_bytes(_manual_after_too_long("2.1.12")))  # a 1.x sidechain file: left out
    (proj / "notes.txt").write_text("not a transcript")
    return tmp_path


def test_rows_per_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _folder(tmp_path)
    assert [f.name for f in claude_versions.session_files(root)] == ["a.jsonl", "b.jsonl", "meta.jsonl"]
    out = tmp_path / "o.json"
    assert claude_versions.main([str(root), "--no-ccusage", "--files", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    recs = json.loads(out.read_text())["files"]
    rows = {r["version"]: r for r in claude_versions.version_rows(recs)}
    assert rows["2.1.12"]["manual"] == 1
    assert rows["2.1.12"]["manual_applied"] == 1 and rows["2.1.12"]["extra"] == 0
    assert rows["2.0.76"]["auto"] == 1 and rows["2.0.76"]["extra"] == 0
    assert rows["all"]["files"] == 3 and rows["all"]["read"] == 3 and rows["all"]["conversations"] == 2
    assert "| 2.1.12 | 1/1 | 1 | 0 | 1 | 0/0 | 0 | 1/1 |" in text
    assert "projects/-w/a.jsonl | 2.1.12 | claude-code-reactive | manual:158110 | user:158110 | 0/0 |" in text


def test_not_a_directory(tmp_path: Path) -> None:
    assert claude_versions.main([str(tmp_path / "none"), "--no-ccusage"]) == 2
