"""Replay output: rich tables and matplotlib figures (the DataFrames are `replay.frames`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group

from sessiontools.report.layout import Column, FittedTable, short_names, tokens
from sessiontools.report.text import safe_text


def _k(n: float) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,.0f}"


def _setting(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 and n >= 1000 else _k(n)


REPLAY_COLUMNS = (
    Column("W/R/K", "window / reserveTokens / keepRecentTokens (tokens; 16k = 16,000); Codex: window/limit; "
           "Claude Code: window/auto-compact threshold", "left"),
    Column("pol.", "policy: check points of Pi 0.x (pi-0) or 1.x (pi-1)", "left", optional=True),
    Column("comp", "compactions"),
    Column("early", "compactions while truth <= threshold T = W - R"),
    Column("late", "check points over T without a compaction"),
    Column("mid", "mid-run crossings: requests inside a run over T"),
    Column("ovf", "overflows: requests over W"),
    Column("thr", "thrash: compactions after which the next check point is still over T"),
    Column("peak tok", "largest truth (tokens)", optional=True),
    Column("billed tok", "billed input tokens: uncached input + cache reads + cache writes, summaries included"),
    Column("cache rd tok", "prompt tokens read from the provider's cache (billed at the cache-read price)",
           optional=True),
    Column("cost $", "agent + summarisation requests, priced per token class with prompt caching"),
    Column("rec.", "recorded compactions matched / recorded, +extra simulated (rec. match)"),
)


def run_label(r: dict[str, Any], names: dict[str, str], multi_leaf: bool) -> str:
    """A run's session name, with its leaf when one file gives several paths (--all-leaves)."""
    name = names[r["session"]]
    return f"{name} @ leaf {r['leaf_id']}" if multi_leaf and r.get("leaf_id") else name


def _setting_cell(s: dict[str, Any]) -> str:
    if s.get("policy") == "codex":  # Codex has no reserve/keep: its limit is the setting
        return f"{_setting(s['context_window'])}/{_setting(s['threshold'])}"
    if str(s.get("policy", "")).startswith("claude-code"):  # Claude Code: its auto-compact threshold
        pct = f" @{s['autocompact_pct']}%" if s.get("autocompact_pct") else ""
        return f"{_setting(s['context_window'])}/{_setting(s['threshold'])}{pct}"
    return "/".join(_setting(s[k]) for k in ("context_window", "reserve_tokens", "keep_recent_tokens"))


def _money(v: float) -> str:
    return f"${v:.2f}" if v >= 0.995 else f"${v:.4f}"


def _cost_split(m: dict[str, Any]) -> str:
    if m.get("cost") is None:
        return "-"
    return f"{_money(m['cost'])} = {_money(m['cost_agent'])}+{_money(m['cost_summarization'])}"


def replay_table(records: Sequence[dict[str, Any]]) -> Group:
    """One row per (session, setting): what Pi would have done (all metrics are in --format json)."""
    names = short_names([r["session"] for r in records])
    leaves: dict[str, set[Any]] = {}
    for r in records:
        leaves.setdefault(r["session"], set()).add(r.get("leaf_id"))
    t = FittedTable("replay: one row per setting (truth = provider-counted prompt tokens)", REPLAY_COLUMNS)
    for r in records:
        s, m, rm = r["settings"], r["metrics"], r["recorded_match"]
        t.add_row(
            _setting_cell(s),
            s["policy"],
            str(m["compactions"]),
            str(m["early"]),
            str(m["late"]),
            str(m["mid_run_crossings"]),
            str(m["overflows"]),
            str(m["thrash"]),
            tokens(m["peak_truth_tokens"]),
            tokens(m["billed_input_tokens"]),
            tokens(m.get("cache_read_tokens") or 0),
            _cost_split(m),
            f"{rm['matched']}/{rm['recorded']}" + (f" +{rm['extra']}" if rm["extra"] else ""),
            group=run_label(r, names, len(leaves[r["session"]]) > 1),
        )
    parts: list[Any] = [t]
    if len(records) == 1 and records[0]["compactions"]:
        c = FittedTable("compactions of this setting", COMPACTION_COLUMNS)
        for k, comp in enumerate(records[0]["compactions"], start=1):
            flags = " ".join(f for f, on in (("early", comp["early"]), ("thrash", comp["thrash"]),
                                             ("split", comp["is_split_turn"]), ("=rec", comp["matches_recorded"]))
                             if on)
            c.add_row(
                str(k), comp["reason"], safe_text(comp["parent_entry_id"]), safe_text(comp["first_kept_entry_id"]),
                f"{comp['tokens_before']:,}", f"{comp['truth_at_trigger']:,}", flags or "-",
                str(comp["messages_summarized"]), f"{comp['kept_tokens']:,}",
                f"{comp['summary_tokens']:,} {comp['summary_source']}",
                "-" if comp.get("cache_bust_cost") is None else _money(comp["cache_bust_cost"]),
            )
        parts.append(c)
    return Group(*parts)


COMPACTION_COLUMNS = (
    Column("#", "compaction number"),
    Column("why", "threshold (Pi's view over T) or overflow (recovery after a request over W)", "left"),
    Column("after", "entry id the compaction follows", "left"),
    Column("first kept", "first entry id kept verbatim", "left"),
    Column("Pi tok", "tokensBefore as Pi computes it (tokens)"),
    Column("truth tok", "provider-counted prompt tokens at the trigger"),
    Column("flags", "early, thrash, split (a turn is split), =rec (same as a recorded compaction)", "left"),
    Column("msgs", "messages summarised", optional=True),
    Column("kept tok", "tokens kept verbatim", optional=True),
    Column("summary tok", "size of the new summary and where it came from (recorded or model)", "left",
           optional=True),
    Column("bust $", "cache-bust cost: what the next request paid over a cache hit", optional=True),
)


