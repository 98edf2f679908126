"""The bad-input corpus (tests/fixtures/bad): every kind of damage is reported with file:line and a
reason, reading goes on where it safely can, the CLI exits with the documented code and never
shows a traceback, and inputs are never written to."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.errors import InputError
from sessiontools.read import load_session
from tests.conftest import BAD

# file -> (kind of the diagnostic expected, its line, a phrase of its reason, entries read, exit code of inspect)
EXPECTED = {
    "empty.jsonl": ("fatal", 1, "empty file", 0, 3),
    "blank-only.jsonl": ("fatal", 1, "no JSON object", 0, 3),
    "binary.jsonl": ("fatal", 1, "binary file", 0, 3),
    "not-a-session.jsonl": ("fatal", 1, "not a Pi session", 0, 3),
    "no-header.jsonl": ("notice", 1, "no session header", 2, 0),
    "malformed-middle.jsonl": ("skipped", 3, "malformed JSON", 2, 0),
    "truncated-last.jsonl": ("skipped", 3, "truncated last line", 1, 0),
    "glued.jsonl": ("recovered", 3, "2 JSON values on one line", 3, 0),
    "glued-partial.jsonl": ("recovered", 3, "the rest is malformed", 2, 0),
    "bom.jsonl": ("recovered", 1, "byte order mark", 1, 0),
    "invalid-utf8.jsonl": ("notice", 2, "invalid UTF-8", 1, 0),
    "non-object.jsonl": ("skipped", 3, "not a JSON object (list)", 1, 0),
    "duplicate-ids.jsonl": ("notice", 3, "duplicate id 'm1'", 3, 0),
    "orphan-parent.jsonl": ("notice", 3, "parent 'nope' does not exist", 2, 0),
    "cycle.jsonl": ("notice", 2, "parent cycle", 3, 0),
    "unknown-type.jsonl": ("notice", 3, "unknown entry type 'telepathy'", 3, 0),
    "missing-type.jsonl": ("notice", 3, "unknown entry type '<missing>'", 2, 0),
    "second-header.jsonl": ("skipped", 3, "second session header", 2, 0),
    "nan.jsonl": ("skipped", 3, "NaN is not valid JSON", 1, 0),
    "deep-nesting.jsonl": ("skipped", 3, "recursion", 1, 0),
    "message-without-message.jsonl": ("notice", 2, "without a message object", 1, 0),
    "v1-bad-index.jsonl": ("notice", 3, "firstKeptEntryIndex 99", 2, 0),
    # Python cannot encode a lone surrogate (tokenizers, CSV, Parquet): it becomes U+FFFD, one UTF-16
    # unit as the surrogate was, so Pi's character counts are unchanged (issue 27).
    "lone-surrogate.jsonl": ("notice", 2, "lone surrogate escape(s) in 1 string(s): kept as Pi keeps them", 1, 0),
}
CLEAN = {"crlf.jsonl": 2, "blank-lines.jsonl": 2, "header-only.jsonl": 0}


def test_corpus_is_complete() -> None:
    """Every committed bad file has an expectation, and the corpus has at least 20 cases."""
    files = {p.name for p in BAD.glob("*.jsonl")}
    assert files == set(EXPECTED) | set(CLEAN)
    assert len(files) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_is_reported(name: str) -> None:
    """The damage is named with the line it is on, and what can be read is read."""
    kind, line, phrase, n_entries, _ = EXPECTED[name]
    s = load_session(BAD / name)
    hits = [d for d in s.diagnostics if d.kind == kind and d.line == line and phrase in d.reason]
    assert hits, f"{name}: no {kind} diagnostic at line {line} containing {phrase!r}: {s.diagnostics}"
    assert str(hits[0]).startswith(f"{BAD / name}:{line}: ")
    assert len(s.entries) == n_entries


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_harmless_variants_read_cleanly(name: str) -> None:
    """CRLF endings and blank lines are read as Pi reads them, silently."""
    s = load_session(BAD / name)
    assert not s.diagnostics
    assert len(s.entries) == CLEAN[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_exit_codes_and_no_traceback(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect` exits 3 on unreadable files, 0 otherwise, and prints one line per problem."""
    code = main(["inspect", str(BAD / name), "--format", "json"])
    err = capsys.readouterr().err
    assert code == EXPECTED[name][4]
    assert "Traceback" not in err
    assert f"{name}:{EXPECTED[name][1]}:" in err


