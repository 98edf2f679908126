"""Tables that fit the console: short headers with units, a legend, whole cells, distinguishing names.

A `FittedTable` is a rich renderable that decides its layout when it is printed, for the width it
is given (`Console(width=...)`, `COLUMNS`, the terminal):

1. one table, every cell on one line (no cell is ever wrapped letter by letter);
2. if that is too wide and rows belong to groups (sessions), one table per group with the group's
   name as its title, so the long name no longer takes a column;
3. if still too wide, optional columns are left out, and a line says which (JSON has them all);
4. as a last resort (very narrow consoles) cells wrap at spaces only.

The legend under the table explains every short header, so a reader never has to guess what
`ovf` or `rec.` means.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sessiontools.report.text import safe_text

#: Tables are designed for this width; a wider terminal is used when there is one.
DESIGN_WIDTH = 100


@dataclass(frozen=True)
class Column:
    """A column: its short `header` (units in it: tokens, $, %), what it means, how it is aligned."""

    header: str
    legend: str = ""
    justify: str = "right"
    optional: bool = False  # may be left out when the console is too narrow


@dataclass
class FittedTable:
    """Rows of cells (str or rich Text) under `columns`, laid out for the width it is printed at."""

    title: str
    columns: Sequence[Column]
    rows: list[list[Any]] = field(default_factory=list)
    groups: list[str | None] = field(default_factory=list)  # one per row: the session it belongs to
    group_header: str = "session"
    notes: list[str] = field(default_factory=list)  # extra legend lines (definitions of the values)

    def add_row(self, *cells: Any, group: str | None = None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([c if isinstance(c, Text) else Text(str(c)) for c in cells])
        self.groups.append(group)

    # ---------------------------------------------------------------- layout
    def _has_groups(self) -> bool:
        return any(g is not None for g in self.groups)

    def _table(self, cols: list[int], rows: list[int], *, with_group: bool, title: Any, wrap: bool = False) -> Table:
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
                  collapse_padding=True, show_edge=False, title_style="bold")
        if with_group:
            t.add_column(self.group_header, justify="left", no_wrap=not wrap, overflow="fold")
        for i in cols:
            c = self.columns[i]
            t.add_column(c.header, justify=c.justify, no_wrap=not wrap, overflow="fold")  # type: ignore[arg-type]
        for r in rows:
            cells = [self.rows[r][i] for i in cols]
            if with_group:
                cells.insert(0, safe_text(self.groups[r] or ""))
            t.add_row(*cells)
        return t

    def _fits(self, console: Console, options: ConsoleOptions, table: Table, width: int) -> bool:
        return Measurement.get(console, options.update(width=10_000), table).maximum <= width

    def layout(self, console: Console, width: int) -> list[Any]:
        """The first of these that fits: one table; one without optional columns; one table per group
        (all columns, then without the optional ones); else cells wrapped at spaces."""
        options = console.options
        rows = list(range(len(self.rows)))
        grouped = self._has_groups()
        title = safe_text(self.title, style="bold")
        every = list(range(len(self.columns)))
        needed = [i for i in every if not self.columns[i].optional]
        choices = [(every, False), (needed, False), (every, True), (needed, True)] if grouped else [
            (every, False), (needed, False)]
        for cols, split in choices:
            dropped = [self.columns[i].header for i in every if i not in cols]
            if not split:
                t = self._table(cols, rows, with_group=grouped, title=None)
                if not self._fits(console, options, t, width):
                    continue
                blocks: list[Any] = [title, t]
            else:
                blocks = [title]
                fits = True
                for g in dict.fromkeys(self.groups):
                    t = self._table(cols, [r for r in rows if self.groups[r] == g], with_group=False, title=None)
                    fits = fits and self._fits(console, options, t, width)
                    blocks += [safe_text(f"{self.group_header}: {g}", style="bold"), t]
                if not fits:
                    continue
            self._dropped = set(dropped)
            if dropped:
                blocks.append(Text(f"left out at this width: {', '.join(dropped)} (--format json has them)",
                                   style="dim"))
            return blocks
        return [title, *self._column_chunks(console, options, needed, rows, grouped, width)]

    def _column_chunks(self, console: Console, options: ConsoleOptions, cols: list[int], rows: list[int],
                       grouped: bool, width: int) -> list[Any]:
        """Very narrow consoles: the columns split over several tables (the group column repeated in each)."""
        chunks: list[list[int]] = []
        for i in cols:
            trial = [*chunks[-1], i] if chunks else [i]
            if chunks and self._fits(console, options, self._table(trial, rows, with_group=grouped, title=None), width):
                chunks[-1] = trial
            else:
                chunks.append([i])
        out: list[Any] = []
        for chunk in chunks:
            t = self._table(chunk, rows, with_group=grouped, title=None)
            if not self._fits(console, options, t, width):  # one column alone is too wide: wrap at spaces
                t = self._table(chunk, rows, with_group=grouped, title=None, wrap=True)
            out.append(t)
        dropped = [self.columns[i].header for i in range(len(self.columns)) if i not in cols]
        self._dropped = set(dropped)
        if dropped:
            out.append(Text(f"left out at this width: {', '.join(dropped)} (--format json has them)", style="dim"))
        return out

    def legend(self) -> Text:
        gone = getattr(self, "_dropped", set())
        parts = [f"{c.header}: {c.legend}" for c in self.columns if c.legend and c.header not in gone]
        text = Text("; ".join(parts), style="dim") if parts else Text("")
        for n in self.notes:
            text.append("\n" + n, style="dim")
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.rows:
            return
        yield from self.layout(console, options.max_width)
        legend = self.legend()
        if legend.plain:
            yield legend
        yield Text("")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Distinguishing names for session paths: the common directory dropped, `.jsonl` dropped.

    Nothing is cut in the middle: two different files never get the same name (a name keeps as many
    parent directories as it needs to differ from the others).
    """
    norm = {p: p.replace("\\", "/") for p in paths}
    unique = list(dict.fromkeys(norm.values()))
    if not unique:
        return {}
    parts = {u: [x for x in u.split("/") if x] for u in unique}
    names: dict[str, str] = {}
    for u in unique:
        depth = 1
        while True:
            cand = "/".join(parts[u][-depth:])
            clash = [v for v in unique if v != u and "/".join(parts[v][-depth:]) == cand]
            if not clash or depth >= len(parts[u]):
                break
            depth += 1
        names[u] = _drop_suffix(cand)
    if len(set(names.values())) < len(names):  # e.g. "a/x.jsonl" and "a/x": fall back to full paths
        common = posixpath.commonpath(unique) if all(u.startswith("/") for u in unique) else ""
        names = {u: u[len(common):].lstrip("/") or u for u in unique}
    return {p: names[norm[p]] for p in paths}


def _drop_suffix(name: str) -> str:
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


def tokens(n: float | None) -> str:
    """A token count for a table: 16,000 -> 16.0k; 831,634 -> 832k; 1,234,567 -> 1.23M."""
    if n is None:
        return "-"
    a = abs(n)
    if a >= 10_000_000:
        return f"{n / 1e6:.1f}M"
    if a >= 1_000_000:
        return f"{n / 1e6:.2f}M"
    if a >= 100_000:
        return f"{n / 1e3:.0f}k"
    if a >= 10_000:
        return f"{n / 1e3:.1f}k"
    return f"{n:,.0f}"


def dollars(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.3f}" if abs(v) >= 0.001 else f"{v:.1g}" if v else "0"


def percent(v: float | None, *, signed: bool = False, digits: int = 1) -> str:
    """A fraction shown as a percent (0.253 -> 25.3)."""
    if v is None:
        return "-"
    return f"{v * 100:+.{digits}f}" if signed else f"{v * 100:.{digits}f}"
