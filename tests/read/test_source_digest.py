"""`load_source_digest`: the source `load_source` gives and the sha256 of the file's bytes, from one
read (what `export` uses to hash a file without a pass that only hashes it), for every agent's
files, a Claude Code session's subagent files included; `file_stamp` for the cheap skip."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from sessiontools.errors import InputError
from sessiontools.read.sources import file_stamp, load_source, load_source_digest
from tests.conftest import SAMPLES

FILES = sorted(p for p in SAMPLES.rglob("*.jsonl"))


def _view(source: object) -> object:
    """What a source holds, comparable (a Pi `Entry` compares by identity)."""
    entries = getattr(source, "entries", None)
    if entries is None:
        return source
    return (source.path, source.header, source.format_version, source.diagnostics, source.content_hash,  # type: ignore[attr-defined]
            [(e.type, e.id, e.parent_id, e.line, e.index, e.data) for e in entries])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_same_source_and_the_hash_of_its_bytes(path: Path) -> None:
    source, digest = load_source_digest(path)
    assert _view(source) == _view(load_source(path))
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_claude_code_session_keeps_its_subagent_files(tmp_path: Path) -> None:
    main = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "claude-2.1.63.jsonl", main)
    sub = tmp_path / "session" / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(SAMPLES / "claude-code" / "claude-2.1.20.jsonl", sub / "agent-a1.jsonl")
    source, digest = load_source_digest(main)
    assert len(source.subagents) == 1 and source == load_source(main)
    assert digest == hashlib.sha256(main.read_bytes()).hexdigest()  # the session file's own bytes


def test_a_directory_and_a_missing_file_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        load_source_digest(tmp_path)
    with pytest.raises(InputError):
        load_source_digest(tmp_path / "missing.jsonl")


def test_file_stamp(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"{}\n")
    assert file_stamp(f) == (3, os.stat(f).st_mtime_ns)
    assert file_stamp(tmp_path / "missing.jsonl") is None
    assert file_stamp("memory://x/s.jsonl") is None
