"""Issue 26: progress on every phase of every command (reading, replaying, tokenizing, fitting,
rendering, writing; `report`: its one counted read of the files, then each of its phases), with
counts and rate, on a terminal only.

stderr is replaced by a fake terminal (a text buffer whose `isatty()` is true): each command's
phases must appear there, counted ones with "done/total" and a rate ("12.3/s"). The same run into a
pipe (a plain buffer) shows none of it, and stdout is the same either way.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

FILES = ("pi0-pair-a.jsonl", "pi0-threshold-5x.jsonl", "pi1-pair-a.jsonl", "pi1-threshold-5x.jsonl",
         "codex/codex-pair-a.jsonl")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(args: list[str], tty: bool) -> tuple[int, str, str]:
    err: io.StringIO = FakeTerminal() if tty else io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("progress") / "sessions"
    d.mkdir()
    for f in FILES:
        shutil.copy(SAMPLES / f, d / Path(f).name)
    return d


def _counted(err: str, label: str, total: int) -> bool:
    """A counted phase: its label, then done/total and a rate on the same drawn line."""
    return re.search(re.escape(label) + r"[^\r\n]*" + f"{total}/{total}" + r"[^\r\n]*[0-9.,]+/s", _plain(err)) is not None


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


CASES = {
    "inspect": (["inspect", "{d}", "-o", "{o}/inspect.txt"], ["inspecting"], ["rendering inspect.txt"]),
    "replay": (["replay", "{d}", "--context-window", "200k", "--reserve", "8k,16k", "-o", "{o}/replay.json",
                "-f", "json"], ["replaying"], ["fitting priors", "rendering JSON", "writing replay.json"]),
    "estimate-error": (["estimate-error", "{d}", "--estimators", "chars4,pi", "--plot", "{o}/ee.png"], ["estimating"],
                       ["fitting the estimators", "drawing ee.png"]),
    "diff-summaries": (["diff-summaries", "{d}", "-f", "csv", "-o", "{o}/d.csv"], ["analysing"], ["writing d.csv"]),
    "report": (["report", "{d}", "-o", "{o}/r.html", "--context-window", "200k"],
               ["report: reading the files (every section)"],  # one counted pass: each file read once
               ["report: fitting priors; replaying the sessions with few requests",
                "report: fitting the estimators and the calibration", "report: pairing the summaries",
                "report: rendering the HTML page", "report: writing r.html"]),
    "export": (["export", "{d}", "-o", "{o}/ds", "--jobs", "1"], ["exporting"], ["writing the dataset"]),
}


@pytest.mark.parametrize("command", sorted(CASES))
def test_every_phase_shows_on_a_terminal_and_nothing_in_a_pipe(command: str, folder: Path, tmp_path: Path) -> None:
    argv, counted, phases = CASES[command]
    outs = {}
    for tty in (True, False):
        o = tmp_path / ("tty" if tty else "pipe")
        o.mkdir()
        args = [a.format(d=folder, o=o) for a in argv]
        code, out, err = _run(args, tty)
        assert code == 0, err[-2000:]
        outs[tty] = out
        if tty:
            for label in counted:
                assert _counted(err, label, len(FILES)), (label, _plain(err)[-3000:])
            for label in phases:
                assert label in _plain(err), (label, _plain(err)[-3000:])
        else:
            assert "\x1b[" not in err
            assert not any(label in err for label in (*counted, *phases)), err[-2000:]
            assert "/s " not in err
    assert outs[True] == outs[False]  # progress never touches stdout
