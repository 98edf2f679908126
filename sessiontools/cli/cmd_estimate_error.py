"""`sessiontools estimate-error`."""

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sessiontools.cli.choices import DEFAULT_THRESHOLD_GRID, CalibrationX
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.cli.grouping import GroupByOpt, PerSessionOpt
from sessiontools.cli.inputs import exit_code_for, run_files, token_cache_path
from sessiontools.cli.options import (
    EXIT_GATE,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    RuleVersionOpt,
    StrictOpt,
    check_leaf_options,
)
from sessiontools.cli.options import TableFormat as Fmt
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
from sessiontools.errors import InputError, UsageError
from sessiontools.names import ESTIMATORS_HELP

if TYPE_CHECKING:
    from sessiontools.report.gates import Gate


class By(str, Enum):
    model = "model"
    provider = "provider"
    content = "content"
    size = "size"


#: analysis option fields -> the flags that set them
FLAGS = {"estimators": "--estimators", "thresholds": "--threshold-grid", "by": "--by",
         "calibration_x": "--calibration-x", "leaf": "--leaf"}
#: gate metrics: `STAT.ESTIMATOR` (fractions for bias and MAPE, tokens for p50/p95/max)
GATE_STATS = ("mape", "bias", "p50", "p95", "max", "mape_in_sample", "mape_oos")
_FAIL_IF_HELP = ("Exit 1 when METRIC OP NUMBER holds for all sessions or any session (OP: > >= < <= == !=); "
                 "repeatable. Metrics: mape.ESTIMATOR, bias.ESTIMATOR (fractions), p50/p95/max.ESTIMATOR "
                 "(tokens), mape_in_sample.calibrated, mape_oos.ESTIMATOR (every estimator on the requests the "
                 "calibrated model predicted out of sample), requests; e.g. 'mape.chars4>0.2'.")


def gate_metrics() -> list[str]:
    """Every metric a --fail-if gate can test: `STAT.ESTIMATOR` for each of `GATE_STATS`, and `requests`."""
    from sessiontools.analysis.estimate import ESTIMATORS

    return [f"{s}.{e}" for s in GATE_STATS for e in ESTIMATORS] + ["requests"]


def _gate_metrics(stats: Any, estimators: Any, requests: int) -> dict[str, float | None]:
    from sessiontools.analysis.estimate import stats_dict

    keys = {"mape": "mape", "bias": "bias", "p50": "p50_abs", "p95": "p95_abs", "max": "max_abs",
            "mape_in_sample": "mape_in_sample"}
    out: dict[str, float | None] = {"requests": requests}
    for est in estimators:
        d = stats_dict(stats, est)
        for name, col in keys.items():
            out[f"{name}.{est}"] = d[col]
    return out


def _oos_metrics(report: Any) -> tuple[dict[str, float | None], dict[str, dict[str, float | None]]]:
    """mape_oos.* overall and per held-out session (None below the minimum number of predictions)."""
    from sessiontools.analysis.estimate.hierarchy import MIN_OOS

    v = report.calibration.verdict if report.calibration is not None else None
    if v is None:
        return {}, {}
    overall = {f"mape_oos.{e}": m for e, m in v.mape.items()}
    per = {}
    for row in v.per_session.iter_rows(named=True):
        enough = row["requests"] >= MIN_OOS
        per[row["session"]] = {f"mape_oos.{k[5:]}": (x if enough else None) for k, x in row.items()
                               if k.startswith("mape_")}
    return overall, per


def _gate_problems(gates: "list[Gate]", report: Any) -> list[str]:
    from pathlib import PurePath

    from sessiontools.report.gates import tripped

    overall, per = _oos_metrics(report)
    rows = [("all sessions", {**_gate_metrics(report.stats, report.estimators, len(report.frame)), **overall})]
    if len(report.sessions) > 1:
        rows += [(f"session {PurePath(s.session).name}",
                  {**_gate_metrics(s.stats, report.estimators, s.requests), **per.get(s.session, {})})
                 for s in report.sessions]
    return tripped(gates, rows)


