"""`replay` over a folder: totals per setting (and group), the worst sessions, one line for the rest.

Computed only from the columns of `replay.frames.runs_frame` (its documented machine contract), so
the engine may change how a run is produced without this answer changing its shape:

- one row per (group, policy, setting) with its totals across sessions: sessions, compactions,
  early, late, overflows, billed input tokens, cost and how many runs were priced (`n/m`: a run
  without a known price adds nothing to the cost, and the cell says so instead of showing 0);
- then the few worst sessions: each session's worst run by the metric that matters (overflows,
  then late check points, then billed tokens) or by the `--fail-if` metric;
- then one line on how to see the rest (`--per-session`, `--format json/csv`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

from sessiontools.report.folder import UNKNOWN_AGENT, WORST_SHOWN, folder_names, middle, more_line
from sessiontools.report.layout import Column, FittedTable, dollars, tokens

if TYPE_CHECKING:
    from sessiontools.replay.run_document import RunRecord

#: The default order of badness: a run that overflows is worse than one that is late, then the bill.
WORST_ORDER = ("overflows", "late", "billed_input_tokens")
_SUMMED = ("compactions", "early", "late", "overflows", "thrash", "billed_input_tokens")


def _setting(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n // 1000}k" if n % 1000 == 0 and 1000 <= n < 1_000_000 else tokens(n)


def setting_label(row: Mapping[str, Any]) -> str:
    """A totals row's setting along its policy's axes (`report.replay.setting_cell`: the window, the
    policy's own token axes, else its threshold, and its percentage axis)."""
    from sessiontools.report.replay import setting_cell

    return setting_cell(row["policy"], row.get)


#: What tells one setting from another: the policy, the window and every policy's own axes (a Codex grid
#: over its limit, a Claude Code grid over its percentage), and the threshold they give.
_SETTING_KEYS = ("policy", "context_window", "reserve_tokens", "keep_recent_tokens", "auto_compact_limit",
                 "autocompact_pct", "threshold")


def _cost_cell(cost: float | None, priced: int, runs: int) -> str:
    if cost is None:
        return "-"
    return f"{dollars(cost)}" if priced == runs else f"{dollars(cost)}*"


def totals_frame(runs: Any, groups: Mapping[str, str] | None = None) -> Any:
    """One row per (group, setting): sessions, runs, priced runs and the cost over them (rule 10 of
    `replay.invariants`, `priced_total_aggs`: no price known is no cost, not $0), the sums of `_SUMMED`."""
    import polars as pl

    from sessiontools.replay.invariants import priced_total_aggs

    frame = runs.with_columns(pl.col("session").replace_strict(dict(groups or {}), default="all",
                                                               return_dtype=pl.Utf8).alias("_group"))
    return (frame.group_by(["_group", *_SETTING_KEYS], maintain_order=True)
            .agg(pl.col("session").n_unique().alias("sessions"), *priced_total_aggs("cost"),
                 *[pl.col(c).fill_null(0).sum().alias(c) for c in _SUMMED])
            .sort(["_group", *_SETTING_KEYS], nulls_last=False))


def _totals_table(totals: Any, group_header: str | None, n_sessions: int) -> FittedTable:
    from sessiontools.report.replay import setting_legend

    cols = [
        Column("setting", setting_legend(list(dict.fromkeys(totals["policy"].to_list()))), "left"),
        Column("pol.", "policy", "left", optional=True),
        Column("sess", "sessions replayed at this setting"),
        Column("comp", "compactions (summed over sessions)"),
        Column("early", "compactions while truth <= T"),
        Column("late", "check points over T without a compaction"),
        Column("ovf", "overflows: requests over W"),
        Column("thr", "thrash", optional=True),
        Column("billed tok", "billed input tokens (summed)"),
        Column("cost $", "summed over priced runs; * = not every run priced"),
        Column("priced", "runs with a known price / runs"),
    ]
    t = FittedTable(f"replay over {n_sessions:,} session(s): totals per setting", cols,
                    group_header=group_header or "group")
    for r in totals.iter_rows(named=True):
        t.add_row(setting_label(r), r["policy"], f"{r['sessions']:,}", f"{r['compactions']:,}", f"{r['early']:,}",
                  f"{r['late']:,}", f"{r['overflows']:,}", f"{r['thrash']:,}", tokens(r["billed_input_tokens"]),
                  _cost_cell(r["cost"], r["priced"], r["runs"]), f"{r['priced']}/{r['runs']}",
                  group=middle(r["_group"]) if group_header else None)
    return t


def worst_runs(runs: Any, metric: str | None = None) -> Any:
    """Each session's worst run, worst session first: by `metric` (a `--fail-if` metric), else by
    overflows, then late check points, then billed input tokens."""
    import polars as pl

    order = [metric] if metric else list(WORST_ORDER)
    order += [m for m in WORST_ORDER if m not in order]
    ranked = runs.sort([*order, "session"], descending=[*([True] * len(order)), False], nulls_last=True)
    return ranked.unique(subset=["session", "leaf_id"], keep="first", maintain_order=True).select(pl.all())


def _worst_table(worst: Any, metric: str | None, names: Mapping[str, str]) -> FittedTable:
    by = metric or "overflows, then late, then billed tokens"
    t = FittedTable(f"worst sessions (each at its worst setting, by {by})", (
        Column("session", "relative to the folder the sessions share", "left"),
        Column("setting", "", "left"),
        Column("comp", ""), Column("early", ""), Column("late", ""), Column("ovf", ""),
        Column("billed tok", ""), Column("cost $", ""),
        *([Column(metric, "the --fail-if metric")] if metric and metric not in _SUMMED else []),
    ))
    for r in worst.iter_rows(named=True):
        extra = [_metric_cell(r[metric])] if metric and metric not in _SUMMED else []
        t.add_row(names[r["session"]], setting_label(r), str(r["compactions"]), str(r["early"]), str(r["late"]),
                  str(r["overflows"]), tokens(r["billed_input_tokens"]), dollars(r["cost"]), *extra)
    return t


def _metric_cell(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if isinstance(v, float) else f"{v:,}"


def replay_totals(runs: Any, *, groups: Mapping[str, str] | None = None, group_header: str | None = None,
                  metric: str | None = None, shown: int = WORST_SHOWN) -> Group:
    """The folder answer of `replay` (renderables): totals per setting and group, the worst sessions, a hint.

    `runs` is `replay.frames.runs_frame(records)`; `groups` maps a session to its group label (no
    group column when `group_header` is None)."""
    sessions: Sequence[str] = runs["session"].unique(maintain_order=True).to_list()
    totals = totals_frame(runs, groups)
    parts: list[Any] = [_totals_table(totals, group_header, len(sessions))]
    worst = worst_runs(runs, metric)
    names = folder_names(sessions)
    parts.append(_worst_table(worst.head(shown), metric, names))
    parts.append(Text(more_line(min(shown, len(worst)), len(worst), "sessions", "--per-session shows each"), style="dim"))
    return Group(*parts)


def folder_answer(records: Sequence[RunRecord], group_by: str | None, metric: str | None) -> Group:
    """`replay_totals` of run records: grouped by `group_by`, else by agent where the agents differ."""
    from sessiontools.replay.frames import runs_frame
    from sessiontools.report.folder import session_groups

    runs = runs_frame(records)
    if group_by is not None:
        models: dict[str, str | None] = {r.session: r.model for r in records}
        return _with_counter_notes(replay_totals(runs, groups=session_groups(group_by, models, models),
                                                 group_header=group_by, metric=metric), records)
    agents = {r.session: r.agent or UNKNOWN_AGENT for r in records}
    several = len(set(agents.values())) > 1
    return _with_counter_notes(replay_totals(runs, groups=agents if several else None,
                                             group_header="agent" if several else None, metric=metric), records)


def _with_counter_notes(answer: Group, records: Sequence[RunRecord]) -> Group:
    """The answer with the truth model's counters of the sessions under it (`truth_counter_notes`)."""
    from sessiontools.report.replay import truth_counter_notes

    return Group(answer, *(Text(n, style="dim") for n in truth_counter_notes(records)))
