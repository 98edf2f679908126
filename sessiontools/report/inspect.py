"""Rich renderables for `inspect`."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from sessiontools.report.text import safe_text


def _fmt(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else str(n)


def inspect_table(report: dict[str, Any]) -> Group:
    """A summary table for one inspected session, with its compactions and problems."""
    t = Table(title=safe_text(report["path"]), show_header=False, title_justify="left")
    t.add_column("field", style="bold")
    t.add_column("value")
    rows = [
        ("format version", f"v{report['format_version']} (read as Pi {report['pi_version']}.x)"),
        ("session", report["session_id"] or "-"),
        ("name", report["session_name"] or "-"),
        ("entries", _fmt(report["entries"])),
        ("by type", ", ".join(f"{k} {v}" for k, v in report["entries_by_type"].items())),
        ("messages by role", ", ".join(f"{k} {v}" for k, v in report["messages_by_role"].items())),
        ("leaves / branch points", f"{report['leaves']} / {report['branch_points']}"),
        ("models", ", ".join(f"{k} ({v})" for k, v in report["models"].items()) or "-"),
        ("requests with usage", _fmt(report["requests"])),
        (
            "usage",
            "input {input:,}  output {output:,}  cache read {cache_read:,}  cache write {cache_write:,}".format(
                **report["usage"]
            ),
        ),
        ("recorded cost", f"${report['cost']:.4f}"),
        ("errors / overflow errors", f"{report['errors']} / {report['overflow_errors']}"),
        ("skipped / recovered lines", f"{len(report['skipped_lines'])} / {len(report['recovered_lines'])}"),
    ]
    for k, v in rows:
        t.add_row(k, safe_text(v))
    parts: list[Any] = [t]
    if report["compactions"]:
        c = Table(title="compactions", title_justify="left")
        for col in ("entry", "line", "kind", "written by", "tokens before", "first kept"):
            c.add_column(col)
        for comp in report["compactions"]:
            c.add_row(
                safe_text(comp["entry_id"]),
                str(comp["line"]),
                comp["kind"],
                comp["writer"],
                _fmt(comp["tokens_before"]),
                safe_text(comp["first_kept_entry_id"]),
            )
        parts.append(c)
    return Group(*parts)
