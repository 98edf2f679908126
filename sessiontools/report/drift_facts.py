"""Renderings of fact retention (`diff-summaries`): a table per chain, lost facts, markdown, the plot.

Session text goes through `safe_text` (terminal) or the markdown escaper the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from sessiontools.analysis.drift import ChainDrift, DriftReport
from sessiontools.analysis.drift.facts import CATEGORIES
from sessiontools.analysis.drift.retention import pooled_survival_counts
from sessiontools.report.text import one_line, safe_text

LOST_SHOWN = 8  # lost facts listed per category and summary in a terminal or markdown (JSON has all)


def _cell(in_span: int, retained: int) -> str:
    return "-" if not in_span else f"{retained}/{in_span} ({retained / in_span:.0%})"


def facts_table(c: ChainDrift, title: str) -> Table:
    """Rows: compactions; columns: each category's facts stated / facts in the span; then survival by age."""
    t = Table(title=safe_text(f"fact retention on {title} (stated / in span)"), title_justify="left")
    t.add_column("S")
    for cat in CATEGORIES:
        t.add_column(cat, justify="right")
    for x in c.facts.summaries:
        t.add_row(x.summary.label, *[_cell(x.categories[k].in_span, x.categories[k].retained) for k in CATEGORIES])
    surv = c.facts.survival
    ages = max((len(v) for v in surv.values()), default=0)
    for age in range(ages):
        t.add_row(f"age {age}", *[f"{surv[k][age]:.0%}" if age < len(surv[k]) else "" for k in CATEGORIES],
                  style="dim")
    return t


def lost_facts_text(c: ChainDrift) -> Text | None:
    """The lost facts of every compaction, a few per category."""
    out = Text()
    for x in c.facts.summaries:
        for cat in CATEGORIES:
            lost = x.categories[cat].lost
            if not lost:
                continue
            out.append(f"{x.summary.label} lost {len(lost)} {cat}: ", style="bold red")
            shown = [one_line(f.value, 120) for f in lost[:LOST_SHOWN]]
            for i, s in enumerate(shown):
                out.append_text(s)
                if i < len(shown) - 1:
                    out.append(", ")
            out.append(" …\n" if len(lost) > LOST_SHOWN else "\n")
    for r in c.facts.returns[:LOST_SHOWN]:
        out.append_text(safe_text(f"returned ({r.fact.category}): {r.fact.value[:120]} — lost in {r.lost_in.label}, "
                                  f"back in {r.back_in.label}\n", style="cyan"))
    return out if out.plain else None


def facts_markdown(c: ChainDrift, code: Callable[[str], str]) -> list[str]:
    """Markdown lines: a retention table per chain and the lost facts in a <details> block."""
    if not c.facts.summaries:
        return []
    out = ["", "Fact retention (stated / in span):", "", "| S | " + " | ".join(CATEGORIES) + " |",
           "|---|" + "---:|" * len(CATEGORIES)]
    for x in c.facts.summaries:
        cells = [_cell(x.categories[k].in_span, x.categories[k].retained) for k in CATEGORIES]
        out.append(f"| {x.summary.label} | " + " | ".join(cells) + " |")
    surv = c.facts.survival
    out += ["", "Survival by age: " + "; ".join(
        f"{k} " + " → ".join(f"{v:.0%}" for v in surv[k]) for k in CATEGORIES if surv[k]) + "."]
    lines = []
    for x in c.facts.summaries:
        for cat in CATEGORIES:
            lost = x.categories[cat].lost
            if lost:
                more = f" and {len(lost) - LOST_SHOWN} more" if len(lost) > LOST_SHOWN else ""
                lines.append(f"- {x.summary.label} {cat}: " + ", ".join(code(f.value[:120]) for f in lost[:LOST_SHOWN])
                             + more)
    if lines:
        n = sum(len(x.categories[k].lost) for x in c.facts.summaries for k in CATEGORIES)
        out += ["", f"<details><summary>{n} lost facts</summary>", "", *lines, "", "</details>"]
    return out


def survival_axes(ax: Any, report: DriftReport) -> bool:
    """Plot survival by age per category, pooled over the report's chains; False when nothing to plot."""
    plotted = False
    for cat in CATEGORIES:
        counts = pooled_survival_counts([c.facts for c in report.chains], cat)
        if not counts:
            continue
        ys = [a / b for a, b in counts]
        (line,) = ax.plot(range(len(ys)), ys, marker="o", label=cat)
        for age, (y, (_, n)) in enumerate(zip(ys, counts, strict=True)):  # how many facts reach this age
            ax.annotate(f"n={n}", (age, y), textcoords="offset points", xytext=(0, 5), ha="center",
                        fontsize="x-small", color=line.get_color())
        plotted = True
    ax.set_title("facts of a span still stated, by age")
    ax.set_xlabel("age (compactions after the span's own)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if plotted:
        ax.legend(fontsize="small", loc="best")
    else:
        ax.text(0.5, 0.5, "no facts in any span", ha="center", transform=ax.transAxes)
    return plotted
