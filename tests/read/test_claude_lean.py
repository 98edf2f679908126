"""The Claude Code reader without the long texts (`read.claude_code.lean`, issue 28: `inspect`'s
reading) against the ordinary way: the same records (every field but the texts left out of `raw`),
the same diagnostics, and the same `inspect` document, over every sample and bad fixture, every odd
value in every field of each kind of line, truncations and a session with its subagent files; with
and without the C scanner."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontools.analysis.inspect import inspect_fn, inspect_source
from sessiontools.read.claude_code import load as claude_load
from sessiontools.read.claude_code.load import load_claude_session, parse_bytes
from sessiontools.read.claude_code.summary import ClaudeSummary
from sessiontools.read.parallel import reads_selectively
from sessiontools.read.sources import load_source
from tests.conftest import BAD, ROOT, SAMPLES
from tests.read.test_native_project import _native
from tests.robust.mutate import BASES, ODD_VALUES, field_paths, mutated, one_line_per_kind

CLAUDE = sorted((SAMPLES / "claude-code").glob("*.jsonl"))
PROBES = sorted((ROOT / "tests" / "fixtures" / "claude_probes").glob("*.jsonl.gz"))


def _record_view(r: Any) -> tuple[Any, ...]:
    return (r.line, r.type, r.uuid, r.parent, r.logical_parent, r.sidechain, r.subtype, r.session_id, r.timestamp)


def _inspect(f: Any) -> bytes:
    return orjson.dumps(inspect_source(f))


def _same(data: bytes, monkeypatch: pytest.MonkeyPatch | None = None) -> int:
    """Both ways read `data` alike; how many of its records came from the C scanner's projection."""
    _native()  # (a skip only without a C compiler)
    full = parse_bytes(data, "c.jsonl")
    lean = parse_bytes(data, "c.jsonl", texts=False)
    assert repr(lean.diagnostics) == repr(full.diagnostics)
    assert [_record_view(r) for r in lean.records] == [_record_view(r) for r in full.records]
    assert _inspect(lean) == _inspect(full)
    if monkeypatch is not None:  # without the extension: the ordinary way, whatever `texts` says
        with monkeypatch.context() as m:
            m.setattr(claude_load, "project_lines", None)
            plain = parse_bytes(data, "c.jsonl", texts=False)
        assert repr(plain.diagnostics) == repr(full.diagnostics) and _inspect(plain) == _inspect(full)
    return sum(1 for a, b in zip(lean.records, full.records, strict=True) if a.raw != b.raw)


def _claude_files() -> list[bytes]:
    # (every bad fixture, whichever agent's it is: bad input for this reader too)
    return ([f.read_bytes() for f in CLAUDE] + [gzip.decompress(f.read_bytes()) for f in PROBES]
            + [f.read_bytes() for f in sorted(BAD.rglob("*.jsonl"))])


def test_every_sample_probe_and_bad_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    lean_lines = 0
    for data in _claude_files():
        lean_lines += _same(data, monkeypatch)
    assert lean_lines > 500  # (texts were left out: the lean way is taken)


def test_the_texts_are_left_out_and_nothing_else() -> None:
    _native()
    data = CLAUDE[0].read_bytes()
    lean = parse_bytes(data, "c.jsonl", texts=False)
    raws = [r.raw for r in lean.records]
    assert not any("toolUseResult" in raw for raw in raws)
    blocks = [b for raw in raws for b in (raw.get("message") or {}).get("content") or () if isinstance(b, dict)]
    assert blocks and not any("content" in b or "input" in b or "thinking" in b for b in blocks)
    assert any(b.get("type") == "tool_result" for b in blocks)


@pytest.mark.parametrize("cut", [0.1, 0.37, 0.5, 0.73, 0.99])
def test_truncated_files(cut: float) -> None:
    for data in (f.read_bytes() for f in CLAUDE[:4]):
        _same(data[: int(len(data) * cut)])


def test_every_odd_value_in_every_field_of_each_kind_of_line() -> None:
    lines = BASES["claude"].read_text().splitlines()
    checked = 0
    for index, obj in one_line_per_kind(lines):
        one = [lines[0], lines[index]]
        for k, path in enumerate(field_paths(obj)):
            for value in ODD_VALUES[k % 2::2]:
                _same(("\n".join(mutated(one, 1, path, value)) + "\n").encode())
                checked += 1
    assert checked > 300


