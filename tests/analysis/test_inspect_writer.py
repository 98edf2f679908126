"""`inspect` says who wrote each summary and each compaction's kind (issue 12, cause 10)."""

from __future__ import annotations

from rich.console import Console

from sessiontools.report.inspect import inspect_table
from sessiontools.testing import SessionBuilder
from sessiontools.transcript.pi.inspect import inspect_session


def test_inspect_shows_writer_and_kind() -> None:
    """A `fromHook` compaction is written by "hook", Pi's own by "agent"; both with their kind, in JSON and table."""
    b = SessionBuilder()
    u = b.user("one")
    b.assistant("a")
    b.add("compaction", summary="hook summary", firstKeptEntryId=u, tokensBefore=1000, fromHook=True)
    u2 = b.user("two")
    b.assistant("b")
    b.compaction("## Goal\n- x", u2, 2000)
    report = inspect_session(b.session())
    comps = report["compactions"]
    assert [c["writer"] for c in comps] == ["hook", "agent"]
    assert all(isinstance(c["kind"], str) and c["kind"] for c in comps)
    con = Console(record=True, width=200, color_system=None)
    con.print(inspect_table(report))
    out = con.export_text()
    assert "written by" in out and "hook" in out and "agent" in out


def test_harness_pseudo_replies_are_not_requests_nor_models() -> None:
    """A harness's assistant messages (a mirrored reply, all-zero usage) are neither requests nor the
    session's models (issue 12, causes 1 and 6); inspect counts them apart, as for other agents."""
    b = SessionBuilder()
    b.user("one")
    b.assistant("a", usage={"input": 900, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 910})
    b.message({"role": "assistant", "content": [{"type": "text", "text": "a"}], "api": "openai-responses",
               "provider": "harness", "model": "delivery-mirror", "usage": {"input": 0, "output": 0},
               "stopReason": "stop"})
    b.assistant("zero")  # all-zero usage: nobody was billed for it
    report = inspect_session(b.session())
    assert report["requests"] == 1
    assert sum(report["models"].values()) == 1 and not any("delivery-mirror" in m for m in report["models"])
    assert report["skipped_replies"] == {"pseudo_reply": 2}
    assert report["messages_by_role"]["assistant"] == 3