def _fitted(err: Any, per_session: Any, options: Any) -> Any:
    """The requests summarised and the estimators fitted, with a progress spinner (a terminal only)."""
    from sessiontools.analysis.estimate import summarize_requests
    from sessiontools.cli.progress import phase

    with phase(err, "fitting the estimators and the calibration"):
        return summarize_requests(per_session, options)


def _check_outputs(format: Fmt | None, output: Path | None, calibration: Path | None, plot: Path | None) -> Fmt:
    """The format (from the -o suffix when not given); every output path checked before the run (exit 2)."""
    fmt = resolve_format(format, output, Fmt)
    if fmt == Fmt.parquet and output is None:
        raise UsageError("--format parquet needs --output PATH")
    check_output_path(output)
    check_output_path(calibration, "--save-calibration")
    check_plot_path(plot)
    return fmt


def _require_rows(report: Any, loaded: Any, strict: bool) -> None:
    """Nothing usable: one line and exit 3, never an empty table."""
    if len(report.frame):
        return
    if getattr(loaded, "unreadable", 0):  # each file's reason is already on stderr
        raise typer.Exit(exit_code_for(loaded, strict))
    raise InputError("estimate-error: no request with usable usage in the input (nothing to compare)")


def _session_worker(options: Any, store_path: str | None, paths: Any, jobs: int | None, executor: Executor) -> Any:
    """The per-file worker. A cold run's vocabulary helpers start now when the files will be worked on in
    this process: they load while the report's code is imported and the first files are read."""
    from sessiontools.analysis.estimate import SessionWorker

    worker = SessionWorker(options, store_path)
    if executor == Executor.processes and _in_this_process(paths, jobs):
        worker.start_helpers()
    return worker


def _in_this_process(paths: Any, jobs: int | None) -> bool:
    """Whether the files will be worked on in this process (`--jobs 1`, or named files too small for
    more workers): known before they are read only for files named one by one."""
    if jobs is not None or not paths:
        return jobs == 1
    from sessiontools.read.parallel import default_jobs

    files = [Path(p) for p in paths]
    return all(f.is_file() for f in files) and default_jobs(files) == 1


def _stop_token_helpers() -> None:
    """Every count is in: the vocabulary helpers a cold run started (`tokens.remote`) are stopped
    (their memory back before the fit and the output)."""
    import sys

    remote = sys.modules.get("sessiontools.tokens.remote")
    if remote is not None:
        remote.stop_all()


