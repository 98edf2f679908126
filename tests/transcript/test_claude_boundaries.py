"""Shapes of real Claude Code files around a compaction (synthetic lines, no text from real files):

- a boundary whose ``logicalParentUuid`` names a line the file does not hold (real 2.1.22 - 2.1.63
  files: the last pre-compaction message was not written) continues from the conversation line
  written just before it, so the history before the compaction is on the path; one written long
  after that line (a real 2.0.8 file: 19 hours, copied from the session it resumed) does not;
- a response whose first line carries zero tokens (a gateway; the counts are on its later lines) is
  one request at that first line with the response's final usage.
"""

from __future__ import annotations

from sessiontools.read.claude_code import parse_bytes
from sessiontools.transcript.claude_code import claude_transcript
from tests.read.test_claude_code import _asst, _bytes, _line, _result, _summary_text, _tool_use, _user


def _file(boundary_at: str) -> list:
    return [
        _user("1u", None, "task", timestamp="2026-02-02T11:40:00Z"),
        _asst("1a", "1u", "msg_1", [_tool_use("t1", file_path="/w/a")], usage=(10, 160_000, 0, 100),
              timestamp="2026-02-02T11:41:00Z"),
        _user("1r", "1a", _result("t1", "x" * 40_000), timestamp="2026-02-02T11:42:42Z"),
        _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="not-written",
              compactMetadata={"trigger": "auto", "preTokens": 170_110}, timestamp=boundary_at),
        _user("s1", "b1", _summary_text("## Goal\n- task"), isCompactSummary=True, timestamp=boundary_at),
        _asst("2a", "s1", "msg_2", [{"type": "text", "text": "done"}], usage=(10, 20_000, 0, 50),
              timestamp=boundary_at),
    ]


def test_a_boundary_with_an_unwritten_parent_continues_from_the_line_before() -> None:
    t = claude_transcript(parse_bytes(_bytes(_file("2026-02-02T11:43:45Z")), "x.jsonl"))
    assert [m.id for m in t.main.messages] == ["1u", "1a", "1r", "s1", "2a"]
    (c,) = t.main.compactions
    assert c.index == 3 and c.tokens_before == 170_110


def test_a_boundary_copied_from_a_resumed_session_starts_the_path() -> None:
    t = claude_transcript(parse_bytes(_bytes(_file("2026-02-03T07:00:00Z")), "x.jsonl"))
    assert [m.id for m in t.main.messages] == ["s1", "2a"]
    assert t.main.compactions[0].index == 0


def test_a_first_line_without_tokens_is_its_responses_request() -> None:
    lines = [_user("1u", None, "task"),
             _asst("1a", "1u", "msg_1", [{"type": "text", "text": "Looking."}], usage=(0, 0, 0, 0)),
             _asst("1b", "1a", "msg_1", [_tool_use("t1", file_path="/w/a")], usage=(653, 165_394, 0, 168)),
             _user("1r", "1b", _result("t1", "ok"))]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    (r,) = t.main.requests
    assert r.index == 1 and (r.usage.input, r.usage.cache_read, r.usage.output) == (653, 165_394, 168)
    assert len(t.billed) == 1 and t.billed[0].usage.total == 653 + 165_394 + 168