def _setting_key(s: dict[str, Any], window: bool = True) -> tuple[Any, ...]:
    """What a user varies: Pi's window/reserve/keep; Codex's window/--auto-compact-limit; Claude Code's
    window/--autocompact-pct. Not the policy or what follows from it and the file (Pi's version,
    Claude Code's recorded auto-compact switch, its threshold; Codex's default limit, 90% of W)."""
    w = (s["context_window"],) if window else ()
    if s.get("policy") == "codex":
        return (*w, s.get("auto_compact_limit"))
    if str(s.get("policy", "")).startswith("claude-code"):
        return (*w, s.get("autocompact_pct"))
    return (*w, s["reserve_tokens"], s["keep_recent_tokens"])


def _setting_words(s: dict[str, Any], window: bool = True) -> str:
    w = f"W {s['context_window']:,}" if window else "each model's window"
    if s.get("policy") == "codex":
        limit = s.get("auto_compact_limit") or (s["threshold"] if window else None)
        return f"{w}, auto-compact limit {limit:,}" if limit else f"{w}, Codex's default limit (90% of W)"
    if str(s.get("policy", "")).startswith("claude-code"):
        return f"{w}, auto-compact at {s['autocompact_pct']}%" if s.get("autocompact_pct") else w
    return f"{w}, reserve {s['reserve_tokens']:,}, keep {s['keep_recent_tokens']:,}"


def _score(rs: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    return (sum(r["metrics"]["overflows"] for r in rs), sum(r["metrics"]["cost"] or 0 for r in rs),
            sum(r["metrics"]["billed_input_tokens"] for r in rs))


def _totals(rs: Sequence[dict[str, Any]]) -> str:
    ovf, cost, billed = _score(rs)
    priced = f"${cost:.2f}" if any(r["metrics"]["cost"] is not None for r in rs) else "no price known"
    rm = [r["recorded_match"] for r in rs]
    return (f"{int(ovf)} overflow(s), {tokens(billed)} billed input tokens, {priced}; "
            f"{sum(x['matched'] for x in rm)}/{sum(x['recorded'] for x in rm)} recorded compactions reproduced")


def _agent_headline(records: Sequence[dict[str, Any]]) -> str:
    """The best setting among those every session was replayed under (fewest overflows, then cost),
    with the window if every session shares it, else each model's own; the one setting's result; or,
    when no setting is common to every session, the totals of every run."""
    sessions = {r["session"] for r in records}
    for window in (True, False):
        by: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in records:
            by.setdefault(_setting_key(r["settings"], window), []).append(r)
        shared = [rs for rs in by.values() if {r["session"] for r in rs} == sessions]
        if shared:
            best = min(shared, key=_score)
            what = f"{_setting_words(best[0]['settings'], window)}: {_totals(best)}"
            if len(by) == 1:
                return f"{len(records)} run(s) at {what}"
            return f"best setting in this grid (fewest overflows, then cost): {what}"
    return f"{len(records)} run(s) of {len(sessions)} session(s), each at its own settings (none common to all): {_totals(records)}"


def replay_headline(records: Sequence[dict[str, Any]]) -> str:
    """One line per agent: the best setting of its grid, the one setting's result, or the totals."""
    agents: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        agents.setdefault(r.get("agent") or "pi", []).append(r)
    if len(agents) == 1:
        return f"replay: {_agent_headline(records)}"
    return "\n".join(f"replay ({agent}): {_agent_headline(rs)}" for agent, rs in agents.items())


def timeline_figure(pr: Any, run: Any, record: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    """Context size per request: truth and Pi's view, threshold and window, compaction markers (each
    labelled with its cache-bust cost when priced), Pi's recorded compactions, the cost split in the title."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5), dpi=110, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    xs = [p.base_index for p in run.requests]
    truth = [p.truth for p in run.requests]
    ax.plot(xs, truth, lw=1.4, label="truth (actual prompt tokens)", color="#1f77b4")
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
    ax.plot([], [], color="#2ca02c", label="simulated compaction (threshold)")
    ax.plot([], [], color="#9467bd", label="simulated compaction (overflow)")
    rec = _recorded_points(pr, run)
    if rec:
        ax.scatter([x for x, _ in rec], [y for _, y in rec], s=46, marker="o", facecolors="none",
                   edgecolors="black", linewidths=1.4, zorder=4, label="Pi compacted here (recorded)")
    ax.set_xlabel("entry index on the path (compactions removed)")
    ax.set_ylabel("tokens")
    title = f"{pr.session.path.rsplit('/', 1)[-1]}: reserve {s.reserve_tokens:,}, keep {s.keep_recent_tokens:,}, {s.policy}"
    if record is not None and record["metrics"].get("cost") is not None:
        title += f"\ncost {_cost_split(record['metrics'])} (agent + summaries)"
    ax.set_title(title)
    fig.legend(loc="outside right upper", fontsize=8)  # beside the axes: the legend never covers data
    ax.grid(alpha=0.3)
    return fig


def _recorded_points(pr: Any, run: Any) -> list[tuple[float, float]]:
    """(x, truth) of the last request before each compaction Pi recorded, on the replay's x axis."""
    reqs = list(run.requests)
    points = []
    for rc in pr.workload.recorded_compactions:
        before = [p for p in reqs if p.base_index <= rc.parent_base_index]
        if before:
            points.append((rc.parent_base_index, before[-1].truth))
    return points


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
