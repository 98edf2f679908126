"""`inspect` over a folder: totals per group, the largest sessions, one line for the rest.

A thousand files used to print a thousand blocks (20,000 lines; drawing them took longer than the
reading). Over several sessions the default table is this answer instead, a few dozen lines
whatever the folder's size, so the table costs about what the JSON costs; `--per-session` gives
every session's block, JSON every field of every session.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.text import Text

from sessiontools.report.folder import WORST_SHOWN, folder_names, middle, more_line
from sessiontools.report.inspect import inspect_totals
from sessiontools.report.layout import Column, FittedTable, dollars, tokens

_COLUMNS = (
    Column("sess", "sessions"), Column("req", "requests with usage"),
    Column("comp", "compactions in the files (all branches)"),
    Column("ovf err", "overflow errors (the provider rejected a prompt as too long)"),
    Column("prompt tok", "input + cache read + cache write tokens"),
    Column("output tok", "output tokens", optional=True), Column("cost $", "recorded cost"),
    Column("problems", "sessions with skipped or recovered lines, or a fatal error", optional=True),
)


def _prompt(r: Mapping[str, Any]) -> int:
    u = r["usage"]
    return int(u["input"] + u["cache_read"] + u["cache_write"])


def _problem(r: Mapping[str, Any]) -> bool:
    return bool(r.get("skipped_lines") or r.get("recovered_lines") or r.get("fatal"))


def _cells(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    tot = inspect_totals(reports)
    return [f"{tot['sessions']:,}", f"{tot['requests']:,}", f"{tot['compactions']:,}", f"{tot['overflow_errors']:,}",
            tokens(tot["input"] + tot["cache_read"] + tot["cache_write"]), tokens(tot["output"]),
            dollars(tot["cost"]), f"{sum(1 for r in reports if _problem(r)):,}"]


def inspect_folder_answer(reports: Sequence[Mapping[str, Any]], groups: Mapping[str, str], by: str,
                          shown: int = WORST_SHOWN) -> Group:
    """Totals per group (and `all`), the largest sessions by prompt tokens, a hint line."""
    t = FittedTable(f"{len(reports):,} sessions: totals per {by}", (Column(by, "", "left"), *_COLUMNS))
    by_group: dict[str, list[Mapping[str, Any]]] = {}
    for r in reports:
        by_group.setdefault(groups.get(r["path"], "(unknown)"), []).append(r)
    for label in sorted(by_group):
        t.add_row(middle(label, 30), *_cells(by_group[label]))
    t.add_row("all", *_cells(reports))
    names = folder_names([r["path"] for r in reports])
    w = FittedTable("largest sessions (prompt tokens)", (
        Column("session", "relative to the folder the sessions share", "left"), Column("req", ""),
        Column("comp", ""), Column("ovf err", ""), Column("prompt tok", ""), Column("cost $", ""),
    ))
    for r in sorted(reports, key=lambda r: (-_prompt(r), r["path"]))[:shown]:
        w.add_row(names[r["path"]], f"{r['requests']:,}",
                  str(len(r["compactions"]) + len(r.get("other_branch_compactions") or [])),
                  str(r["overflow_errors"]), tokens(_prompt(r)), dollars(r.get("cost")))
    hint = more_line(min(shown, len(reports)), len(reports), "sessions", "--per-session shows each",
                     "--format json has every field")
    return Group(t, w, Text(hint, style="dim"))


#: More sessions than this are listed as plain text lines with --per-session (rich lays a table out
#: by measuring every cell: 1,000 session tables took 8x the JSON).
PLAIN_AFTER = 50
_COMP_HEAD = ("entry", "line", "kind", "written by", "tok before", "first kept")


def inspect_plain_lines(reports: Sequence[Mapping[str, Any]], width: int) -> Iterator[str]:
    """Every session's fields and compactions as plain lines (session text stripped of control
    characters), cut in the middle to `width`: what `--per-session` streams for a large folder."""
    from sessiontools.report.inspect import inspect_fields
    from sessiontools.report.text import strip_control

    def fit(s: str) -> str:
        return middle(strip_control(s).replace("\n", " "), width)

    for r in reports:
        yield fit(f"== {r['path']}")
        for k, v in inspect_fields(r):
            yield fit(f"{k:<26} {v}")
        comps = [(c, "") for c in r["compactions"]] + [(c, f" (leaf {c.get('leaf_id')})")
                                                       for c in r.get("other_branch_compactions") or []]
        if comps:
            yield fit("compactions: " + " | ".join(_COMP_HEAD))
            for c, where in comps:
                before = "-" if c["tokens_before"] is None else f"{c['tokens_before']:,}"
                yield fit(f"  {c['entry_id'] or '-'} | {c['line']} | {c['kind']} | {c.get('writer', 'agent')} | "
                          f"{before} | {c['first_kept_entry_id'] or '-'}{where}")
        yield ""


class PlainLines:
    """A renderable of ready-made lines, written as they come: no measuring, no wrapping (each
    line is already cut to the width)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        from rich.segment import Segment

        for line in self.lines:
            yield Segment(line)
            yield Segment.line()
