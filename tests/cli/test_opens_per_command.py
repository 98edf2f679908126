"""Each input file is opened once per command, whichever agent wrote it and whichever command reads
it: `inspect`, `report`, `replay` (a table, `--plot` of one setting, a grid's heatmap, windows given
by a bare model id), `export --replay-*`, `estimate-error` and `diff-summaries`, over a folder of a
Pi, a Codex and a Claude Code file (with a subagent file beside it).

Measured before (strace -f, every `openat` of the file): a Pi file once everywhere; a Codex or
Claude Code file twice in every command but `export` (sniffed through one handle, then read again
by its reader); every file a second time under `replay --context-window ID=W` when its model needed
that window (the second pass read the left-out files again).
"""

from __future__ import annotations

import builtins
import collections
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

FILES = {"pi": "pi0-pair-a.jsonl", "codex": "codex/codex-pair-a.jsonl",
         "claude-code": "claude-code/claude-threshold-15.jsonl"}
SUBAGENT = "claude-threshold-15/subagents/agent-a1.jsonl"
WINDOW = ["--context-window", "100000", "--jobs", "1"]


class Opens(collections.Counter[str]):
    """How many times each `.jsonl` below `root` is opened for reading (`open`, `io.open`: what
    `Path.read_bytes` and every reader use), by its path relative to `root`."""

    root = ""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    for name in FILES.values():
        shutil.copy(SAMPLES / name, d / Path(name).name)
    sub = d / SUBAGENT
    sub.parent.mkdir(parents=True)
    shutil.copy(SAMPLES / "claude-code" / "claude-threshold-14.jsonl", sub)
    return d


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Iterator[Opens]:
    counts = Opens()
    counts.root = os.path.realpath(folder)
    real = builtins.open

    def counting(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike) and "r" in mode:
            p = os.path.realpath(os.fspath(file))
            if p.startswith(counts.root + os.sep) and p.endswith(".jsonl"):
                counts[os.path.relpath(p, counts.root)] += 1
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    yield counts


EVERY_FILE_ONCE = {Path(n).name: 1 for n in FILES.values()} | {SUBAGENT: 1}


def _commands(d: Path, out: Path) -> dict[str, list[str]]:
    j = ["-f", "json", "-o", str(out / "o.json")]
    return {
        "inspect": ["inspect", str(d), *j, "--jobs", "1"],
        "report": ["report", str(d), "-o", str(out / "r.html"), *WINDOW],
        "replay": ["replay", str(d), *j, *WINDOW],
        "replay --plot (timeline)": ["replay", str(d / "codex-pair-a.jsonl"), *j, *WINDOW,
                                     "--plot", str(out / "t.png")],
        "replay --plot (heatmap)": ["replay", str(d), *j, "--context-window", "100000,120000", "--jobs", "1",
                                    "--plot", str(out / "h.svg")],
        "replay, a window given by id": ["replay", str(d), *j, "--context-window", "lab-model=100000", "--jobs", "1"],
        "export --replay-*": ["export", str(d), "-o", str(out / "ds"), "--replay-window", "100000", "--jobs", "1"],
        "estimate-error": ["estimate-error", str(d), *j, "--jobs", "1"],
        "diff-summaries": ["diff-summaries", str(d), *j, "--jobs", "1"],
    }


COMMANDS = list(_commands(Path("."), Path(".")))


@pytest.mark.parametrize("command", COMMANDS)
def test_each_file_is_opened_once_per_command(command: str, opens: Opens, folder: Path, tmp_path: Path) -> None:
    argv = _commands(folder, tmp_path)[command]
    assert main(argv) == 0
    one_file = command == "replay --plot (timeline)"
    assert dict(opens) == ({"codex-pair-a.jsonl": 1} if one_file else EVERY_FILE_ONCE)


def test_the_count_sees_a_second_read(opens: Opens, folder: Path) -> None:
    """The counting hook can fail: the reading of a Codex file before this change (sniff, then let the
    reader open it by its path) is seen as two opens."""
    from sessiontools.read.sources import head_of, reader_for

    f = folder / "codex-pair-a.jsonl"
    reader_for(head_of(f)).load(str(f))
    assert dict(opens) == {"codex-pair-a.jsonl": 2}


def test_codex_and_claude_code_sources_carry_a_content_hash(folder: Path) -> None:
    """Read with `content_hash`, every agent's source carries the key of its bytes (a Claude Code
    session's covers its subagent files too), computed from the one read; without it, none."""
    from sessiontools.read.sources import digest_of, load_source

    for name in ("codex-pair-a.jsonl", "claude-threshold-15.jsonl", "pi0-pair-a.jsonl"):
        f = folder / name
        assert load_source(f).content_hash == ""
        key = load_source(f, content_hash=True).content_hash
        assert len(key) == 32
        if name.startswith("claude"):
            assert key != digest_of(f.read_bytes())
            (folder / SUBAGENT).write_bytes((folder / SUBAGENT).read_bytes() + b"\n")
            assert load_source(f, content_hash=True).content_hash != key  # a subagent file changed
        else:
            assert key == digest_of(f.read_bytes())
