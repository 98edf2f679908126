"""`sessiontools export`: session files of any agent -> a hive-partitioned Parquet dataset."""

from pathlib import Path
from typing import Annotated, Any

import typer

from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.cli.inputs import exit_code_for, resolve_files, run_files
from sessiontools.cli.options import EXIT_OK, JobsOpt, PathsArg, StrictOpt
from sessiontools.cli.outputs import stderr_console
from sessiontools.cli.token_options import parse_token_list
from sessiontools.errors import UsageError
from sessiontools.names import OWN_RULES_HELP, axis_help, policy_help

TOKENIZERS = ("o200k", "cl100k")


def _replay_options(window: str | None, reserve: str | None, keep: str | None, policy: str | None,
                    limit: str | None = None, pct: str | None = None) -> dict | None:  # type: ignore[type-arg]
    """The replay grid of `export --replay-*` (None: no replay tables): windows, Pi's reserves and keeps,
    and the other policies' own axes (`limits`, Claude Code's `autocompact_pcts`), as `replay` takes them."""
    if all(v is None for v in (window, reserve, keep, policy, limit, pct)):
        return None
    from sessiontools.names import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS

    windows = parse_token_list(window, "--replay-window", minimum=1)
    reserves = parse_token_list(reserve, "--replay-reserve") or [DEFAULT_RESERVE_TOKENS]
    keeps = parse_token_list(keep, "--replay-keep") or [DEFAULT_KEEP_RECENT_TOKENS]
    from sessiontools.cli.cmd_replay import axis_options, check_grid
    from sessiontools.names import POLICY_ORDER

    known = [p.value for p in POLICY_ORDER]
    if policy is not None and policy not in known:
        raise UsageError(f"--replay-policy {policy!r}: choose one of {', '.join(known)} (default: each agent's own)")
    # With no --replay-policy, checked up front as well: a file that failed its replay would lose its other tables.
    check_grid(windows, reserves, policy, reserve is not None or policy is None, ("--replay-reserve", "--replay-window"))
    return {"windows": windows, "reserves": reserves, "keeps": keeps, "policy": policy,
            **axis_options(limit, pct, names=("--replay-auto-compact-limit", "--replay-autocompact-pct"))}


def _tokenizers(value: str | None) -> tuple[str, ...]:
    names = tuple(v.strip() for v in (value or "").split(",") if v.strip())
    for n in names:
        if n not in TOKENIZERS:
            raise UsageError(f"--estimators {n!r}: choose from {', '.join(TOKENIZERS)}")
    return names


def _print_summary(err: Any, plan: Any, summary: dict[str, Any], output: Path) -> None:
    """What the export wrote, and the files it read and then skipped (their bytes were in the dataset,
    or another file of the run had them)."""
    if plan.unchanged or plan.duplicates:
        err.print(f"skipped {plan.unchanged} file(s) whose bytes are already in {output} (a new mtime only)"
                  + (f" and {plan.duplicates} duplicate(s)" if plan.duplicates else ""), markup=False)
    if not summary["files"] and (plan.unchanged or plan.duplicates):
        err.print(f"nothing new to export into {output}", markup=False)
        return
    parts = ", ".join(f"{k} {v}" for k, v in sorted(summary["parts"].items()))
    err.print(f"exported {summary['files']} file(s): {summary['sessions']} session paths, {summary['requests']} "
              f"requests, {summary['compactions']} compactions into {output} (part files: {parts or 'none'})",
              markup=False)


def register(app: typer.Typer) -> None:
    @app.command()
    def export(
        output: Annotated[Path, typer.Option("--output", "-o", help="The dataset directory (created; appended to when it holds a dataset).")],
        paths: PathsArg = None,
        replay_window: Annotated[str | None, typer.Option("--replay-window", help="Also export replay_runs/replay_compactions for these windows (comma-separated; default: the recorded model's).")] = None,
        replay_reserve: Annotated[str | None, typer.Option("--replay-reserve", help="reserveTokens value(s) of the replay grid, comma-separated.")] = None,
        replay_keep: Annotated[str | None, typer.Option("--replay-keep", help="keepRecentTokens value(s) of the replay grid, comma-separated.")] = None,
        replay_policy: Annotated[str | None, typer.Option("--replay-policy", help=policy_help("each agent's own; " + OWN_RULES_HELP))] = None,
        replay_limit: Annotated[str | None, typer.Option("--replay-auto-compact-limit", help=axis_help("auto_compact_limit", " of the replay grid", " (default: 90% of the window)."))] = None,
        replay_pct: Annotated[str | None, typer.Option("--replay-autocompact-pct", help=axis_help("autocompact_pct", " of the replay grid", "."))] = None,
        estimators: Annotated[str | None, typer.Option("--estimators", help="Also count each request's context with these tokenizers: o200k, cl100k (comma-separated; slower).")] = None,
        strict: StrictOpt = False,
        jobs: JobsOpt = None,
        executor: ExecutorOpt = Executor.processes,
    ) -> None:
        """Export sessions, requests, compactions and summaries (and, with --replay-* options, replay
        runs) as a Parquet dataset partitioned by agent and month, for DuckDB, polars or Spark.

        Appending is incremental: a file whose content hash is already in the dataset is skipped.
        Columns are documented in docs/dataset.md (schema version in every row and _dataset.json).
        """
        from sessiontools.analysis.dataset import ExportOptions
        from sessiontools.cli.limits import lock_timeout
        from sessiontools.report.dataset import dataset_lock
        from sessiontools.report.export import ExportWorker, plan_export, write_export

        options = ExportOptions(_tokenizers(estimators),
                                _replay_options(replay_window, replay_reserve, replay_keep, replay_policy,
                                                replay_limit, replay_pct))
        err = stderr_console()
        timeout = lock_timeout()
        files, _ = resolve_files(paths, err)
        with dataset_lock(output, timeout, on_wait=lambda: err.print(
                f"waiting for another export into {output} to finish (at most {timeout:g} s)", markup=False)):
            plan = plan_export(output, files)
            if plan.writer.removed:
                err.print(f"note: removed {len(plan.writer.removed)} file(s) an interrupted export left in {output} "
                          "(never in its manifest, so never counted)", markup=False)
            if plan.already:
                err.print(f"skipping {plan.already} file(s) already in {output} (size and mtime as exported)",
                          markup=False)
            if not plan.new_files:
                err.print(f"nothing new to export into {output}", markup=False)
                raise typer.Exit(EXIT_OK)
            from sessiontools.read.parallel import FULL_DIGEST

            results, loaded = run_files(plan.new_files, err, ExportWorker(options), jobs, "exporting", executor=executor,
                                        content_hash=FULL_DIGEST)  # (hashed from the read that parses it)
            from sessiontools.cli.progress import phase

            with phase(err, f"writing the dataset into {output}"):
                summary = write_export(plan, results, loaded.digests)
            _print_summary(err, plan, summary, output)
        raise typer.Exit(exit_code_for(loaded, strict))
