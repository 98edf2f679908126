"""`sessiontools diff-summaries`: how compaction summaries drift across repeated compactions."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sessiontools.cli.choices import DRIFT_METRICS
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.cli.grouping import GroupByOpt, PerSessionOpt
from sessiontools.cli.inputs import exit_code_for, run_files
from sessiontools.cli.options import (
    EXIT_GATE,
    EXIT_OK,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    StrictOpt,
    check_leaf_options,
)
from sessiontools.cli.outputs import (
    check_output_path,
    check_plot_path,
    emit_json,
    emit_renderables,
    resolve_format,
    save_figure,
    stderr_console,
    write_frame,
    wrote,
)
from sessiontools.errors import UsageError
from sessiontools.names import CHARS4_SUMMARY_HELP

if TYPE_CHECKING:
    from sessiontools.analysis.drift import DriftReport


class DriftFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


class CsvTable(str, Enum):
    summaries = "summaries"
    pairs = "pairs"
    facts = "facts"
    chains = "chains"


class Tokenizer(str, Enum):
    o200k = "o200k"
    cl100k = "cl100k"
    chars4 = "chars4"


_FAIL_IF_HELP = (
    "Exit 1 when METRIC OP NUMBER holds (OP: > >= < <= == !=); repeatable; quote it in a shell. "
    "Metrics: " + ", ".join(DRIFT_METRICS) + "."
)


def _emit(report: "DriftReport", format: DriftFormat, csv_table: CsvTable, pair: int | None,
          results: list[dict[str, Any]], output: Path | None, folder: dict[str, Any] | None = None) -> None:
    """Write the report in the chosen format to `output` (stdout when None)."""
    from sessiontools.report.drift import drift_markdown, drift_renderables
    from sessiontools.report.drift_json import drift_frame, report_to_dict
    from sessiontools.report.writers import envelope, write_atomic

    if format == DriftFormat.csv:
        write_frame(drift_frame(report.chains, csv_table.value), "csv", output)
    elif format == DriftFormat.json:
        emit_json(envelope("diff-summaries", **report_to_dict(report, pair), gates=results), output)
    elif format == DriftFormat.markdown:
        text = drift_markdown(report, pair=pair, gates=results)
        if output is None:
            typer.echo(text, nl=False)
        else:
            write_atomic(output, text)
            wrote(output)
    elif folder is not None and len({c.session for c in report.chains}) > 1:
        from sessiontools.report.drift import gates_text
        from sessiontools.report.drift_totals import drift_folder_answer
        emit_renderables([drift_folder_answer(report, **folder), *([gates_text(results)] if results else [])], output)
    else:
        emit_renderables(drift_renderables(report, pair=pair, gates=results), output)


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
            DriftFormat | None, typer.Option("--format", "-f", help="table (tables and diffs), json, markdown (a pull-request "
                                              "comment), or csv (the rows of --csv-table); default: from the -o suffix, else table.")
        ] = None,
        csv_table: Annotated[
            CsvTable, typer.Option("--csv-table", help="Rows for --format csv: one per summary, pair, compaction and "
                                   "fact category, or chain.")
        ] = CsvTable.summaries,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="Save the decay curves to PATH.png or PATH.svg.")] = None,
        fail_if: Annotated[list[str] | None, typer.Option("--fail-if", help=_FAIL_IF_HELP)] = None,
        tokenizer: Annotated[
            Tokenizer, typer.Option("--tokenizer", help=f"How summary lengths are counted (chars4 = {CHARS4_SUMMARY_HELP}).")
        ] = Tokenizer.o200k,
        compare: Annotated[bool, typer.Option("--compare", help="Compare two sides: PATHS are A and B, two files or two directories paired by session id (e.g. the recorded sessions and their `resummarize` outputs); --fail-if then takes compare.M (B / A), delta.M (B - A), a.M, b.M (docs/diff-summaries.md).")] = False,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
        per_session: PerSessionOpt = False,
        group_by: GroupByOpt = None,
    ) -> None:
        """How compaction summaries drift: items and literals kept, dropped, added, changed; decay; gates.

        Terms: S(k) = the k-th summary on a path; item = one bullet or line of a summary section;
        literal = a path, identifier, number or quoted error in it; pair = S(k) -> S(k+1); decay = the
        share of S(k)'s items still present in later summaries; came back (resurrection) = an item
        dropped by one summary and restored by a later one.
        """
        if compare:
            from sessiontools.cli.compare import run_compare

            run_compare(paths, leaf, format.value if format else None, output, fail_if, tokenizer.value, strict)
        _run(paths, leaf, all_leaves, pair, format, csv_table, output, plot, fail_if, tokenizer, strict, jobs, executor,
             per_session or pair is not None, group_by.value if group_by else None)


def _run(paths: list[Path] | None, leaf: str | None, all_leaves: bool, pair: int | None, format: DriftFormat | None,
         csv_table: CsvTable, output: Path | None, plot: Path | None, fail_if: list[str] | None, tokenizer: Tokenizer,
         strict: bool, jobs: int | None, executor: Executor, per_session: bool = False,
         group_by: str | None = None) -> None:
    from sessiontools.analysis.drift import FUZZY_THRESHOLD, METRICS, DriftReport, DriftWorker, token_counter
    from sessiontools.report.drift import decay_figure
    from sessiontools.report.drift_json import gate_results
    from sessiontools.report.gates import parse_gates, tripped
    from sessiontools.report.text import safe_text

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
    per_file, loaded = run_files(paths, err, worker, jobs, "analysing", executor=executor)
    if not per_file and loaded.unreadable:  # each file's reason is already on stderr
        raise typer.Exit(exit_code_for(loaded, strict))
    report = DriftReport(tuple(c for chains in per_file for c in chains), counter.name, FUZZY_THRESHOLD)
    if pair is not None and report.chains and not any(len(c.pairs) >= pair for c in report.chains):
        most = max(len(c.pairs) for c in report.chains)
        raise UsageError(f"--pair {pair}: the analysed paths have at most {most} pair(s)")
    m = report.metrics()
    results = gate_results(m, gates)
    folder = None
    if not per_session and format == DriftFormat.table:
        from sessiontools.report.folder import UNKNOWN_AGENT, session_groups
        by = group_by or "agent"
        groups = ({c.session: c.agent or UNKNOWN_AGENT for c in report.chains} if by == "agent" else
                  session_groups(by, [c.session for c in report.chains],
                                 {c.session: c.model for c in report.chains}))
        folder = {"groups": groups, "by": by, "metric": gates[0].metric if gates else None}
    _emit(report, format, csv_table, pair, results, output, folder)
    if plot is not None:
        save_figure(decay_figure(report), plot)
    err.print(
        f"diff-summaries: {len(report.chains)} path(s), {m['summaries']} summaries, {m['pairs']} pairs; "
        f"dropped {m['dropped_items']} items and {m['dropped_literals']} literals; lost {m['lost_facts']} facts",
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
