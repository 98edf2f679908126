"""`replay --plot`'s figures: one run's timeline (truth, the policy's count, threshold, window,
compactions) and the heatmap of a metric over each policy's own axes. The tables and headlines are
`report.replay`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessiontools.report.replay import cost_split, money, setting_words

if TYPE_CHECKING:
    from sessiontools.replay.run_document import RunRecord


def timeline_figure(record: RunRecord):  # type: ignore[no-untyped-def]
    """Context size per request of one run (its `timeline`, `replay.run_document.timeline_of`): truth and
    the policy's own count at check points, threshold and window, compaction markers (each labelled
    with its cache-bust cost when priced), the recorded compactions, the cost split in the title."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    tl = record.timeline
    if tl is None:
        raise ValueError(f"{record.session}: the run carries no timeline (replay_records(timeline=True))")
    fig = Figure(figsize=(11, 5), dpi=110, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([x for x, _ in tl.truth], [y for _, y in tl.truth], lw=1.4, label="truth (actual prompt tokens)",
            color="#1f77b4")
    ax.scatter([x for x, _ in tl.policy_count], [y for _, y in tl.policy_count], s=10, color="#ff7f0e",
               label="the policy's own count at a check point", zorder=3)
    ax.axhline(tl.threshold, color="#d62728", ls="--", lw=1, label=f"threshold {tl.threshold:,}")
    ax.axhline(tl.window, color="black", ls=":", lw=1, label=f"window {tl.window:,}")
    busts = [c.cache_bust_cost for c in record.compactions]
    for (x, reason), bust in zip(tl.compactions, busts, strict=False):
        ax.axvline(x, color=_REASON_COLORS.get(reason, "#7f7f7f"), alpha=0.5, lw=1)
        if bust is not None:
            ax.annotate(f"bust {money(bust)}", (x, tl.threshold), rotation=90, fontsize=7,
                        xytext=(2, 4), textcoords="offset points", va="bottom", color="#555555")
    for reason, color in _REASON_COLORS.items():
        ax.plot([], [], color=color, label=f"simulated compaction ({reason})")
    rec = tl.recorded
    if rec:
        ax.scatter([x for x, _ in rec], [y for _, y in rec], s=46, marker="o", facecolors="none",
                   edgecolors="black", linewidths=1.4, zorder=4, label="the agent compacted here (recorded)")
    ax.set_xlabel("message index on the path (compactions removed)")
    ax.set_ylabel("tokens")
    title = f"{record.session.rsplit('/', 1)[-1]}: {setting_words(record.settings)}, {record.settings.policy.value}"
    if record.metrics.cost is not None:
        title += f"\ncost {cost_split(record.metrics)} (agent + summaries)"
    ax.set_title(title)
    fig.legend(loc="outside right upper", fontsize=8)  # beside the axes: the legend never covers data
    ax.grid(alpha=0.3)
    return fig


_REASON_COLORS = {"threshold": "#2ca02c", "overflow": "#9467bd", "user": "#8c564b"}


def heatmap_cells(records: Sequence[RunRecord], metric: str) -> dict[str, Any]:
    """The grid of one policy's runs over its own axes (`Policy.axes`): rows the first axis that
    varies after the window (Pi: reserve x keep; Codex: window x limit; Claude Code: window x
    percentage; a policy of one axis, Claude Code's reactive rule: its window, one column, `x` None),
    each cell the metric summed over sessions (and windows, for Pi), with how many of its runs had the
    metric (`replay.invariants.priced_total`: None where no run had it; an unknown cost is not drawn as 0)."""
    from sessiontools.replay.invariants import priced_total
    from sessiontools.replay.registry import policy_axes

    axes = policy_axes(records[0].settings.policy)
    y_axis, x_axis = _heatmap_axes(axes, records)
    ys = sorted({r.settings.value(y_axis.key) for r in records}, key=_none_first)
    xs = [None] if x_axis is None else sorted({r.settings.value(x_axis.key) for r in records}, key=_none_first)
    cells: list[list[list[float | None]]] = [[[] for _ in xs] for _ in ys]
    for r in records:
        i, j = ys.index(r.settings.value(y_axis.key)), 0 if x_axis is None else xs.index(r.settings.value(x_axis.key))
        v = r.metrics.value(metric)
        cells[i][j].append(None if v is None else float(v))
    totals = [[priced_total(cell) for cell in row] for row in cells]
    summed = [a for a in axes if a not in (y_axis, x_axis)]  # axes a cell also sums over
    over = {a.label: len({r.settings.value(a.key) for r in records}) for a in summed}
    return {"policy": records[0].settings.policy.value, "y": y_axis, "x": x_axis, "ys": ys, "xs": xs,
            "values": [[t.total for t in row] for row in totals], "known": [[t.priced for t in row] for row in totals],
            "runs": [[t.runs for t in row] for row in totals],
            "sessions": len({r.session for r in records}), "summed_axes": over}


def _heatmap_axes(axes: Sequence[Any], records: Sequence[RunRecord]) -> tuple[Any, Any]:
    """The heatmap's rows and columns: the first two axes that vary, the window last (with every axis
    varying, Pi's cells are reserve x keep summed over the windows), so a grid over one axis (only
    windows, say) is a row of cells, not one cell summing them; in the policy's order. A policy of one
    axis has its rows only (columns None)."""
    if len(axes) == 1:
        return axes[0], None
    preferred = [*axes[1:], axes[0]]
    varying = [a for a in preferred if len({r.settings.value(a.key) for r in records}) > 1]
    chosen = (varying + [a for a in preferred if a not in varying])[:2]
    y_axis, x_axis = sorted(chosen, key=list(axes).index)
    return y_axis, x_axis


def heatmap_title(p: Mapping[str, Any], metric: str) -> str:
    """What a heatmap panel shows and what each cell sums ("sum over 7 sessions and 2 windows")."""
    n = p["sessions"]
    what = f"sum over {n:,} session{'s' if n != 1 else ''}"
    for label, k in p.get("summed_axes", {}).items():
        if k > 1:
            what += f" and {k} values of {label}"
    columns = "" if p["x"] is None else f", columns {p['x'].label}"
    return f"{p['policy']}: {metric}, {what}\nrows {p['y'].label}{columns}"


def _none_first(v: Any) -> tuple[int, Any]:
    return (0, 0) if v is None else (1, v)


def _tick(a: Any, v: Any) -> str:
    if a is None:  # the one column of a policy of one axis
        return ""
    if v is None:
        return "default"
    return f"{v}%" if a.unit == "percent" else f"{v:,}"


def heatmap_figure(records: Sequence[RunRecord], metric: str):  # type: ignore[no-untyped-def]
    """A metric over each policy's own axes (one panel per policy of the grid, `heatmap_cells`); a cell
    where some runs had no value says how many had one; a cell where none had is blank, not 0."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure

    by: dict[str, list[RunRecord]] = {}
    for r in records:
        by.setdefault(r.settings.policy, []).append(r)
    panels = [heatmap_cells(rs, metric) for rs in by.values()]
    # readable at any grid: at least 8 x 4.5 in per panel (880 x 495 px at 110 dpi), more per cell
    width = max(8.0, *(2.4 + 1.3 * len(p["xs"]) for p in panels))
    height = sum(max(4.5, 2.2 + 0.8 * len(p["ys"])) for p in panels)
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    for n, p in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, n + 1)
        grid = np.ma.masked_invalid(np.array([[np.nan if v is None else v for v in row] for row in p["values"]],
                                             dtype=float))
        im = ax.imshow(grid, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(p["xs"])), [_tick(p["x"], v) for v in p["xs"]])
        ax.set_yticks(range(len(p["ys"])), [_tick(p["y"], v) for v in p["ys"]])
        ax.set_xlabel("" if p["x"] is None else p["x"].label)
        ax.set_ylabel(p["y"].label)
        for i, row in enumerate(p["values"]):
            for j, v in enumerate(row):
                if v is None:
                    text = "n/a"
                else:
                    text = f"{v:,.0f}" if v >= 10 else f"{v:.2g}"
                    if p["known"][i][j] < p["runs"][i][j]:
                        text += f"\n({p['known'][i][j]}/{p['runs'][i][j]} runs)"
                light = v is not None and float(im.norm(v)) > 0.6  # viridis turns yellow: dark text there
                ax.text(j, i, text, ha="center", va="center", color="white" if v is not None and not light else "black",
                        fontsize=9)
        fig.colorbar(im, ax=ax, label=metric)
        ax.set_title(heatmap_title(p, metric), fontsize=10)
    return fig
