"""Results cached by file content, for every agent: a Codex or Claude Code source now carries the key
of its bytes (`read.files.digest_of`, from the one read), so that their counter choices are kept
as Pi's are (`cli.priors.choices_kept`), by `replay` and by `report` (which also counts through the
persistent token store now), and estimate-error's rows are kept for them too. A warm run compares
no counter again and writes the same bytes as the cold run; other bytes are another key.

Before: only Pi paths' choices were cached (a Codex or Claude Code source had no content hash), and
`report` kept none, for any agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import sessiontools.replay.counter_choice as cc
from sessiontools.cli import main
from tests.conftest import SAMPLES

FILES = ("codex/codex-pair-a.jsonl", "claude-code/claude-threshold-15.jsonl")
REPLAY = ["--context-window", "100000", "--jobs", "1"]


def _no_comparison(*_: Any) -> Any:
    raise AssertionError("the counters were compared again")


def _argv(command: str, f: Path, out: Path) -> list[str]:
    if command == "report":
        return ["report", str(f), "-o", str(out.with_suffix(".html")), *REPLAY]
    return ["replay", str(f), "-f", "json", "-o", str(out.with_suffix(".json")), *REPLAY]


def _written(out: Path) -> bytes:
    return next(p for p in (out.with_suffix(".html"), out.with_suffix(".json")) if p.exists()).read_bytes()


@pytest.mark.parametrize("command", ["replay", "report"])
@pytest.mark.parametrize("name", FILES)
def test_a_warm_run_takes_the_kept_choice(name: str, command: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / Path(name).name
    shutil.copyfile(SAMPLES / name, f)
    calls: list[int] = []
    real = cc.in_session_errors

    def counted(inp: Any) -> Any:
        calls.append(1)
        return real(inp)

    with monkeypatch.context() as m:
        m.setattr(cc, "in_session_errors", counted)
        assert main(_argv(command, f, tmp_path / "cold")) == 0
    assert calls, "the cold run compared no counters: the test would prove nothing"
    with monkeypatch.context() as m:
        m.setattr(cc, "in_session_errors", _no_comparison)
        assert main(_argv(command, f, tmp_path / "warm")) == 0
        assert _written(tmp_path / "warm") == _written(tmp_path / "cold")
        with f.open("ab") as fh:  # other bytes: another key, compared again
            fh.write(b"\n")
        capsys.readouterr()
        main(_argv(command, f, tmp_path / "other"))
        assert "the counters were compared again" in capsys.readouterr().err


@pytest.mark.parametrize("name", FILES)
def test_estimate_error_rows_kept_for_every_agent(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """estimate-error's rows of a Codex or Claude Code file are stored under its key and a warm run's
    JSON is byte-identical to the cold run's."""
    import sqlite3

    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / Path(name).name
    shutil.copyfile(SAMPLES / name, f)
    for run in ("cold", "warm"):
        assert main(["estimate-error", str(f), "-f", "json", "-o", str(tmp_path / f"{run}.json"), "--jobs", "1"]) == 0
    assert (tmp_path / "warm.json").read_bytes() == (tmp_path / "cold.json").read_bytes()
    with sqlite3.connect(tmp_path / "cache" / "tokens.sqlite") as db:
        keys = [k for (k,) in db.execute("select key from results")]
    assert sum(k.startswith("estimate-error:") for k in keys) == 1