def test_strict_turns_skipped_lines_into_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(BAD / "malformed-middle.jsonl"), "--format", "json"]) == 0
    assert main(["inspect", str(BAD / "malformed-middle.jsonl"), "--format", "json", "--strict"]) == 3
    assert main(["inspect", str(BAD / "crlf.jsonl"), "--format", "json", "--strict"]) == 0


def test_glued_line_recovers_both_objects() -> None:
    """Both objects of a glued line become entries, in order, on the same physical line."""
    s = load_session(BAD / "glued.jsonl")
    assert [e.id for e in s.entries] == ["m1", "m2", "m3"]
    assert s.entries[1].line == s.entries[2].line == 3
    assert s.has_lines_pi_drops


def test_invalid_utf8_is_replaced_like_node() -> None:
    s = load_session(BAD / "invalid-utf8.jsonl")
    text = s.entries[0].message["content"][0]["text"]  # type: ignore[index]
    assert text == "caf\ufffd\ufffd"


def test_cycle_does_not_hang() -> None:
    from sessiontools.transcript.pi import SessionTree

    s = load_session(BAD / "cycle.jsonl")
    path = SessionTree(s).path()
    assert path.cut_by_cycle and len(path) == 3


def test_huge_line(tmp_path: Path) -> None:
    """A 50 MB line (a huge tool result) is read like any other."""
    big = "x" * (50 * 1024 * 1024)
    data = (
        b'{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}\n'
        b'{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00Z","message":'
        b'{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"'
        + big.encode()
        + b'"}],"isError":false,"timestamp":1}}\n'
    )
    f = tmp_path / "big.jsonl"
    f.write_bytes(data)
    s = load_session(f)
    assert not s.diagnostics and len(s.entries) == 1
    from sessiontools.tokens.chars4 import estimate_tokens

    assert estimate_tokens(s.entries[0].message) == len(big) // 4  # type: ignore[arg-type]


def test_directory_and_missing_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_session(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load_session(tmp_path / "missing.jsonl")
    assert main(["inspect", str(tmp_path / "missing.jsonl")]) == 3
    assert main(["cut", str(tmp_path)]) == 3
    assert main(["inspect", str(tmp_path)]) == 3  # a directory without sessions
    assert "Traceback" not in capsys.readouterr().err


def test_reader_never_writes(tmp_path: Path) -> None:
    """Pi 1.x appends a newline to a file whose last line is unterminated; we never touch inputs."""
    f = tmp_path / "t.jsonl"
    f.write_bytes((BAD / "truncated-last.jsonl").read_bytes())
    before = (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns)
    load_session(f)
    main(["inspect", str(f), "--format", "json"])
    main(["cut", str(f), "--format", "json"])
    assert (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns) == before


def test_console_script_has_no_traceback() -> None:
    """The installed entry point, run as a process, reports and exits 3 on a binary file."""
    proc = subprocess.run(
        [sys.executable, "-m", "sessiontools", "inspect", str(BAD / "binary.jsonl")], capture_output=True, text=True
    )
    assert proc.returncode == 3
    assert "binary file" in proc.stderr and "Traceback" not in proc.stderr


def test_duplicate_id_cycle_is_found() -> None:
    """A duplicate id that re-links an earlier child into a loop is still reported as a cycle."""
    from sessiontools.read import session_from_records

    h = {"type": "session", "version": 3, "id": "d", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"}
    m = {"role": "user", "content": "x", "timestamp": 1}
    s = session_from_records([
        h,
        {"type": "message", "id": "x", "parentId": None, "message": m},
        {"type": "message", "id": "y", "parentId": "x", "message": m},
        {"type": "message", "id": "x", "parentId": "y", "message": m},
    ])
    assert any("parent cycle" in d.reason for d in s.notices)
