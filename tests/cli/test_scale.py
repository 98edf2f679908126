"""Scale features: --jobs gives the same output as one process, the token cache does not change
results, Pi's session directory is the default input, and non-session files in a directory are
skipped with a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

pytestmark = pytest.mark.skipif(not any(SAMPLES.glob("*.jsonl")), reason="sample_sessions/ is empty")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", [
    ["inspect", "--format", "json"],
    ["replay", "--context-window", "16000", "--reserve", "3000,4000", "--keep-recent", "4000", "--format", "json"],
    ["estimate-error", "--format", "json", "--no-cache"],
    ["diff-summaries", "--format", "json", "--all-leaves"],
])
def test_jobs_do_not_change_output(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """The same JSON, byte for byte, with one process and with three."""
    one = _run(capsys, *command, str(SAMPLES), "--jobs", "1")
    three = _run(capsys, *command, str(SAMPLES), "--jobs", "3")
    assert one[0] == three[0] == 0
    assert one[1] == three[1]


def test_token_cache_does_not_change_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """estimate-error gives the same report cold, warm and without the cache."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    args = ["estimate-error", str(SAMPLES / "pi0-chinese.jsonl"), "--format", "json"]
    cold = _run(capsys, *args)
    assert (tmp_path / "cache" / "tokens.sqlite").exists()
    warm = _run(capsys, *args)
    none = _run(capsys, *args, "--no-cache")
    assert cold[0] == warm[0] == none[0] == 0
    assert cold[1] == warm[1] == none[1]


def test_default_input_is_pis_session_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """With no path, PI_CODING_AGENT_DIR/sessions is read; a stray non-session file there is skipped."""
    sessions = tmp_path / "agent" / "sessions" / "--work--"
    sessions.mkdir(parents=True)
    shutil.copy(SAMPLES / "pi0-tiny.jsonl", sessions / "a.jsonl")
    (sessions / "notes.jsonl").write_text('{"level":"info","msg":"not a session"}\n')
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = _run(capsys, "inspect", "--format", "json")
    assert code == 0
    assert '"path_entries"' in out and "a.jsonl" in out
    assert "notes.jsonl: skipped, not a Pi session" in err
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "nowhere"))
    assert _run(capsys, "inspect")[0] == 3


def test_cached_rows_follow_the_file_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A warm cache is keyed by the file's bytes: change the file and the report follows it."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "s.jsonl"
    shutil.copy(SAMPLES / "pi0-tiny.jsonl", f)
    first = _run(capsys, "estimate-error", str(f), "--format", "json")[1]
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines[: len(lines) // 2]) + "\n")  # a shorter session at the same path
    second = _run(capsys, "estimate-error", str(f), "--format", "json")[1]
    fresh = _run(capsys, "estimate-error", str(f), "--format", "json", "--no-cache")[1]
    assert second == fresh != first
