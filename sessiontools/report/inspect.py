"""Rich renderables for `inspect`: one block per session, totals across sessions, a headline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table

from sessiontools.read.agents import read_as
from sessiontools.report.inspect_summary import inspect_headline, inspect_totals
from sessiontools.report.layout import Column, FittedTable, dollars, short_names, tokens
from sessiontools.report.text import safe_text


def _fmt(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def _leaves(report: Mapping[str, Any]) -> str:
    ids = report.get("leaf_ids") or []
    text = f"{report['leaves']} leaves, {report['branch_points']} branch points"
    if len(ids) > 1:
        here = report.get("path_leaf_id")
        shown = ", ".join(f"{i} (this path)" if i == here else str(i) for i in ids[:12])
        more = f", ... (+{len(ids) - 12})" if len(ids) > 12 else ""
        text += f"; leaf ids (for --leaf): {shown}{more}"
    return text


_COMPACTION_COLUMNS = (
    Column("entry", "compaction entry id", "left"),
    Column("line", "line in the file"),
    Column("kind", "threshold, overflow recovery, manual, ... (why the agent compacted)", "left"),
    Column("written by", "who wrote the summary: agent, or hook (an extension, fromHook)", "left"),
    Column("tok before", "the context size before it, as the agent recorded it (tokens)"),
    Column("first kept", "first entry id kept verbatim", "left"),
)


def cost_text(report: Mapping[str, Any]) -> str:
    """The cost with where it comes from: recorded by the agent, priced from the catalogue, or none."""
    source = report.get("cost_source", "recorded")
    unpriced = report.get("unpriced_requests") or 0
    models = ", ".join(report.get("unpriced_models") or {})
    if source == "none" or report.get("cost") is None:
        return f"none (no recorded cost, no price for {models or 'its models'})"
    text = f"${report['cost']:.4f} ({'recorded' if source == 'recorded' else 'catalogue prices'})"
    if unpriced:
        text += f"; {unpriced} request(s) of {models} not priced"
    return text


def inspect_fields(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, value) of one inspected session, as its table shows them."""
    usage = report["usage"]
    return [
        ("format version", f"v{report['format_version']} (read as {label})"
         if (label := read_as(report)) is not None else f"{report['agent']} ({report['format_version']})"),
        ("session", report["session_id"] or "-"),
        ("name", report["session_name"] or "-"),
        ("entries", _fmt(report["entries"]) + " (" + ", ".join(f"{k} {v}" for k, v in report["entries_by_type"].items()) + ")"),
        ("messages by role", ", ".join(f"{k} {v}" for k, v in report["messages_by_role"].items()) or "-"),
        ("tree", _leaves(report)),
        ("models", ", ".join(f"{k} ({v})" for k, v in report["models"].items()) or "-"),
        ("requests with usage", _fmt(report["requests"])),
        ("usage (tokens)", f"input {usage['input']:,}, output {usage['output']:,}, cache read {usage['cache_read']:,}, "
                           f"cache write {usage['cache_write']:,}"),
        ("cost", cost_text(report)),
        ("errors / overflow errors", f"{report['errors']} / {report['overflow_errors']}"),
        ("skipped / recovered lines", f"{len(report['skipped_lines'])} / {len(report['recovered_lines'])}"),
    ]


def inspect_table(report: dict[str, Any]) -> Group:
    """A summary table for one inspected session, with its compactions (and those on other branches)."""
    t = Table(title=safe_text(report["path"]), show_header=False, title_justify="left", title_style="bold")
    t.add_column("field", style="bold", no_wrap=True)
    t.add_column("value", overflow="fold")
    for k, v in inspect_fields(report):
        t.add_row(k, safe_text(v))
    parts: list[Any] = [t]
    if report["compactions"]:
        c = FittedTable("compactions on this path", _COMPACTION_COLUMNS)
        for comp in report["compactions"]:
            c.add_row(safe_text(comp["entry_id"]), str(comp["line"]), comp["kind"], comp["writer"],
                      _fmt(comp["tokens_before"]), safe_text(comp["first_kept_entry_id"]))
        parts.append(c)
    others = report.get("other_branch_compactions") or []
    if others:  # only a session tree has other branches
        o = FittedTable("compactions on other branches (analyse them with --leaf ID or --all-leaves)",
                        (*_COMPACTION_COLUMNS, Column("leaf", "a leaf whose path holds it", "left")))
        for comp in others:
            o.add_row(safe_text(comp["entry_id"]), str(comp["line"]), comp["kind"], comp.get("writer", "agent"),
                      _fmt(comp["tokens_before"]), safe_text(comp["first_kept_entry_id"]), safe_text(comp["leaf_id"]))
        parts.append(o)
    elif others:  # Claude Code: boundaries on branches off the resumed path (counted, not replayed)
        o = FittedTable("compactions on branches off the resumed path (counted; replay walks the resumed path)",
                        _COMPACTION_COLUMNS[:5])
        for comp in others:
            o.add_row(safe_text(comp["entry_id"]), str(comp["line"]), comp["kind"], comp.get("writer", "agent"),
                      _fmt(comp["tokens_before"]))
        parts.append(o)
    return Group(*parts)


def inspect_totals_table(reports: Sequence[Mapping[str, Any]]) -> FittedTable:
    """One row per session and a total row: the corpus at a glance."""
    names = short_names([r["path"] for r in reports])
    t = FittedTable("sessions at a glance", (
        Column("entries", "entries in the file"), Column("req", "requests with usage"),
        Column("comp", "compactions in the file (all branches)"), Column("leaves", "leaves (branches)"),
        Column("input tok", "uncached input tokens"), Column("cache rd tok", "cache read tokens"),
        Column("output tok", "output tokens", optional=True),
        Column("cost $", "recorded cost, else priced from the catalogue; - when neither"),
        Column("err", "error replies, overflow errors in brackets"),
    ))
    for r in reports:
        u = r["usage"]
        t.add_row(_fmt(r["entries"]), _fmt(r["requests"]),
                  str(len(r["compactions"]) + len(r.get("other_branch_compactions") or [])), str(r["leaves"]),
                  tokens(u["input"]), tokens(u["cache_read"]), tokens(u["output"]),
                  dollars(r["cost"]) if r["cost"] is not None else "-",
                  f"{r['errors']} ({r['overflow_errors']})", group=names[r["path"]])
    tot = inspect_totals(reports)
    t.add_row(_fmt(tot["entries"]), _fmt(tot["requests"]), str(tot["compactions"]), "", tokens(tot["input"]),
              tokens(tot["cache_read"]), tokens(tot["output"]), dollars(tot["cost"]),
              f"{tot['errors']} ({tot['overflow_errors']})", group="TOTAL")
    return t


__all__ = ["cost_text", "inspect_fields", "inspect_headline", "inspect_table", "inspect_totals", "inspect_totals_table"]
