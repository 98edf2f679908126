"""A summed-up Claude Code session's messages and billed responses kept as the C's columns and
rows (`model.MessageColumns`, `model.BilledRows`): each `Message` and `Request` made when asked for
is the one the summary transcript built before it kept them so, and they compare equal to the
tuple and the list of them (inspect reads the columns; tests/read/test_claude_summary.py holds
its JSON equal to the ordinary way's)."""

from __future__ import annotations

import pytest

from sessiontools.read.claude_code.load import load_claude_session
from sessiontools.read.claude_code.summary import ClaudeSummary
from sessiontools.transcript.claude_summary import _ROLES, summary_transcript
from sessiontools.transcript.model import BilledRows, Message, MessageColumns, Request, Usage
from tests.conftest import SAMPLES

CLAUDE = sorted((SAMPLES / "claude-code").glob("*.jsonl"))


def _summaries() -> list[ClaudeSummary]:
    got = [load_claude_session(f, texts=False, summary=True) for f in CLAUDE]
    out = [s for s in got if isinstance(s, ClaudeSummary)]
    if not out:
        pytest.skip("the C extension is not built on this machine")
    return out


def test_message_columns_are_the_messages() -> None:
    seen = 0
    for s in _summaries():
        t = summary_transcript(s)
        raw = [p for f in s.files for p in f.paths]
        assert len(raw) == len(t.paths)
        for (_, _, lines, uuids, roles, *_), p in zip(raw, t.paths, strict=True):
            want = tuple(Message(i, u, n, _ROLES[r], ()) for i, (n, u, r) in enumerate(zip(lines, uuids, roles,
                                                                                          strict=True)))
            ms = p.messages
            assert type(ms) is MessageColumns and len(ms) == len(want)
            assert tuple(ms) == want and ms == want and want == ms and ms == MessageColumns(uuids, lines, ms.roles)
            assert [ms[i] for i in range(len(want))] == list(want) and ms[1:3] == want[1:3]
            if want:
                assert ms[-1] == want[-1]
            with pytest.raises(IndexError):
                ms[len(want)]
            seen += len(want)
    assert seen > 0


def test_billed_rows_are_the_requests() -> None:
    seen = 0
    for s in _summaries():
        t = summary_transcript(s)
        want = [Request(-1, line, Usage(i, r, w, o, None, h), (), "anthropic", model, ts, rid, stop)
                for line, model, ts, rid, stop, i, r, w, o, h in s.billed]
        assert type(t.billed) is BilledRows and len(t.billed) == len(want)
        assert list(t.billed) == want and t.billed == want and t.billed_requests() == want
        assert t.billed[:2] == want[:2] and (not want or t.billed[-1] == want[-1])
        seen += len(want)
    assert seen > 0
