"""`sessiontools replay`."""

from __future__ import annotations

from enum import Enum
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.cli.common import (
    EXIT_GATE,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    StrictOpt,
    check_leaf_options,
    emit_json,
    emit_renderables,
    exit_code_for,
    run_files,
    save_figure,
    stderr_console,
    write_frame,
)
from sessiontools.cli.common import TableFormat as Fmt
from sessiontools.errors import UsageError
from sessiontools.gates import parse_gates, tripped
from sessiontools.policies.pi.settings import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from sessiontools.read import load_session
from sessiontools.replay import METRICS, replay_records, replay_session
from sessiontools.report.replay import compactions_frame, heatmap_figure, replay_table, timeline_figure
from sessiontools.report.writers import envelope


class Policy(str, Enum):
    pi0 = "pi-0"
    pi1 = "pi-1"


def _ints(value: str | None, name: str) -> list[int] | None:
    if value is None:
        return None
    try:
        out = [int(v.replace("_", "")) for v in value.split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{name} takes comma-separated whole numbers, got {value!r}") from exc
    if not out or any(v < 0 for v in out):
        raise UsageError(f"{name} takes comma-separated non-negative whole numbers, got {value!r}")
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def replay(
        paths: PathsArg = None,
        context_window: Annotated[str | None, typer.Option("--context-window", help="Window(s) W, comma-separated (default: the recorded model's, from the bundled catalogue).")] = None,
        reserve: Annotated[str, typer.Option("--reserve", help="reserveTokens value(s), comma-separated.")] = str(DEFAULT_RESERVE_TOKENS),
        keep_recent: Annotated[str, typer.Option("--keep-recent", help="keepRecentTokens value(s), comma-separated.")] = str(DEFAULT_KEEP_RECENT_TOKENS),
        policy: Annotated[Policy | None, typer.Option("--policy", help="Check points of Pi 0.x or 1.x (default: the version that wrote the file).")] = None,
        leaf: LeafOpt = None,
        all_leaves: AllLeavesOpt = False,
        summary_tokens: Annotated[int | None, typer.Option("--summary-tokens", min=1, help="Size of a new summary (default: learnt from the recorded summaries).")] = None,
        format: Annotated[Fmt, typer.Option("--format", "-f")] = Fmt.table,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="PNG/SVG: the timeline of one setting, or a heatmap for a grid.")] = None,
        plot_metric: Annotated[str, typer.Option("--plot-metric", help="Metric of the grid heatmap.")] = "billed_input_tokens",
        fail_if: Annotated[list[str] | None, typer.Option("--fail-if", help="Exit 1 when METRIC OP NUMBER holds for any run, e.g. overflows>0, early_rate>0.2.")] = None,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
    ) -> None:
        """Re-run Pi's compaction offline over a grid of window/reserve/keep settings."""
        check_leaf_options(leaf, all_leaves)
        gates = parse_gates(fail_if or [], METRICS)
        if plot_metric not in METRICS:
            raise UsageError(f"--plot-metric {plot_metric!r}: unknown; known: {', '.join(METRICS)}")
        if format in (Fmt.csv, Fmt.parquet) and output is None and format == Fmt.parquet:
            raise UsageError("--format parquet needs --output PATH")
        windows = _ints(context_window, "--context-window")
        reserves = _ints(reserve, "--reserve") or [DEFAULT_RESERVE_TOKENS]
        keeps = _ints(keep_recent, "--keep-recent") or [DEFAULT_KEEP_RECENT_TOKENS]
        err = stderr_console()
        options = dict(windows=windows, reserves=reserves, keeps=keeps, policy=policy.value if policy else None,
                       leaf=leaf, all_leaves=all_leaves, summary_tokens=summary_tokens)
        per_file, loaded = run_files(paths, err, partial(replay_records, **options), jobs, "replaying")
        records = [r for recs in per_file for r in recs]
        if format == Fmt.json:
            emit_json(envelope("replay", runs=records), output)
        elif format in (Fmt.csv, Fmt.parquet):
            write_frame(compactions_frame(records), format.value, output)
        else:
            emit_renderables([replay_table(records)], output)
        if plot is not None:
            if len(records) == 1:
                (pr,) = replay_session(load_session(records[0]["session"]), **options)
                fig = timeline_figure(pr, pr.runs[0])
            else:
                fig = heatmap_figure(records, plot_metric)
            save_figure(fig, plot)
        problems = tripped(gates, [(f"{r['session']} {r['settings']}", r["metrics"]) for r in records])
        for msg in problems:
            err.print(msg, markup=False)
        code = exit_code_for(loaded, strict)
        raise typer.Exit(code or (EXIT_GATE if problems else 0))
