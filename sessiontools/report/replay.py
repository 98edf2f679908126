"""Replay output: rich tables and matplotlib figures (the DataFrames are `replay.frames`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.table import Table

from sessiontools.report.text import safe_text


def _k(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,.0f}"


def _money(v: float) -> str:
    return f"${v:.2f}" if v >= 0.995 else f"${v:.4f}"


def _cost_split(m: dict[str, Any]) -> str:
    if m.get("cost") is None:
        return "-"
    return f"{_money(m['cost'])} = {_money(m['cost_agent'])}+{_money(m['cost_summarization'])}"


def replay_table(records: Sequence[dict[str, Any]]) -> Group:
    """One row per (session, setting): what Pi would have done (all metrics are in --format json)."""
    t = Table(title="replay (W window, R reserve, K keep; truth = provider-counted prompt tokens)", title_justify="left")
    for col, just in (("session", "left"), ("W / R / K", "left"), ("policy", "left"), ("compact", "right"),
                      ("early", "right"), ("late", "right"), ("mid-run", "right"), ("overflow", "right"),
                      ("thrash", "right"), ("peak", "right"), ("billed in", "right"), ("cache read", "right"),
                      ("cost agent+summ.", "right"),
                      ("rec. match", "right")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in records:
        s, m, rm = r["settings"], r["metrics"], r["recorded_match"]
        t.add_row(
            safe_text(r["session"].rsplit("/", 1)[-1].removesuffix(".jsonl")),
            f"{_k(s['context_window'])}/{_k(s['reserve_tokens'])}/{_k(s['keep_recent_tokens'])}",
            s["policy"],
            str(m["compactions"]),
            str(m["early"]),
            str(m["late"]),
            str(m["mid_run_crossings"]),
            str(m["overflows"]),
            str(m["thrash"]),
            _k(m["peak_truth_tokens"]),
            _k(m["billed_input_tokens"]),
            _k(m.get("cache_read_tokens") or 0),
            _cost_split(m),
            f"{rm['matched']}/{rm['recorded']}" + (f" +{rm['extra']}" if rm["extra"] else ""),
        )
    parts: list[Any] = [t]
    if len(records) == 1 and records[0]["compactions"]:
        c = Table(title="compactions", title_justify="left")
        for col in ("#", "reason", "after", "first kept", "Pi's tokensBefore", "truth", "flags", "summarised",
                    "kept", "summary", "cache bust"):
            c.add_column(col, overflow="fold")
        for k, comp in enumerate(records[0]["compactions"], start=1):
            flags = " ".join(f for f, on in (("early", comp["early"]), ("thrash", comp["thrash"]),
                                             ("split", comp["is_split_turn"]), ("=recorded", comp["matches_recorded"]))
                             if on)
            c.add_row(
                str(k), comp["reason"], safe_text(comp["parent_entry_id"]), safe_text(comp["first_kept_entry_id"]),
                f"{comp['tokens_before']:,}", f"{comp['truth_at_trigger']:,}", flags,
                str(comp["messages_summarized"]), f"{comp['kept_tokens']:,}",
                f"{comp['summary_tokens']:,} ({comp['summary_source']})",
                "-" if comp.get("cache_bust_cost") is None else _money(comp["cache_bust_cost"]),
            )
        parts.append(c)
    return Group(*parts)


def timeline_figure(pr: Any, run: Any, record: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    """Context size per request: truth and Pi's view, threshold and window, compaction markers (each
    labelled with its cache-bust cost when priced), and the cost split in the title."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    xs = [p.base_index for p in run.requests]
    ax.plot(xs, [p.truth for p in run.requests], lw=1.4, label="truth (actual prompt tokens)", color="#1f77b4")
    vx = [p.base_index for p in run.requests if p.pi_view is not None]
    vy = [p.pi_view for p in run.requests if p.pi_view is not None]
    ax.scatter(vx, vy, s=10, color="#ff7f0e", label="Pi's view at a check point", zorder=3)
    s = run.settings
    ax.axhline(s.threshold, color="#d62728", ls="--", lw=1, label=f"threshold {s.threshold:,}")
    ax.axhline(s.context_window, color="black", ls=":", lw=1, label=f"window {s.context_window:,}")
    busts = [c.get("cache_bust_cost") for c in record["compactions"]] if record else [None] * len(run.compactions)
    for c, bust in zip(run.compactions, busts, strict=False):
        ax.axvline(c.parent_base_index, color="#2ca02c" if c.reason == "threshold" else "#9467bd", alpha=0.5, lw=1)
        if bust is not None:
            ax.annotate(f"bust {_money(bust)}", (c.parent_base_index, s.threshold), rotation=90, fontsize=7,
                        xytext=(2, 4), textcoords="offset points", va="bottom", color="#555555")
    ax.plot([], [], color="#2ca02c", label="compaction (threshold)")
    ax.plot([], [], color="#9467bd", label="compaction (overflow)")
    ax.set_xlabel("entry index on the path (compactions removed)")
    ax.set_ylabel("tokens")
    title = f"{pr.session.path.rsplit('/', 1)[-1]}: reserve {s.reserve_tokens:,}, keep {s.keep_recent_tokens:,}, {s.policy}"
    if record is not None and record["metrics"].get("cost") is not None:
        title += f"\ncost {_cost_split(record['metrics'])} (agent + summaries)"
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def heatmap_figure(records: Sequence[dict[str, Any]], metric: str):  # type: ignore[no-untyped-def]
    """A metric over reserve x keep (summed over sessions) for a grid."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    reserves = sorted({r["settings"]["reserve_tokens"] for r in records})
    keeps = sorted({r["settings"]["keep_recent_tokens"] for r in records})
    grid = [[0.0 for _ in keeps] for _ in reserves]
    for r in records:
        i = reserves.index(r["settings"]["reserve_tokens"])
        j = keeps.index(r["settings"]["keep_recent_tokens"])
        v = r["metrics"].get(metric)
        grid[i][j] += float(v or 0)
    fig = Figure(figsize=(1.6 + 1.2 * len(keeps), 1.4 + 0.8 * len(reserves)), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(keeps)), [f"{k:,}" for k in keeps])
    ax.set_yticks(range(len(reserves)), [f"{r:,}" for r in reserves])
    ax.set_xlabel("keepRecentTokens")
    ax.set_ylabel("reserveTokens")
    for i in range(len(reserves)):
        for j in range(len(keeps)):
            ax.text(j, i, f"{grid[i][j]:,.0f}" if grid[i][j] >= 10 else f"{grid[i][j]:.2g}", ha="center", va="center",
                    color="white", fontsize=8)
    fig.colorbar(im, ax=ax, label=metric)
    ax.set_title(f"{metric} over reserve x keep")
    fig.tight_layout()
    return fig
