"""Renderings of `diff-summaries`: rich tables and diff views, markdown for a pull request, decay plots.

Nothing here prints, shows or saves: functions return rich renderables, a string, or a matplotlib
`Figure` (the CLI writes them). Every piece of session text goes through `safe_text` (terminal) or
`_md` (markdown), so a summary can never inject markup, control sequences or HTML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sessiontools.analysis.drift import ChainDrift, DriftReport, PairDrift
from sessiontools.report.drift_facts import facts_markdown, facts_table, lost_facts_text, survival_axes
from sessiontools.report.text import one_line, safe_text, strip_control

ITEM_LIMIT = 160  # characters of an item shown in a terminal (JSON has the full text)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def _session_label(c: ChainDrift) -> str:
    leaf = f" (leaf {c.leaf_id})" if c.leaf_id else ""
    return f"{c.session}{leaf}"


# --------------------------------------------------------------------------- terminal


def summaries_table(c: ChainDrift) -> Table:
    t = Table(title=safe_text(f"summaries on {_session_label(c)}"), title_justify="left")
    for col in ("S", "entry", "kind", "line", "tokens", "format", "missing", "items", "literals", "files r/m"):
        t.add_column(col, justify="left" if col in ("entry", "kind", "format") else "right")
    for s in c.chain:
        p = s.parsed
        files = "-" if p.read_files is None and p.modified_files is None else (
            f"{len(p.read_files or ())}/{len(p.modified_files or ())}")
        kind = s.kind.replace("_", " ") + (" +turn" if p.split_turn else "")
        missing = f"{len(p.sections_missing)}/{len(p.expected_sections)}" if p.promises_sections else "-"
        t.add_row(str(s.position), safe_text(s.entry_id or "-"), kind, str(s.line), f"{s.tokens:,}",
                  f"{p.summary_format}: {p.format} ({p.compliance:.0%})", missing, str(len(p.items)),
                  str(len(p.literals)), files)
    return t


def pairs_table(c: ChainDrift, pair: int | None = None) -> Table:
    t = Table(title=safe_text(f"pairs on {_session_label(c)}"), title_justify="left")
    for col in ("pair", "from→to", "relation", "kept", "drop", "add", "chg", "move", "lit kept/drop", "goal", "file viol.",
                "growth"):
        t.add_column(col, justify="left" if col in ("pair", "from→to", "relation") else "right")
    for k, d in enumerate(c.pairs, 1):
        if pair is not None and k != pair:
            continue
        a, b = d.pair.old, d.pair.new
        t.add_row(
            str(k),
            f"{a.label}→{b.label}",
            d.pair.relation,
            str(d.count("kept")),
            Text(str(d.count("dropped")), style="red" if d.count("dropped") else ""),
            str(d.count("added")),
            str(d.count("changed")),
            str(d.count("moved")),
            f"{len(d.literals_kept)}/{len(d.literals_dropped)}",
            "-" if d.goal_similarity is None else f"{d.goal_similarity:.2f}",
            str(len(d.file_list_violations)),
            f"{d.growth_tokens:+,}",
        )
    return t


def decay_table(c: ChainDrift) -> Table:
    """Rows: origin summaries; columns: later compactions; cells: items% / literals% retained."""
    later = [s for s in c.chain[1:] if s.kind == "compaction"]
    t = Table(title=safe_text(f"decay on {_session_label(c)} (items / literals retained)"), title_justify="left")
    t.add_column("from")
    for s in later:
        t.add_column(s.label, justify="right")
    for d in c.decay:
        cells = {p.summary.position: f"{_pct(p.items_retained)} / {_pct(p.literals_retained)}" for p in d.points}
        if not cells:
            continue
        t.add_row(safe_text(f"{d.origin.label} ({len(d.origin.parsed.items)} items, {len(d.origin.parsed.literals)} literals)"),
                  *[cells.get(s.position, "") for s in later])
    return t


def resurrections_table(c: ChainDrift) -> Table:
    t = Table(title=safe_text(f"resurrections on {_session_label(c)}"), title_justify="left")
    for col in ("kind", "item", "section", "dropped in", "back in"):
        t.add_column(col)
    by_id = {s.entry_id: s.label for s in c.chain}
    for r in c.resurrections:
        t.add_row(r.kind, one_line(r.item.text, ITEM_LIMIT), safe_text(f"{r.item.section} → {r.back_item.section}"),
                  safe_text(by_id.get(r.dropped_in.entry_id, "-") if r.dropped_in else "-"),
                  safe_text(by_id.get(r.back_in.entry_id, "?")))
    return t


def _line(marker: str, text: str, style: str, suffix: str = "") -> Text:
    out = Text(f"  {marker} ", style=style)
    out.append_text(one_line(text, ITEM_LIMIT))
    if suffix:
        out.append_text(safe_text(suffix, style="dim"))
    return out


def pair_diff(d: PairDrift, k: int) -> Panel:
    """Section-aware diff of one pair: dropped (-), added (+), changed (~), moved (↷), literals lost."""
    a, b = d.pair.old, d.pair.new
    lines: list[Text] = []
    unchanged = []
    for section, counts in d.by_section().items():
        changes = [c for c in d.changes if c.section == section and c.kind != "kept"]
        if not changes:
            if counts["kept"]:
                unchanged.append(section)
            continue
        head = safe_text(section, style="bold")
        head.append_text(safe_text("  (" + ", ".join(f"{v} {n}" for n, v in counts.items() if v) + ")", style="dim"))
        lines.append(head)
        for c in changes:
            if c.kind == "dropped" and c.old:
                lines.append(_line("-", c.old.text, "red"))
            elif c.kind == "added" and c.new:
                lines.append(_line("+", c.new.text, "green"))
            elif c.kind == "changed" and c.old and c.new:
                lines.append(_line("~", c.old.text, "yellow"))
                lines.append(_line("→", c.new.text, "yellow", f"  (similarity {c.similarity:.2f})"))
            elif c.kind == "moved" and c.old and c.new:
                lines.append(_line("↷", c.old.text, "cyan", f"  → {c.new.section}"))
    if unchanged:
        lines.append(safe_text("unchanged: " + ", ".join(unchanged), style="dim"))
    if d.literals_dropped:
        lit = safe_text(f"literals dropped ({len(d.literals_dropped)}): ", style="bold red")
        lit.append_text(safe_text(", ".join(v for v, _ in d.literals_dropped), limit=600))
        lines.append(lit)
    for v in d.file_list_violations:
        lines.append(safe_text(f"file list: {v.file} left <{v.list}> (now in: {v.now_in})", style="magenta"))
    if not lines:
        lines.append(Text("no differences"))
    title = safe_text(f"pair {k}: {a.label} {a.entry_id} → {b.label} {b.entry_id} [{d.pair.relation}], "
                      f"{d.growth_tokens:+,} tokens")
    return Panel(Group(*lines), title=title, title_align="left")


def gates_text(gates: Sequence[Mapping[str, Any]]) -> Text:
    out = Text()
    for g in gates:
        out.append(f"{'TRIPPED' if g['tripped'] else 'ok'} ", style="bold red" if g["tripped"] else "green")
        value = "-" if g["value"] is None else f"{g['value']:g}"
        out.append_text(safe_text(f"{g['expression']} (value {value})\n"))
    return out


def drift_renderables(report: DriftReport, *, pair: int | None = None, gates: Sequence[Mapping[str, Any]] = ()) -> list[RenderableType]:
    """Tables (summaries, pairs, decay, resurrections) and diff views for every chain."""
    out: list[RenderableType] = []
    for c in report.chains:
        if not c.chain:
            out.append(safe_text(f"{_session_label(c)}: no summaries on this path"))
            continue
        out.append(summaries_table(c))
        for s in c.chain:
            if s.parsed.sections_missing:
                out.append(safe_text(f"{s.label} lacks {s.parsed.view.template.agent}'s: " + ", ".join(s.parsed.sections_missing),
                                     style="dim"))
        if c.pairs:
            out.append(pairs_table(c, pair))
            for k, d in enumerate(c.pairs, 1):
                if pair is None or k == pair:
                    out.append(pair_diff(d, k))
        elif len(c.chain) == 1:
            out.append(safe_text("one summary: nothing to compare"))
        else:
            out.append(safe_text("no pairs: no compaction on this path was written from another summary on it"))
        if any(d.points for d in c.decay):
            out.append(decay_table(c))
        if c.resurrections:
            out.append(resurrections_table(c))
        if c.facts.summaries:
            out.append(facts_table(c, _session_label(c)))
            lost = lost_facts_text(c)
            if lost is not None:
                out.append(lost)
    if gates:
        out.append(gates_text(gates))
    return out


# --------------------------------------------------------------------------- markdown

_MD_SPECIAL = re.compile(r"([\\|<>&\[\]])")


def _md(s: object, limit: int | None = 300) -> str:
    """Session text as inert markdown on one line: no HTML, links, table breaks or control characters."""
    t = strip_control(str(s)).replace("\r", " ").replace("\n", " ⏎ ")
    if limit is not None and len(t) > limit:
        t = t[: limit - 1] + "…"
    return _MD_SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(m.group(1), "\\" + m.group(1)), t)


def _md_code(s: str) -> str:
    s = strip_control(s).replace("\n", " ")
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def drift_markdown(report: DriftReport, *, pair: int | None = None, gates: Sequence[Mapping[str, Any]] = ()) -> str:
    """A pull-request comment: metrics, gates, one table of pairs per chain, details per pair."""
    m = report.metrics()
    out = ["## Summary drift (`sessiontools diff-summaries`)", ""]
    if gates:
        for g in gates:
            value = "-" if g["value"] is None else f"{g['value']:g}"
            out.append(f"- {'❌ tripped' if g['tripped'] else '✅ ok'}: `{g['expression']}` (value {value})")
        out.append("")
    out += ["| metric | value |", "|---|---|"]
    for k, v in m.items():
        out.append(f"| {k} | {v:g} |" if isinstance(v, float) else f"| {k} | {'-' if v is None else v} |")
    out += ["", f"Tokens counted with {report.tokenizer}."]
    for c in report.chains:
        name = os.path.basename(c.session) or c.session
        out += ["", f"### {_md(name)}" + (f" (leaf {_md(c.leaf_id)})" if c.leaf_id else ""), ""]
        if not c.chain:
            out.append("No summaries on this path.")
            continue
        out.append(f"{len(c.chain)} summaries: " + ", ".join(
            f"{s.label} {s.parsed.summary_format}, {s.parsed.format} ({s.tokens:,} tokens)" for s in c.chain) + ".")
        out += facts_markdown(c, _md_code)
        if not c.pairs:
            continue
        out += ["", "| pair | from → to | relation | kept | dropped | added | changed | moved | literals dropped "
                "| goal sim. | file-list viol. | growth |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for k, d in enumerate(c.pairs, 1):
            if pair is not None and k != pair:
                continue
            gs = "-" if d.goal_similarity is None else f"{d.goal_similarity:.2f}"
            out.append(
                f"| {k} | {d.pair.old.label} → {d.pair.new.label} | {d.pair.relation} | {d.count('kept')} "
                f"| {d.count('dropped')} | {d.count('added')} | {d.count('changed')} | {d.count('moved')} "
                f"| {len(d.literals_dropped)} | {gs} | {len(d.file_list_violations)} | {d.growth_tokens:+,} |"
            )
        for k, d in enumerate(c.pairs, 1):
            if pair is not None and k != pair:
                continue
            lines = []
            for ch in d.changes:
                if ch.kind == "dropped" and ch.old:
                    lines.append(f"- ➖ **{_md(ch.old.section)}**: {_md(ch.old.text)}")
                elif ch.kind == "changed" and ch.old and ch.new:
                    lines.append(f"- ✏️ **{_md(ch.old.section)}**: {_md(ch.old.text)} → {_md(ch.new.text)}")
                elif ch.kind == "moved" and ch.old and ch.new:
                    lines.append(f"- ↪️ **{_md(ch.old.section)} → {_md(ch.new.section)}**: {_md(ch.old.text)}")
            if d.literals_dropped:
                lines.append("- literals dropped: " + ", ".join(_md_code(v) for v, _ in d.literals_dropped))
            for v in d.file_list_violations:
                lines.append(f"- file list: {_md_code(v.file)} left `<{v.list}>`")
            if not lines:
                continue
            out += ["", f"<details><summary>pair {k}: {d.pair.old.label} → {d.pair.new.label}: "
                    f"{d.count('dropped')} dropped, {d.count('changed')} changed, {len(d.literals_dropped)} literals "
                    f"dropped</summary>", "", *lines, "", "</details>"]
        if c.resurrections:
            out += ["", "Resurrections:", ""]
            by_id = {s.entry_id: s.label for s in c.chain}
            for r in c.resurrections:
                where = by_id.get(r.dropped_in.entry_id, "?") if r.dropped_in else "-"
                out.append(f"- {r.kind}: **{_md(r.item.section)}** {_md(r.item.text)} (dropped in {where}, back in "
                           f"{by_id.get(r.back_in.entry_id, '?')} under {_md(r.back_item.section)})")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- plot


def decay_figure(report: DriftReport, max_curves: int = 12) -> Any:
    """Items and literals retained by each summary across later compactions (one chain: every origin;
    several chains: the first summary of each)."""
    from matplotlib.figure import Figure  # imported here: matplotlib takes a second to import
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(15, 4.5), layout="constrained")
    ax_items, ax_lits, ax_facts = fig.subplots(1, 3, sharey=True)
    survival_axes(ax_facts, report)
    curves: list[tuple[str, list[tuple[int, float | None, float | None]]]] = []
    chains = [c for c in report.chains if any(d.points for d in c.decay)]
    for c in chains:
        origins = c.decay if len(chains) == 1 else c.decay[:1]
        for d in origins:
            if not d.points:
                continue
            label = d.origin.label if len(chains) == 1 else f"{os.path.basename(c.session)} {d.origin.label}"
            pts = [(d.origin.position, 1.0, 1.0)] + [(p.summary.position, p.items_retained, p.literals_retained) for p in d.points]
            curves.append((label, pts))
    for label, pts in curves[:max_curves]:
        xs = [p[0] for p in pts]
        ax_items.plot(xs, [p[1] if p[1] is not None else float("nan") for p in pts], marker="o", label=label)
        ax_lits.plot(xs, [p[2] if p[2] is not None else float("nan") for p in pts], marker="o", label=label)

    for ax, what in ((ax_items, "items"), (ax_lits, "literals")):
        ax.set_title(f"{what} of S(k) still present")
        ax.set_xlabel("summary position in the chain")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # positions are whole summaries
    ax_items.set_ylabel("share retained")
    if curves:
        ax_lits.legend(fontsize="small", loc="lower left")
    else:
        ax_items.text(0.5, 0.5, "fewer than two summaries on every path", ha="center", transform=ax_items.transAxes)
    if len(curves) > max_curves:
        fig.suptitle(f"first {max_curves} of {len(curves)} curves")
    return fig

