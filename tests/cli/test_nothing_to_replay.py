"""Files with nothing to replay are a note and left out, in `replay`, `report` and `export`, beside a
file that replays: never an internal error.

Real shapes (synthetic fixtures, tests/fixtures/nothing_to_replay): a Claude Code file of progress
and system lines only (84 of 2,794 real files checked; `replay` and `report` failed on each with
"IndexError" in the prior keeping, the file left out as a bug), and a Codex rollout interrupted
before its first response (32; `report` on a folder holding one died with "KeyError: 'settings'",
exit 70, the marker record taken for a run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

EMPTY = Path(__file__).parents[1] / "fixtures" / "nothing_to_replay"
NOTES = {"claude-no-message.jsonl": "no message in the file: nothing to replay; left out",
         "codex-no-response.jsonl": "no model request in the file (1 message(s), no response): nothing to replay"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    for f in (*EMPTY.glob("*.jsonl"), SAMPLES / "pi0-tiny.jsonl"):
        shutil.copyfile(f, d / f.name)
    return d


@pytest.mark.parametrize("command", ["replay", "report", "export"])
def test_nothing_to_replay_is_a_note_beside_a_file_that_replays(command: str, folder: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / ("r.html" if command == "report" else "out")
    argv = {"replay": ["replay", str(folder), "-f", "json", "-o", str(out)],
            "report": ["report", str(folder), "-o", str(out)],
            "export": ["export", str(folder), "-o", str(out), "--replay-window", "24k"]}[command]
    code = main([*argv, "--context-window", "24k", "--jobs", "1"] if command != "export" else [*argv, "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "internal error" not in err and "Traceback" not in err
    if command == "replay":
        assert f"claude-no-message.jsonl: {NOTES['claude-no-message.jsonl']}" in err
    if command == "report":
        assert "pi0-tiny" in out.read_text(encoding="utf-8").split('<section id="replay">')[1]


@pytest.mark.parametrize("name", sorted(NOTES))
def test_a_file_with_nothing_to_replay_alone(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Alone, under the defaults: the note, then "no session could be replayed", exit 3 (no readable
    input to replay), as for every other file that gives no run; the report is written (exit 0)."""
    f = EMPTY / name
    assert main(["replay", str(f), "--jobs", "1"]) == 3
    err = capsys.readouterr().err
    assert NOTES[name] in err and "no session could be replayed" in err and "internal error" not in err
    d = tmp_path / "in"
    d.mkdir()
    shutil.copyfile(f, d / name)
    assert main(["report", str(d), "-o", str(tmp_path / "r.html"), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert NOTES[name] in err and "internal error" not in err