def test_a_session_with_subagents_through_load_source(tmp_path: Path) -> None:
    _native()
    session = next(f for f in CLAUDE if f.with_suffix("").is_dir()) if any(
        f.with_suffix("").is_dir() for f in CLAUDE) else None
    if session is None:  # (a session and a subagent file of our own, from the samples)
        session = tmp_path / "s.jsonl"
        shutil.copy(CLAUDE[0], session)
        (tmp_path / "s" / "subagents").mkdir(parents=True)
        shutil.copy(CLAUDE[1], tmp_path / "s" / "subagents" / "agent-1.jsonl")
    full, lean = load_source(session), load_claude_session(session, texts=False)
    summary = load_source(session, selective=True)  # (the C's summary: read.claude_code.summary)
    assert lean.subagents and len(lean.subagents) == len(full.subagents)
    assert isinstance(summary, ClaudeSummary) and len(summary.files) == 1 + len(full.subagents)
    assert _inspect(lean) == _inspect(full) == _inspect(summary)
    assert load_claude_session(session, texts=False).subagents[0].records[0].raw is not None
    assert reads_selectively(inspect_fn()) and inspect_fn(leaf=None).keywords == {"leaf": None}


def test_lines_read_by_field_alone() -> None:
    """Fields the records or the transcript read that the samples seldom hold: rendered attachments
    (messages of their own), a compact summary marked by `isCompactSummary` alone, a title line."""
    lines = CLAUDE[0].read_text().splitlines()
    last = next(orjson.loads(x) for x in reversed(lines) if orjson.loads(x).get("uuid"))
    base = {"sessionId": last.get("sessionId"), "timestamp": last.get("timestamp"), "isSidechain": False}
    extra = [
        {**base, "type": "attachment", "uuid": "a1", "parentUuid": last["uuid"],
         "attachment": {"type": "edited_text_file", "filename": "a.py", "snippet": "1: x"}},
        {**base, "type": "attachment", "uuid": "a2", "parentUuid": "a1",
         "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "and this"}]}},
        {**base, "type": "user", "uuid": "s1", "parentUuid": "a2", "isCompactSummary": True,
         "message": {"role": "user", "content": [{"type": "text", "text": "Summary: all of it"}]}},
        {"type": "summary", "summary": "a title", "leafUuid": "s1"},
    ]
    data = ("\n".join([*lines, *(orjson.dumps(x).decode() for x in extra)]) + "\n").encode()
    _same(data)
    roles = inspect_source(parse_bytes(data, "c.jsonl", texts=False))["messages_by_role"]
    assert roles.get("other", 0) >= 2 and roles.get("summary", 0) >= 1


def _lean_view(t: Any) -> tuple[Any, ...]:
    """A transcript as a lean one holds it: every message but its units (a summary's kept), every
    request but its context."""
    from sessiontools.transcript.model import Role

    paths = [(p.leaf_id, p.sidechain, dict(p.skipped), p.compactions, p.overflows,
              [(m.index, m.id, m.line, m.role, m.timestamp, m.units if m.role is Role.SUMMARY else ())
               for m in p.messages],
              [(r.index, r.line, r.usage, r.provider, r.model, r.timestamp, r.id, r.stop_reason) for r in p.requests])
             for p in t.paths]
    return (t.source, t.session_id, t.format, paths, t.billed, repr(t.diagnostics), t.settings,
            t.off_path_compactions)


def test_the_lean_transcript_is_the_full_one_without_units_and_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ClaudeFile.texts` False: the transcript's messages have no units (but a summary's) and its
    requests no context; all else equal to the full transcript's, with the C scanner and without."""
    from sessiontools.transcript.claude_code import claude_transcript

    lean_units = 0
    for data in _claude_files():
        full = claude_transcript(parse_bytes(data, "c.jsonl"))
        for scanner in (True, False):
            with monkeypatch.context() as m:
                if not scanner:
                    m.setattr(claude_load, "project_lines", None)
                f = parse_bytes(data, "c.jsonl", texts=False)
            assert not f.texts
            lean = claude_transcript(f)
            assert _lean_view(lean) == _lean_view(full)
            assert all(not m.units for p in lean.paths for m in p.messages if m.role.value != "summary")
            assert all(r.context == () for p in lean.paths for r in p.requests)
        lean_units += sum(len(m.units) for p in full.paths for m in p.messages)
    assert lean_units > 500  # (the full transcripts had units to leave out)
