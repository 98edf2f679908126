"""A summed-up Claude Code session's or Codex rollout's messages and billed responses kept as the
C's columns and rows (`model.MessageColumns`, `model.BilledRows`): each `Message` and `Request` made when asked for
is the one the summary transcript built before it kept them so, and they compare equal to the
tuple and the list of them (inspect reads the columns; tests/read/test_claude_summary.py holds
its JSON equal to the ordinary way's)."""

from __future__ import annotations

import pytest

from sessiontools.read.claude_code.load import load_claude_session
from sessiontools.read.claude_code.summary import ClaudeSummary
from sessiontools.read.codex.summary import CodexSummary, summarize
from sessiontools.transcript import codex_summary
from sessiontools.transcript.claude_summary import _ROLES, summary_transcript
from sessiontools.transcript.model import BilledRows, Message, MessageColumns, Request, Usage
from tests.conftest import SAMPLES

CLAUDE = sorted((SAMPLES / "claude-code").glob("*.jsonl"))
CODEX = sorted((SAMPLES / "codex").glob("*.jsonl"))


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


def _codex_summaries() -> list[CodexSummary]:
    out = [s for f in CODEX if (s := summarize(f.read_bytes(), str(f), None)) is not None]
    if not out:
        pytest.skip("the C extension is not built on this machine")
    return out


def test_codex_columns_and_rows_are_the_messages_and_requests() -> None:
    """A Codex summary's path keeps the C's columns and its billed calls the C's rows: the same
    `Message`s and `Request`s the summary transcript built one by one before."""
    messages = requests = 0
    for s in _codex_summaries():
        t = codex_summary.summary_transcript(s)
        (p,) = t.paths
        want = tuple(Message(i, u, n, codex_summary._ROLES[r], ())
                     for i, (n, u, r) in enumerate(zip(s.lines, s.ids, s.roles, strict=True)))
        assert type(p.messages) is MessageColumns and tuple(p.messages) == want and p.messages == want
        billed = [Request(-1, line, Usage(i, r, 0, o), (), s.provider, model, ts)
                  for line, model, ts, rid, stop, i, r, w, o, h in s.billed]
        assert all(rid is stop is None and w == h == 0 for _, _, _, rid, stop, _, _, w, _, h in s.billed)
        assert type(t.billed) is BilledRows and t.billed == billed and t.billed_requests() == billed
        messages += len(want)
        requests += len(billed)
    assert messages > 0 and requests > 0