def register(app: typer.Typer) -> None:
    @app.command("estimate-error")
    def estimate_error_cmd(
        paths: PathsArg = None,
        estimators: Annotated[
            str | None,
            typer.Option("--estimators", help=ESTIMATORS_HELP),
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
        calibration_x: Annotated[CalibrationX, typer.Option("--calibration-x", help="The estimator x in A ~ a + b*x.")] = CalibrationX.O200K,
        leaf: LeafOpt = None,
        all_leaves: AllLeavesOpt = False,
        rule_version: RuleVersionOpt = None,
        format: Annotated[Fmt | None, typer.Option("--format", "-f", help="table, json (summary), csv or parquet (one row per request); default: from the -o suffix, else table.")] = None,
        output: OutputOpt = None,
        plot: Annotated[Path | None, typer.Option("--plot", help="PNG/SVG: E vs A, error distribution, error vs context size.")] = None,
        fail_if: Annotated[list[str] | None, typer.Option("--fail-if", help=_FAIL_IF_HELP)] = None,
        strict: StrictOpt = False,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the token-count cache.")] = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
        per_session: PerSessionOpt = False,
        group_by: GroupByOpt = None,
    ) -> None:
        """Estimated vs recorded actual prompt tokens per request: bias, MAPE, early/late, calibration.

        Terms: A = actual prompt tokens (input + cache read + cache write); E = an estimate;
        bias = mean (E - A)/A (negative = under-counts); MAPE = mean |E - A|/A; A/E = median ratio;
        early/late = E over/under a threshold T while A is not; OOS = out of sample; LOSO = leave
        one session out; the `*` row = all models pooled (linear fit); calibrated = a hierarchical
        fit (corpus, provider, model, rules, session);
        calibrated_hybrid = the agent's last usage + the calibrated count of later messages;
        calibrated_session = calibrated corrected by the session's own earlier requests (time split).
        """
        from sessiontools.analysis.estimate import OptionError

        check_leaf_options(leaf, all_leaves)
        try:
            _run(paths, estimators, by, threshold_grid, save_calibration_to, calibration, calibration_x, leaf,
                 all_leaves, rule_version, format, output, plot, fail_if, strict, no_cache, jobs, executor,
                 per_session, group_by.value if group_by else None)
        except OptionError as exc:
            raise UsageError(f"{FLAGS.get(exc.field, exc.field)}: {exc}") from exc


def _run(paths: Any, estimators: str | None, by: By, threshold_grid: str, save_calibration_to: Path | None,
         calibration: Path | None, calibration_x: CalibrationX, leaf: str | None, all_leaves: bool, rule_version: Any,
         format: Fmt | None, output: Path | None, plot: Path | None, fail_if: list[str] | None, strict: bool,
         no_cache: bool, jobs: int | None, executor: Executor = Executor.processes, each_session: bool = False,
         group_by: str | None = None) -> None:
    from sessiontools.analysis.estimate import (
        EstimateErrorOptions,
        parse_estimators,
        parse_threshold_grid,
    )
    from sessiontools.report.gates import parse_gates
    from sessiontools.report.writers import envelope
    from sessiontools.tokens.calibrated import load_calibration, save_calibration

    names = parse_estimators(estimators)
    gates = parse_gates(fail_if or [], gate_metrics())
    for g in gates:
        est = g.metric.partition(".")[2]
        if est and est not in names:
            raise UsageError(f"--fail-if {g}: {est} is not in --estimators")
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
        rule_version=rule_version.value if rule_version else None,
        calibration=loaded_cal,
        calibration_x=calibration_x.value,
        fit=save_calibration_to is not None,
    )
    err = stderr_console()
    store_path = None if no_cache else str(token_cache_path())
    worker = _session_worker(options, store_path, paths, jobs, executor)
    from sessiontools.report.estimate_json import estimate_error_headline, estimate_error_json
    per_session, loaded = run_files(paths, err, worker, jobs, "estimating", content_hash=store_path is not None,
                                    executor=executor)
    _stop_token_helpers()
    report = _fitted(err, per_session, options)

    _require_rows(report, loaded, strict)
    summary = estimate_error_json(report)
    if format == Fmt.json:
        emit_json(envelope("estimate-error", **summary), output)
    elif format in (Fmt.csv, Fmt.parquet):
        from sessiontools.report.estimate_error import requests_frame  # (rich: only for what is not JSON)

        write_frame(requests_frame(report), format.value, output)
    elif each_session or len(summary["sessions"]) <= 1:
        from sessiontools.report.estimate_error import estimate_error_table

        emit_renderables([estimate_error_table(summary, report.estimators)], output)
    else:  # a folder: per estimator and group, the verdict, the worst sessions first
        from sessiontools.report.estimate_totals import estimate_folder_answer
        rank = gates[0].metric.partition(".")[2] if gates else None
        emit_renderables([estimate_folder_answer(summary, report, group_by=group_by, rank=rank)], output)
    if plot is not None:
        from sessiontools.report.estimate_error import estimate_error_figure

        save_figure(estimate_error_figure(report.rows, report.estimators), plot)
    if save_calibration_to is not None:
        from sessiontools.report.writers import write_atomic

        write_atomic(save_calibration_to, save_calibration(report.fitted))
        wrote(save_calibration_to, "calibration")
    err.print(estimate_error_headline(summary), markup=False)

    problems = _gate_problems(gates, report)
    for msg in problems:
        err.print(msg, markup=False)
    code = exit_code_for(loaded, strict)
    raise typer.Exit(code or (EXIT_GATE if problems else 0))
