"""`sessiontools diff-summaries`: how compaction summaries drift across repeated compactions."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.analysis.drift import (
    FUZZY_THRESHOLD,
    METRICS,
    DriftReport,
    DriftWorker,
    evaluate_gates,
    parse_gate,
    token_counter,
)
from sessiontools.cli.common import (
    EXIT_GATE,
    EXIT_OK,
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
from sessiontools.errors import UsageError
from sessiontools.report.drift import decay_figure, drift_markdown, drift_renderables, figure_kwargs
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
    ) -> None:
        """How compaction summaries drift: items and literals kept, dropped, added, changed; decay; gates.

        Terms: S(k) = the k-th summary on a path; item = one bullet or line of a summary section;
        literal = a path, identifier, number or quoted error in it; pair = S(k) -> S(k+1); decay = the
        share of S(k)'s items still present in later summaries; came back (resurrection) = an item
        dropped by one summary and restored by a later one.
        """
        check_leaf_options(leaf, all_leaves)
        gates = [parse_gate(g) for g in fail_if or []]
        format = resolve_format(format, output, DriftFormat)
        check_output_path(output)
        plot_format = check_plot_path(plot).lstrip(".") or None
        err = stderr_console()
        counter = token_counter(tokenizer.value)
        if counter.fallback_reason:
            err.print(safe_text(f"note: {counter.fallback_reason}; summary lengths are counted as ceil(chars/4)"))
        worker = DriftWorker(leaf=leaf, all_leaves=all_leaves, tokenizer=tokenizer.value)
        per_file, loaded = run_files(paths, err, worker, jobs, "analysing")
        if not per_file and loaded.unreadable:  # each file's reason is already on stderr
            raise typer.Exit(exit_code_for(loaded, strict))
        report = DriftReport(tuple(c for chains in per_file for c in chains), counter.name, FUZZY_THRESHOLD)
        if pair is not None and report.chains and not any(len(c.pairs) >= pair for c in report.chains):
            most = max(len(c.pairs) for c in report.chains)
            raise UsageError(f"--pair {pair}: the analysed paths have at most {most} pair(s)")
        results = evaluate_gates(report.metrics(), gates)

        if format == DriftFormat.json:
            emit_json(envelope("diff-summaries", **report.to_dict(pair), gates=[r.to_dict() for r in results]), output)
        elif format == DriftFormat.markdown:
            text = drift_markdown(report, pair=pair, gates=results)
            if output is None:
                typer.echo(text, nl=False)
            else:
                output.write_text(text, encoding="utf-8")
                wrote(output)
        else:
            emit_renderables(drift_renderables(report, pair=pair, gates=results), output)

        if plot is not None and plot_format is not None:
            import matplotlib

            with matplotlib.rc_context({"svg.hashsalt": "sessiontools", "svg.fonttype": "none"}):
                decay_figure(report).savefig(plot, **figure_kwargs(plot_format))
            wrote(plot)

        m = report.metrics()
        err.print(
            f"diff-summaries: {len(report.chains)} path(s), {m['summaries']} summaries, {m['pairs']} pairs; "
            f"dropped {m['dropped_items']} items and {m['dropped_literals']} literals",
            markup=False,
        )
        tripped = [r for r in results if r.tripped]
        for r in tripped:
            err.print(f"gate tripped: --fail-if {r.gate.expression} (value {r.value:g})", markup=False)
        code = exit_code_for(loaded, strict)
        if code == EXIT_OK and tripped:
            code = EXIT_GATE
        raise typer.Exit(code)
