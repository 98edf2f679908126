"""`estimate-error` over a folder: per estimator and group, the verdict, the worst sessions.

The answer to "how wrong are the estimates?" in one screen (at most `SCREEN_LINES` lines at the
design width): the overall table (one row per estimator: the totals) under one brief legend, one
table of MAPE (bias) per group and estimator with an `all` row, the compaction decisions at the
middle threshold in one line, the out-of-sample verdict with why a hybrid is judged against
hybrids, the few sessions where the agent's own estimate is worst, and one line on how to see the
rest. The details are on demand: `--per-session` prints every table in full (the column legends,
the decisions at every threshold, calibration levels and fits, every session), `--format json`
every number.

A group or session with fewer than `MIN_REQUESTS` requests says "too few requests (n)" instead of
a MAPE: a percentage from two requests reads like any other and means nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.text import Text

from sessiontools.analysis.estimate.hierarchy import MIN_REQUESTS
from sessiontools.analysis.estimate.judge import AGENT_HYBRID
from sessiontools.names import OWN_ESTIMATOR
from sessiontools.report.folder import folder_names, middle, more_line, session_groups
from sessiontools.report.layout import Column, FittedTable, percent

#: Short headers of the folder tables (the legend says which is which).
SHORT = {"calibrated": "calib", "calibrated_hybrid": "cal.hyb", "calibrated_session": "cal.ses"}
_SHORT_LEGEND = "calib, cal.hyb, cal.ses = calibrated(_hybrid, _session)"


def _head(est: str) -> str:
    return SHORT.get(est, est)


_BRIEF_LEGEND = f"A = prompt tokens, E = estimate; bias = mean (E-A)/A; MAPE = mean |E-A|/A; {OWN_ESTIMATOR} = the agent's own"

#: The folder answer's length at the design width (issue 26: one screen).
SCREEN_LINES = 40
#: The worst sessions the folder answer shows (--per-session shows every session).
WORST_ESTIMATES = 3

#: Estimators the folder answer shows in the totals and the worst sessions only (one screen); the
#: per-group and decision tables of --per-session, and the JSON, have them.
TOTALS_ONLY = ("calibrated_session",)

#: Estimators that start from the provider's count of the last reply and estimate only what follows.
HYBRIDS = (AGENT_HYBRID, "calibrated_hybrid")


#: Groups shown in the folder table (the largest by requests; JSON has every group).
MAX_GROUPS = 8


def too_few(n: int) -> str:
    return f"too few requests ({n})"


def _cell(s: Mapping[str, Any]) -> str:
    if s.get("mape") is None:
        return "-"
    return f"{percent(s['mape'], digits=0)} ({percent(s['bias'], signed=True, digits=0)})"


def group_stats(report: Any, by: str) -> list[tuple[str, int, dict[str, dict[str, Any]]]]:
    """(group, requests, {estimator: stats}) per group of `by` (`report.folder.GROUP_BY`): model and
    provider per request, the others per session (from the file's first lines)."""
    import polars as pl

    from sessiontools.analysis.estimate.stats import estimator_stats, stats_dict

    frame = report.frame
    if by == "model":
        expr = pl.col("model_key").fill_null("(no model)")
    elif by == "provider":
        expr = pl.col("provider").fill_null("(no provider)")
    else:
        groups = session_groups(by, frame["session"].unique(maintain_order=True).to_list())
        expr = pl.col("session").replace_strict(groups, default="(unknown)", return_dtype=pl.Utf8)
    labelled = frame.with_columns(expr.alias("_group"))
    stats = estimator_stats(labelled, report.estimators, ("_group",))
    sizes = labelled.group_by("_group").len()
    out = []
    for label, n in sorted(sizes.iter_rows()):
        out.append((label, n, {e: stats_dict(stats, e, _group=label) for e in report.estimators}))
    return out


def groups_table(groups: Sequence[tuple[str, int, Mapping[str, Mapping[str, Any]]]], overall: Mapping[str, Any],
                 estimators: Sequence[str], by: str, total: int) -> FittedTable:
    """One row per group and an `all` row: MAPE % (bias %) per estimator."""
    t = FittedTable(f"MAPE % (bias %) per {by} and estimator", (
        Column(by, "", "left"), Column("n", ""), *[Column(_head(e), "") for e in estimators],
    ), notes=[f"n = requests; cells MAPE % (bias %); too few: under {MIN_REQUESTS}"])
    largest = {g[0] for g in sorted(groups, key=lambda g: -g[1])[:MAX_GROUPS]}
    for label, n, stats in (g for g in groups if g[0] in largest):
        cells = [_cell(stats[e]) for e in estimators]
        if n < MIN_REQUESTS:
            cells = [too_few(n)] + [""] * (len(estimators) - 1)
        t.add_row(middle(label, 24), f"{n:,}", *cells)
    t.add_row("all", f"{total:,}", *[_cell(overall[e]) for e in estimators])
    if len(groups) > MAX_GROUPS:
        rest = [g for g in groups if g[0] not in largest]
        t.notes.append(f"{len(rest)} smaller {by} group(s) with {sum(n for _, n, _ in rest):,} requests not shown "
                       "(--format json has them)")
    return t


def verdict_text(summary: Mapping[str, Any]) -> Text | None:
    """Out of sample: the best raw estimator, and the hybrids judged against each other (and why)."""
    oos = (summary.get("calibration") or {}).get("out_of_sample")
    if not oos:
        return None
    mape = oos["mape"]
    raw = {k: v for k, v in mape.items() if k not in HYBRIDS and v is not None}
    hyb = {k: v for k, v in mape.items() if k in HYBRIDS and v is not None}
    line = f"out of sample ({oos['requests']:,} requests): best raw {oos['best_raw'] or '-'}"
    if oos.get("best_raw") in raw:
        line += f" ({raw[oos['best_raw']]:.1%})"
    if hyb:
        line += ("; hybrids (last reply's count + the rest), judged against each other: " +
                 ", ".join(f"{k} {v:.1%}" for k, v in hyb.items()))
    if oos.get("note"):
        line += f"; WARNING: {oos['note']}"
    return Text(line)


def worst_sessions_table(summary: Mapping[str, Any], estimators: Sequence[str], rank: str,
                         shown: int) -> tuple[FittedTable, int]:
    """The sessions where `rank`'s MAPE is largest (sessions with too few requests last), and how many
    sessions there are."""
    sessions = summary["sessions"]
    names = folder_names([s["session"] for s in sessions])

    def key(s: Mapping[str, Any]) -> tuple[int, float]:
        m = s["estimators"][rank]["mape"]
        return (0 if s["requests"] >= MIN_REQUESTS and m is not None else 1, -(m or 0.0))

    t = FittedTable(f"worst sessions by MAPE of {rank} (sessions with {MIN_REQUESTS}+ requests first)", (
        Column("session", "", "left"), Column("n", ""), *[Column(_head(e), "") for e in estimators],
    ), notes=["session: relative to the folder the sessions share; cells: MAPE %"])
    for s in sorted(sessions, key=key)[:shown]:
        cells = [percent(s["estimators"][e]["mape"]) for e in estimators]
        if s["requests"] < MIN_REQUESTS:
            cells = [too_few(s["requests"])] + [""] * (len(estimators) - 1)
        t.add_row(names[s["session"]], f"{s['requests']:,}", *cells)
    return t, len(sessions)


def decisions_line(summary: Mapping[str, Any], estimators: Sequence[str]) -> Text:
    """The compaction decisions (early / late requests) of each estimator at the middle threshold, in
    one line (`--per-session` has the table at every threshold, the JSON the rates)."""
    thresholds = summary["thresholds"]
    th = thresholds[len(thresholds) // 2]
    by_key = {(x["estimator"], x["threshold"]): x for x in summary["timing"]}
    cells = [f"{_head(e)} {by_key[(e, th['tokens'])]['early']}/{by_key[(e, th['tokens'])]['late']}"
             for e in estimators if (e, th["tokens"]) in by_key]
    more = f" (middle of {len(thresholds)}; --per-session: each)" if len(thresholds) > 1 else ""
    return Text(f"compaction decisions at T={th['tokens']:,}{more}, early/late: " + ", ".join(cells) +
                " (early = E > T >= A, late = E <= T < A)")


def _model_is_o200k(summary: Mapping[str, Any], estimators: Sequence[str]) -> bool:
    """Whether the `model` estimator counted every model with o200k (none has its own tokenizer)."""
    if "model" not in estimators or "o200k" not in estimators:
        return False
    used = summary.get("model_tokenizers") or {}
    return not any(t.get("own") for t in used.values())


def estimate_folder_answer(summary: Mapping[str, Any], report: Any, *, group_by: str | None,
                           rank: str | None = None, shown: int = WORST_ESTIMATES) -> Group:
    """The folder answer of `estimate-error` (renderables); `rank` is the estimator the worst sessions
    are ranked by (the `--fail-if` estimator, else the agent's own estimate, else the first)."""
    from dataclasses import replace

    from sessiontools.report.estimate_error import overall_table

    estimators = list(report.estimators)
    same_as_o200k = _model_is_o200k(summary, estimators)
    if same_as_o200k:  # every model fell back to o200k: the column would repeat o200k's
        estimators.remove("model")
    overall = overall_table(summary, estimators)
    overall.columns = [replace(c, legend="") for c in overall.columns]
    overall.notes = [_BRIEF_LEGEND]  # one brief legend for the screen; --per-session has each column's
    parts: list[Any] = [overall]
    if group_by is not None:
        groups = group_stats(report, group_by)
        by = group_by
    else:
        groups = [(str(g["group"]), g["requests"], g["estimators"]) for g in summary["groups"]]
        by = summary["by"]
    tables = [e for e in estimators if e not in TOTALS_ONLY] or estimators
    if groups:
        gt = groups_table(groups, summary["estimators"], tables, by, summary["requests"])
        if same_as_o200k:
            gt.notes[0] += "; model = o200k (none has its own offline)"
        parts.append(gt)
    if summary["thresholds"] and summary["timing"] and summary["requests"]:
        parts.append(decisions_line(summary, tables))
    verdict = verdict_text(summary)
    if verdict is not None:
        parts.append(verdict)
    rank = rank if rank in estimators else AGENT_HYBRID if AGENT_HYBRID in estimators else estimators[0]
    worst, total = worst_sessions_table(summary, estimators, rank, shown)
    parts.append(worst)
    worst.notes = []  # the names are relative to the folder, the cells MAPE %: said in the title
    worst.title += ", MAPE %"
    parts.append(Text(more_line(min(shown, total), total, "sessions", "--per-session: each, every table in full",
                                "JSON/CSV: every row"),
                      style="dim"))
    return Group(*parts)
