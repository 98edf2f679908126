"""`inspect` says who wrote each summary and each compaction's kind (issue 12, cause 10)."""

from __future__ import annotations

from rich.console import Console

from sessiontools.analysis.inspect import inspect_session
from sessiontools.report.inspect import inspect_table
from sessiontools.testing import SessionBuilder


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
