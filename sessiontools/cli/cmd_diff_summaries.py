"""`sessiontools diff-summaries`: how compaction summaries drift across repeated compactions."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.analysis.drift import FUZZY_THRESHOLD, METRICS, DriftReport, DriftWorker, token_counter
from sessiontools.cli.common import (
    EXIT_GATE,
    EXIT_OK,
    PI_ONLY,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    StrictOpt,
    check_leaf_options,
    check_output_path,
    check_plot_path,
    emit_json,
    emit_renderables,
    exit_code_for,
    resolve_format,
    run_files,
    stderr_console,
    wrote,
)
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.errors import UsageError
from sessiontools.gates import parse_gates, tripped
from sessiontools.report.drift import decay_figure, drift_markdown, drift_renderables
from sessiontools.report.drift_json import gate_results, report_to_dict
from sessiontools.report.figures import save_figure
from sessiontools.report.text import safe_text
from sessiontools.report.writers import envelope


class DriftFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


class Tokenizer(str, Enum):
    o200k = "o200k"
    cl100k = "cl100k"
    chars4 = "chars4"


_FAIL_IF_HELP = (
    "Exit 1 when METRIC OP NUMBER holds (OP: > >= < <= == !=); repeatable; quote it in a shell. "
    "Metrics: " + ", ".join(METRICS) + "."
)


def register(app: typer.Typer) -> None:
    @app.command("diff-summaries")
    def diff_summaries_cmd(
        paths: PathsArg = None,
        leaf: LeafOpt = None,
        all_leaves: AllLeavesOpt = False,
        pair: Annotated[
            int | None, typer.Option("--pair", min=1, help="Show only the K-th pair of each chain (1 = the first compaction pair).")
        ] = None,
        format: Annotated[
            DriftFormat | None, typer.Option("--format", "-f", help="table (tables and diffs), json, or markdown (a pull-request comment); default: from the -o suffix, else table.")
        ] = None,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="Save the decay curves to PATH.png or PATH.svg.")] = None,
        fail_if: Annotated[list[str] | None, typer.Option("--fail-if", help=_FAIL_IF_HELP)] = None,
        tokenizer: Annotated[
            Tokenizer, typer.Option("--tokenizer", help="How summary lengths are counted (chars4 = Pi's ceil(chars/4)).")
        ] = Tokenizer.o200k,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
    ) -> None:
        """How compaction summaries drift: items and literals kept, dropped, added, changed; decay; gates."""
        check_leaf_options(leaf, all_leaves)
        gates = parse_gates(fail_if or [], METRICS)
        format = resolve_format(format, output, DriftFormat)
        check_output_path(output)
        check_plot_path(plot)
        err = stderr_console()
        counter = token_counter(tokenizer.value)
        if counter.fallback_reason:
            err.print(safe_text(f"note: {counter.fallback_reason}; summary lengths are counted as ceil(chars/4)"))
        worker = DriftWorker(leaf=leaf, all_leaves=all_leaves, tokenizer=tokenizer.value)
        per_file, loaded = run_files(paths, err, worker, jobs, "analysing", agents=PI_ONLY, executor=executor)
        if not per_file and loaded.unreadable:  # each file's reason is already on stderr
            raise typer.Exit(exit_code_for(loaded, strict))
        report = DriftReport(tuple(c for chains in per_file for c in chains), counter.name, FUZZY_THRESHOLD)
        if pair is not None and report.chains and not any(len(c.pairs) >= pair for c in report.chains):
            most = max(len(c.pairs) for c in report.chains)
            raise UsageError(f"--pair {pair}: the analysed paths have at most {most} pair(s)")
        m = report.metrics()
        results = gate_results(m, gates)

        if format == DriftFormat.json:
            emit_json(envelope("diff-summaries", **report_to_dict(report, pair), gates=results), output)
        elif format == DriftFormat.markdown:
            text = drift_markdown(report, pair=pair, gates=results)
            if output is None:
                typer.echo(text, nl=False)
            else:
                output.write_text(text, encoding="utf-8")
                wrote(output)
        else:
            emit_renderables(drift_renderables(report, pair=pair, gates=results), output)

        if plot is not None:
            save_figure(decay_figure(report), plot)
            wrote(plot)

        err.print(
            f"diff-summaries: {len(report.chains)} path(s), {m['summaries']} summaries, {m['pairs']} pairs; "
            f"dropped {m['dropped_items']} items and {m['dropped_literals']} literals",
            markup=False,
        )
        label = f"{len(report.chains)} path(s) in {len({c.session for c in report.chains})} session(s)"
        messages = tripped(gates, [(label, m)])
        for msg in messages:
            err.print(msg, markup=False)
        code = exit_code_for(loaded, strict)
        if code == EXIT_OK and messages:
            code = EXIT_GATE
        raise typer.Exit(code)
