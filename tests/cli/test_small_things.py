"""Issue 26's small things: an output suffix no format writes is refused, bare `sessiontools`
prints the help without "error:"."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES


@pytest.mark.parametrize("command", [["inspect"], ["estimate-error", "--estimators", "chars4"], ["diff-summaries"],
                                     ["replay", "--context-window", "16k", "--reserve", "3k"]])
def test_a_table_into_a_spreadsheet_is_refused(command: list[str], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`-o r.xlsx` used to write a text table into an .xlsx file (exit 0): now exit 2, nothing written."""
    out = tmp_path / "r.xlsx"
    code = main([*command, str(SAMPLES / "pi0-tiny.jsonl"), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "cannot write .xlsx files" in err
    assert main([*command, str(SAMPLES / "pi0-tiny.jsonl"), "-o", str(tmp_path / "r.txt")]) in (0, 1)


def test_bare_command_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([])
    out, err = capsys.readouterr()
    assert code == 2
    assert out.startswith("Usage: ") and "inspect" in out
    assert "error" not in err and "error:" not in out


def test_options_no_file_reads_are_said_to_be_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    """--reserve and --autocompact-pct on Codex files, --keep-recent above a Pi window: a note each."""
    codex = SAMPLES / "codex" / "codex-overflow.jsonl"
    if not codex.exists():
        pytest.skip("sample_sessions/codex is empty")
    assert main(["replay", str(codex), "--context-window", "200k", "--reserve", "8k", "--autocompact-pct", "50",
                 "--format", "json", "-o", "/dev/null"]) == 0
    err = capsys.readouterr().err
    assert "note: --reserve was ignored: it applies to pi-0, pi-1, and the files were replayed under codex" in err
    assert "note: --autocompact-pct was ignored" in err
    assert main(["replay", str(SAMPLES / "pi0-tiny.jsonl"), "--context-window", "16k", "--reserve", "3k",
                 "--keep-recent", "500k", "--format", "json", "-o", "/dev/null"]) == 0
    err = capsys.readouterr().err
    assert "note: --keep-recent 500,000 is not below the window of 1 run(s)" in err
    assert main(["replay", str(SAMPLES / "pi0-tiny.jsonl"), "--context-window", "16k", "--reserve", "3k",
                 "--format", "json", "-o", "/dev/null"]) == 0
    assert "ignored" not in capsys.readouterr().err


def test_the_reactive_rule_reads_no_percentage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`claude-code-reactive` compacts at W alone (its one axis, `Policy.axes`): --autocompact-pct and
    --max-output-tokens give it one run (not one per percentage, all alike) and a note that they were
    ignored, as for any policy that reads neither."""
    import json

    out = tmp_path / "r.json"
    assert main(["replay", str(SAMPLES / "claude-code" / "claude-reactive.jsonl"), "--policy", "claude-code-reactive",
                 "--context-window", "13000", "--autocompact-pct", "14,15", "--max-output-tokens", "32000",
                 "--format", "json", "-o", str(out), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    (run,) = json.loads(out.read_text())["runs"]
    assert run["settings"]["autocompact_pct"] is None and "max_output_tokens" not in run["settings"]
    assert run["settings"]["threshold"] == 13000
    for option in ("--autocompact-pct", "--max-output-tokens"):
        assert (f"note: {option} was ignored: it applies to claude-code, and the files were replayed under "
                "claude-code-reactive") in err, err


def test_a_claude_code_file_of_a_model_the_catalogue_lacks_is_replayed_with_a_note(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Claude Code's own rule gives the window whatever the model (200k; 1M for `[1m]`): a file of a
    model no catalogue has is replayed there, not refused, with a note; its cost is null, never 0."""
    import json
    import re

    src = SAMPLES / "claude-code" / "claude-2.0.77.jsonl"
    if not src.exists():
        pytest.skip("sample_sessions/claude-code is empty")
    f = tmp_path / "gateway.jsonl"
    f.write_bytes(re.sub(rb'"model":"claude-[^"]*"', b'"model":"acme-coder-9"', src.read_bytes()))
    out = tmp_path / "r.json"
    assert main(["replay", str(f), "--format", "json", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: 1 file(s) of model(s) the catalogue lacks (anthropic/acme-coder-9) were replayed at the window" in err
    assert "200,000" in err and "cost is unknown" in err
    (run,) = json.loads(out.read_text())["runs"]
    assert run["settings"]["context_window"] == 200_000 and run["metrics"]["cost"] is None
    assert main(["replay", str(f), "--context-window", "150k", "--format", "json", "-o", str(out)]) == 0
    assert "catalogue lacks" not in capsys.readouterr().err  # a window given: nothing to say
    assert main(["replay", str(src), "--format", "json", "-o", str(out)]) == 0
    assert "catalogue lacks" not in capsys.readouterr().err
