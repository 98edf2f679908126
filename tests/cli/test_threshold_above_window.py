"""Claude Code's auto-compact window is at least 100,000 (`MIN_AUTO_COMPACT_WINDOW`), so at a small
`--context-window` its own rule puts the threshold above W (correct per the binary). `replay` says so
in a note after the run, and says nothing when the threshold is below the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.cli.replay_notes import threshold_above_window_notes
from sessiontools.policies.claude_code_rules import rule_for, threshold
from sessiontools.replay.records import ReplaySettings
from sessiontools.testing import run_record
from tests.conftest import SAMPLES

SRC = SAMPLES / "claude-code" / "claude-2.1.150.jsonl"
NOTE = "note: the threshold is above the window in 1 run(s) (W 64,000: threshold 67,000)"


def test_the_rule_gives_a_threshold_above_a_small_window() -> None:
    rule = rule_for("2.1.150")
    assert rule.auto_compact_window_env
    assert threshold(rule, 64_000, "claude-sonnet-4-5") == 100_000 - 20_000 - 13_000 > 64_000
    assert threshold(rule, 200_000, "claude-sonnet-4-5") < 200_000


@pytest.mark.skipif(not SRC.exists(), reason="sample_sessions/claude-code is empty")
def test_replay_says_when_the_threshold_is_above_the_window(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["replay", str(SRC), "--context-window", "64k", "--format", "json", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert NOTE in err and "Claude Code's own rule" in err and "overflow W before the threshold" in err
    (run,) = json.loads(out.read_text())["runs"]
    assert run["settings"]["threshold"] == 67_000 > run["settings"]["context_window"] == 64_000
    assert main(["replay", str(SRC), "--context-window", "120k", "--format", "json", "-o", str(out)]) == 0
    assert "above the window" not in capsys.readouterr().err


def test_the_note_counts_runs_and_lists_each_setting_once() -> None:
    def rec(w: int, t: int | None) -> object:
        if t is None:  # a Pi run: W - reserve, below W
            return run_record(ReplaySettings(w, 3000, 4000, "pi-0"), agent="pi")
        return run_record(ReplaySettings(w, 0, 0, "claude-code", extra=(("autocompact_pct", None),), policy_threshold=t), agent="claude-code")

    runs = [rec(64_000, 67_000), rec(64_000, 67_000), rec(50_000, 67_000), rec(200_000, 167_000), rec(16_000, None)]
    (note,) = threshold_above_window_notes(runs)
    assert note.startswith("note: the threshold is above the window in 3 run(s) "
                           "(W 50,000: threshold 67,000; W 64,000: threshold 67,000), as Claude Code's own rule")
    assert threshold_above_window_notes([rec(200_000, 167_000), rec(16_000, None)]) == []
