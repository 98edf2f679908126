"""`sessiontools estimate-error`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.analysis.estimate_error import (
    DEFAULT_THRESHOLD_GRID,
    EstimateErrorOptions,
    SessionWorker,
    parse_estimators,
    parse_mape_gate,
    parse_threshold_grid,
    summarize_requests,
)
from sessiontools.cli.common import (
    EXIT_GATE,
    PI_ONLY,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    PiVersionOpt,
    StrictOpt,
    check_leaf_options,
    check_output_path,
    check_plot_path,
    emit_json,
    emit_renderables,
    exit_code_for,
    resolve_format,
    run_files,
    save_figure,
    stderr_console,
    token_cache_path,
    write_frame,
    wrote,
)
from sessiontools.cli.common import TableFormat as Fmt
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.errors import InputError, UsageError
from sessiontools.report.estimate_error import (
    estimate_error_figure,
    estimate_error_headline,
    estimate_error_table,
    requests_frame,
)
from sessiontools.report.writers import envelope
from sessiontools.tokens.calibrated import load_calibration, save_calibration


class By(str, Enum):
    model = "model"
    provider = "provider"
    content = "content"
    size = "size"


class CalX(str, Enum):
    o200k = "o200k"
    cl100k = "cl100k"
    chars4 = "chars4"


def _check_outputs(format: Fmt | None, output: Path | None, calibration: Path | None, plot: Path | None) -> Fmt:
    """The format (from the -o suffix when not given); every output path checked before the run (exit 2)."""
    fmt = resolve_format(format, output, Fmt)
    if fmt == Fmt.parquet and output is None:
        raise UsageError("--format parquet needs --output PATH")
    check_output_path(output)
    check_output_path(calibration, "--save-calibration")
    check_plot_path(plot)
    return fmt


def _require_rows(report: object, loaded: object, strict: bool) -> None:
    """Nothing usable: one line and exit 3, never an empty table."""
    if getattr(report, "rows", None):
        return
    if getattr(loaded, "unreadable", 0):  # each file's reason is already on stderr
        raise typer.Exit(exit_code_for(loaded, strict))  # type: ignore[arg-type]
    raise InputError("estimate-error: no request with usable usage in the input (nothing to compare)")


def register(app: typer.Typer) -> None:
    @app.command("estimate-error")
    def estimate_error_cmd(
        paths: PathsArg = None,
        estimators: Annotated[
            str | None,
            typer.Option("--estimators", help="Comma-separated: chars4,pi,cl100k,o200k,calibrated (default: all)."),
        ] = None,
        by: Annotated[By, typer.Option("--by", help="Group requests by model, provider, content (CJK and tool-result share) or size (A).")] = By.model,
        threshold_grid: Annotated[
            str,
            typer.Option("--threshold-grid", help="Thresholds T for early/late: fractions of the largest A (<= 1) and/or tokens (e.g. 150000 or 150k)."),
        ] = DEFAULT_THRESHOLD_GRID,
        save_calibration_to: Annotated[
            Path | None, typer.Option("--save-calibration", help="Write the calibration fitted on these sessions (JSON) here.")
        ] = None,
        calibration: Annotated[
            Path | None, typer.Option("--calibration", help="Use these coefficients for the calibrated estimator (instead of the out-of-sample fit).")
        ] = None,
        calibration_x: Annotated[CalX, typer.Option("--calibration-x", help="The estimator x in A ~ a + b*x.")] = CalX.o200k,
        leaf: LeafOpt = None,
        all_leaves: AllLeavesOpt = False,
        pi_version: PiVersionOpt = None,
        format: Annotated[Fmt | None, typer.Option("--format", "-f", help="table, json (summary), csv or parquet (one row per request); default: from the -o suffix, else table.")] = None,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="PNG/SVG: E vs A, error distribution, error vs context size.")] = None,
        fail_if_mape: Annotated[
            list[str] | None,
            typer.Option("--fail-if-mape", help="Exit 1 when ESTIMATOR's MAPE exceeds PCT percent, e.g. chars4>20; repeatable."),
        ] = None,
        strict: StrictOpt = False,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the token-count cache.")] = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
    ) -> None:
        """Estimated vs recorded actual prompt tokens per request: bias, MAPE, early/late, calibration.

        Terms: A = actual prompt tokens (input + cache read + cache write); E = an estimate;
        bias = mean (E - A)/A (negative = under-counts); MAPE = mean |E - A|/A; A/E = median ratio;
        early/late = E over/under a threshold T while A is not; OOS = out of sample; LOSO = leave
        one session out; the `*` row = all models pooled.
        """
        check_leaf_options(leaf, all_leaves)
        names = parse_estimators(estimators)
        gates = [parse_mape_gate(g) for g in fail_if_mape or []]
        for est, _ in gates:
            if est not in names:
                raise UsageError(f"--fail-if-mape {est}: that estimator is not in --estimators")
        format = _check_outputs(format, output, save_calibration_to, plot)
        loaded_cal = None
        if calibration is not None:
            try:
                data = calibration.read_bytes()
            except OSError as exc:
                raise UsageError(f"--calibration {calibration}: cannot read ({exc.strerror or exc})") from exc
            loaded_cal = load_calibration(data)
        options = EstimateErrorOptions(
            estimators=names,
            by=by.value,
            thresholds=parse_threshold_grid(threshold_grid),
            leaf=leaf,
            all_leaves=all_leaves,
            pi_version=pi_version.value if pi_version else None,
            calibration=loaded_cal,
            calibration_x=calibration_x.value,
            fit=save_calibration_to is not None,
        )
        err = stderr_console()
        store_path = None if no_cache else str(token_cache_path())
        per_session, loaded = run_files(paths, err, SessionWorker(options, store_path), jobs, "estimating", agents=PI_ONLY,
                                        content_hash=store_path is not None, executor=executor)
        report = summarize_requests(per_session, options)

        _require_rows(report, loaded, strict)
        if format == Fmt.json:
            emit_json(envelope("estimate-error", **report.summary), output)
        elif format in (Fmt.csv, Fmt.parquet):
            write_frame(requests_frame(report.rows, report.estimators), format.value, output)
        else:
            emit_renderables([estimate_error_table(report.summary, report.estimators)], output)
        if plot is not None:
            save_figure(estimate_error_figure(report.rows, report.estimators), plot)
        if save_calibration_to is not None:
            save_calibration_to.write_bytes(save_calibration(report.fitted))
            wrote(save_calibration_to, "calibration")
        err.print(estimate_error_headline(report.summary), markup=False)

        problems = []
        for est, limit in gates:
            mape = report.summary["estimators"][est]["mape"]
            if mape is not None and mape > limit:
                problems.append(f"gate {est}>{limit * 100:g}% tripped: {est} MAPE {mape * 100:.2f}%")
        for msg in problems:
            err.print(msg, markup=False)
        code = exit_code_for(loaded, strict)
        raise typer.Exit(code or (EXIT_GATE if problems else 0))
