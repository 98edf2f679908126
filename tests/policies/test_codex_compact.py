"""Codex's compact prompt (codex-rs 0.171.0) and what `resummarize` says of Codex and Claude Code files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.policies.codex_compact import REMOTE_REASON, compact_prompt, summary_prefix
from sessiontools.read.codex.records import SUMMARY_PREFIX
from tests.conftest import SAMPLES
from tests.transcript.test_codex import assistant, count, line, usage, user


def test_prompt_files_are_the_pinned_binary_s() -> None:
    """The templates are the strings compiled into the pinned Codex binary (include_str!), byte for byte."""
    from lab.codex_env import SKIP_ENV, CodexUnavailable, ensure_codex, skip_requested

    if skip_requested():
        pytest.skip(f"{SKIP_ENV}=1: the pinned Codex CLI is NOT checked")
    try:
        env = ensure_codex()
    except CodexUnavailable as exc:
        pytest.fail(f"the pinned Codex CLI is required: {exc}", pytrace=False)
    data = env.binary.read_bytes()
    assert compact_prompt().encode() in data
    assert data.count(compact_prompt().encode()) >= 1
    # summary_prefix.md has no final newline in codex-rs: the prompt follows it directly in the binary
    assert (summary_prefix() + compact_prompt()[:40]).encode() in data


def test_the_reader_s_prefix_agrees() -> None:
    assert summary_prefix().startswith(SUMMARY_PREFIX)
    assert compact_prompt().startswith("You are performing a CONTEXT CHECKPOINT COMPACTION.")


def test_remote_older_codex_and_claude_files_are_skipped_with_the_reason(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    remote = tmp_path / "remote.jsonl"
    objs = [
        line("session_meta", {"id": "S2", "cwd": "/w", "cli_version": "0.171.0", "instructions": None}),
        line("response_item", user("fix the bug")),
        line("response_item", assistant("done")),
        line("event_msg", count(usage(500, 0, 10), usage(500, 0, 10), 258400)),
        line("response_item", {"type": "compaction", "encrypted_content": "gAAAA..."}),
        line("compacted", {"message": "", "replacement_history": [
            user("fix the bug"), {"type": "compaction", "encrypted_content": "gAAAA..."}]}),
    ]
    remote.write_text("".join(json.dumps(o) + "\n" for o in objs))
    args = ["--endpoint", "http://127.0.0.1:9/v1", "--model", "a/b", "-o", str(tmp_path / "out"),
            "--cache-dir", str(tmp_path / "c")]
    assert main(["resummarize", str(remote), *args]) == 3
    err = capsys.readouterr().err
    assert REMOTE_REASON in err and "cannot be regenerated" in err
    other = tmp_path / "older.jsonl"
    other.write_text(remote.read_text().replace('"0.171.0"', '"0.63.0"').replace(
        '"encrypted_content": "gAAAA..."', '"summary": "s"'))
    assert main(["resummarize", str(other), *args]) == 3
    assert "written by Codex 0.63.0: only the local compaction of Codex 0.145.0, 0.171.0 is ported" in capsys.readouterr().err
    assert main(["resummarize", str(SAMPLES / "claude-code"), *args]) == 3
    assert "Claude Code compactions are not supported" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
