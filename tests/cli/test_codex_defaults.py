"""`replay ~/.codex/sessions` at default settings (issue 25): a rollout closed before its first response
(78 of the 135 real rollouts without compactions read last session) has nothing to replay: one note
line, the folder's other files replayed, exit 0; a model codex-rs does not know gets the window the
release would use."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

from sessiontools.cli import main
from sessiontools.policies.codex import codex_policy
from sessiontools.policies.codex_rules import context_window
from tests.conftest import SAMPLES


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _empty_rollout(path: Path) -> None:
    """session_meta and the initial context, no response (the user quit before the first answer)."""
    lines = [
        {"timestamp": "2026-02-16T16:37:13.000Z", "type": "session_meta",
         "payload": {"id": "E", "cwd": "/w", "cli_version": "0.101.0", "originator": "codex_cli_rs", "source": "cli"}},
        {"timestamp": "2026-02-16T16:37:13.001Z", "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_rollout_without_a_request_is_a_note_not_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(SAMPLES / "codex" / "codex-pair-a.jsonl", folder / "a.jsonl")
    _empty_rollout(folder / "empty.jsonl")
    code, _, err = _run("replay", str(folder), "--format", "json", "--output", str(tmp_path / "out.json"))
    assert code == 0, err
    runs = json.loads((tmp_path / "out.json").read_text())["runs"]
    assert [Path(r["session"]).name for r in runs] == ["a.jsonl"]
    notes = [ln for ln in err.splitlines() if "empty.jsonl" in ln]
    assert notes == [f"note: {folder / 'empty.jsonl'}: no model request in the file (1 message(s), no response): "
                     "nothing to replay; left out"]
    assert "error" not in err


def test_only_empty_rollouts_is_no_input(tmp_path: Path) -> None:
    _empty_rollout(tmp_path / "empty.jsonl")
    code, _, err = _run("replay", str(tmp_path / "empty.jsonl"))
    assert code == 3
    assert "nothing to replay" in err and "Traceback" not in err


def test_an_unknown_model_gets_the_release_fallback_window() -> None:
    # 0.99 on (codex-rs a1abd53b6 'Remove offline fallback for models'): a slug not in the catalogue
    # gets model_info_from_slug's 272,000; before, the prefix rules, and nothing for other models
    assert context_window("kimi-k2-0905", "0.99.0") == 272_000
    assert context_window("kimi-k2-0905", "0.98.0") is None
    assert context_window("o3", "0.98.0") == 200_000
    assert context_window("gpt-5.1-codex", "0.63.0") == 272_000
    assert codex_policy("0.98.0", "kimi-k2-0905").default_window() == 272_000  # replay still runs
