"""The `sessiontools` command line: thin Typer commands over the library.

Each command parses its options, makes one library call, and renders. One handler turns
`SessionToolsError` into a one-line message and its exit code; `SESSIONTOOLS_DEBUG=1` re-raises.

Start-up stays fast (`sessiontools --help` and every `CMD --help`): declaring a command imports only
typer and light modules (cli.options, cli.inputs, cli.outputs, cli.choices); the analyses, the
readers, the report code and rich are imported inside the command that runs them. The modules that declare commands do without
`from __future__ import annotations`: Typer would evaluate each parameter's annotation string (several
times) on every start.
"""

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sessiontools.cli.choices import DEFAULT_RESERVE_TOKENS
from sessiontools.cli.executor import Executor, ExecutorOpt
from sessiontools.cli.grouping import GroupByOpt, PerSessionOpt
from sessiontools.cli.inputs import exit_code_for, load_all, resolve_files, run_files
from sessiontools.cli.options import (
    EXIT_INPUT,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    RuleVersionOpt,
    StrictOpt,
    TableJson,
    check_leaf_options,
)
from sessiontools.cli.outputs import (
    check_output_path,
    emit_json,
    emit_renderables,
    resolve_format,
    stderr_console,
)
from sessiontools.cli.token_options import tokens_option
from sessiontools.errors import EXIT_INTERRUPTED, SessionToolsError, UsageError
from sessiontools.names import APP_HELP, CUT_RESERVE_HELP, RULE_VERSION_KEY

_app = typer.Typer(
    name="sessiontools",
    help=(f"{APP_HELP}\n\n"
          "Exit codes: 0 ok; 1 a --fail-if gate tripped; 2 bad usage; 3 no readable input; 70 a bug "
          "(report it). Each command's --help defines its terms; README.md has them all (Terms)."),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from sessiontools import __version__

        typer.echo(f"sessiontools {__version__}")
        raise typer.Exit(0)


@_app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version,
                                          is_eager=True)] = False,
) -> None:
    """Global options (see the app's help)."""


@_app.command()
def inspect(
    paths: PathsArg = None,
    format: Annotated[TableJson | None, typer.Option("--format", "-f", help="table (for people) or json (for machines); default: from the -o suffix, else table.")] = None,
    leaf: LeafOpt = None,
    all_leaves: AllLeavesOpt = False,
    strict: StrictOpt = False,
    output: OutputOpt = None,
    jobs: JobsOpt = None,
    executor: ExecutorOpt = Executor.processes,
    rule_version: RuleVersionOpt = None,
    per_session: PerSessionOpt = False,
    group_by: GroupByOpt = None,
) -> None:
    """What is in each session: format, counts, tree shape and leaf ids, compactions (also on other
    branches), usage, cost, problems; with several sessions, a table of them and their totals.

    Terms: a leaf is the last entry of a branch (pass its id to --leaf); a branch point has several
    children; "tok before" is the tokensBefore Pi recorded for a compaction.
    """
    from sessiontools.analysis.inspect import inspect_fn
    from sessiontools.report.inspect_summary import inspect_headline  # (no rich: the JSON run needs none)
    from sessiontools.report.writers import envelope

    check_leaf_options(leaf, all_leaves)
    format = resolve_format(format, output, TableJson)
    check_output_path(output)
    err = stderr_console()
    fn = inspect_fn(leaf=leaf, all_leaves=all_leaves, rule_version=rule_version.value if rule_version else None)
    reports, loaded = run_files(paths, err, fn, jobs, "inspecting", executor=executor)
    if format == TableJson.json:
        emit_json(envelope("inspect", sessions=reports), output)
    elif len(reports) > 1 and not per_session:  # a folder: totals per group, the largest sessions
        from sessiontools.report.folder import agent_of, session_groups
        from sessiontools.report.inspect_totals import inspect_folder_answer
        by = group_by.value if group_by else "agent"
        models = {r["path"]: max(r["models"], key=r["models"].get) if r["models"] else None for r in reports}
        groups = ({r["path"]: agent_of(r) for r in reports} if by == "agent" else
                  session_groups(by, [r["path"] for r in reports], models))
        emit_renderables([inspect_folder_answer(reports, groups, by)], output)
    elif len(reports) > 1:  # --per-session over a large folder: plain lines, streamed (not 1,000 rich tables)
        from sessiontools.report.inspect_totals import PLAIN_AFTER, PlainLines, inspect_plain_lines
        if len(reports) > PLAIN_AFTER:
            from sessiontools.cli.outputs import output_width
            from sessiontools.report.layout import DESIGN_WIDTH
            width = DESIGN_WIDTH if output else output_width()
            emit_renderables([PlainLines(inspect_plain_lines(reports, width))], output)
        else:
            from sessiontools.report.inspect import inspect_table, inspect_totals_table
            emit_renderables([*(inspect_table(r) for r in reports), inspect_totals_table(reports)], output)
    elif reports:
        from sessiontools.report.inspect import inspect_table, inspect_totals_table
        items = [inspect_table(r) for r in reports]
        if len(reports) > 1:
            items.append(inspect_totals_table(reports))
        emit_renderables(items, output)
    if reports:
        err.print(inspect_headline(reports), markup=False)
    raise typer.Exit(exit_code_for(loaded, strict))


@_app.command()
def cut(
    file: Annotated[Path, typer.Argument(readable=False, help="One session file (a directory or glob must name exactly one).")],
    at: Annotated[
        list[str] | None,
        typer.Option("--at", help="Entry id, or #N for the entry at path index N; repeatable (default: the leaf)."),
    ] = None,
    leaf: LeafOpt = None,
    keep_recent: Annotated[int, tokens_option("--keep-recent", help="keepRecentTokens.")] = 20000,
    reserve: Annotated[int, tokens_option("--reserve", help=CUT_RESERVE_HELP)] = DEFAULT_RESERVE_TOKENS,
    rule_version: RuleVersionOpt = None,
    format: Annotated[TableJson | None, typer.Option("--format", "-f", help="table or json; default: from the -o suffix, else table.")] = None,
    strict: StrictOpt = False,
    output: OutputOpt = None,
) -> None:
    """What Pi's prepareCompaction would keep and summarise if it compacted at each --at point.

    A split turn is a compaction that cuts inside a turn (its start is summarised separately).
    """
    from sessiontools.policies.registry import CUTTERS
    from sessiontools.report.cut import cut_table
    from sessiontools.report.writers import envelope

    format = resolve_format(format, output, TableJson)
    check_output_path(output)
    err = stderr_console()
    file = _one_file(file, err)
    loaded = load_all([file], err)
    if not loaded.sessions:
        raise typer.Exit(EXIT_INPUT)
    session = loaded.sessions[0]
    if not session.entries:
        raise UsageError(f"{file}: the session has no entries to cut")
    answer = CUTTERS[session.agent]()(session, at, leaf=leaf, reserve=reserve, keep_recent=keep_recent,
                                      rule_version=rule_version.value if rule_version else None)
    if answer.note:
        err.print(answer.note)
    if format == TableJson.json:
        emit_json(
            envelope(
                "cut",
                **{"session": str(file), RULE_VERSION_KEY: answer.rule_version,
                   "settings": {"reserve_tokens": reserve, "keep_recent_tokens": keep_recent}},
                recovered_lines=[d.to_dict() for d in session.recovered],
                cuts=answer.cuts,
            ),
            output,
        )
    else:
        emit_renderables([cut_table(answer.cuts, answer.spans)], output)
    raise typer.Exit(exit_code_for(loaded, strict))


def _one_file(file: Path, err: Any) -> Path:
    """`cut` answers for one session: a directory or glob that names several files is refused (exit 2)."""
    files, _ = resolve_files([file], err)
    if len(files) > 1:
        shown = ", ".join(f.name for f in files[:3]) + (", ..." if len(files) > 3 else "")
        raise UsageError(f"cut takes one session file; {file} names {len(files)} ({shown}): name one of them")
    return files[0]


#: The commands this module declares itself; every other `name` is declared by `cli/cmd_<name>.py`
#: (dashes as underscores) with `register(app)`, in this order (the order --help lists them in).
_OWN_COMMANDS = ("inspect", "cut")
_COMMAND_MODULES = ("diff-summaries", "estimate-error", "export", "replay", "report", "resummarize")
_registered: set[str] = set()


def _register(name: str) -> None:
    """Add the command `name` of `cli/cmd_<name>.py` to the app (once)."""
    if name in _registered:
        return
    import importlib

    importlib.import_module(f"{__name__}.cmd_{name.replace('-', '_')}").register(_app)
    _registered.add(name)


def _command_name(info: Any) -> str:
    return info.name or typer.main.get_command_name(info.callback.__name__)


def _register_command_modules() -> typer.Typer:
    """The whole app: every command module's command(s) added, listed in the order of --help."""
    for name in _COMMAND_MODULES:
        _register(name)
    order = [*_OWN_COMMANDS, *_COMMAND_MODULES]
    _app.registered_commands.sort(key=lambda info: order.index(_command_name(info)))
    return _app


def _app_for(args: list[str]) -> typer.Typer:
    """The app that runs `args`: with a command named first, an app of that one command (start-up
    pays for importing and declaring one command, not every one: issue 28); otherwise (--help,
    --version, a misspelt command) the whole app."""
    name = args[0] if args else None
    if name in _COMMAND_MODULES:
        _register(name)
    elif name not in _OWN_COMMANDS:
        return _register_command_modules()
    import copy

    one = copy.copy(_app)
    one.registered_commands = [c for c in _app.registered_commands if _command_name(c) == name]
    return one


def __getattr__(name: str) -> Any:
    """`sessiontools.cli.app`: the whole Typer app (every command registered)."""
    if name == "app":
        return _register_command_modules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _replace_unencodable() -> None:
    """stdout and stderr write what they cannot encode as "?": a lone surrogate, which Pi's entries keep
    as Pi does (Node writes them), is shown, never an encoding error at the last step."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a closed or detached stream
                pass


def _single_threaded_blas() -> None:
    """OpenBLAS (numpy's) starts one thread per core when numpy is imported, and they spin: about
    0.12 s of CPU per process on this 2-core machine, measured in `import numpy` alone (0.24 s -> 0.13 s),
    for matrices (the calibration fits: thousands of rows by a dozen features) that one thread
    solves as fast. A command's process and its workers use one unless the user chose otherwise;
    nothing changes once numpy is loaded (a library caller's own process)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: run the app, map library errors to exit codes, no tracebacks.

    The stderr console (rich) is made only when there is an error to print."""
    _single_threaded_blas()
    if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
        from sessiontools.read import parallel

        parallel.CONTAIN_ERRORS = False  # a file's unexpected exception shows its traceback
    _replace_unencodable()
    try:
        args = sys.argv[1:] if argv is None else list(argv)
        rv = _app_for(args)(args=argv, standalone_mode=False)
        if rv == EXIT_INTERRUPTED:  # Typer's answer to a KeyboardInterrupt (no command exits 130)
            _stop_dask_workers()
            stderr_console().print("interrupted", markup=False)
        return rv if isinstance(rv, int) else 0
    except SessionToolsError as exc:
        if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
            raise
        stderr_console().print(f"error: {exc}", markup=False)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # click's own exits
        return int(exc.code or 0)
    except KeyboardInterrupt:
        _stop_dask_workers()
        stderr_console().print("interrupted", markup=False)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an output or input the operating system refused: a file problem, not a bug
        if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        stderr_console().print(f"error: {where}{exc.strerror or exc}", markup=False)
        return EXIT_INPUT
    except Exception as exc:  # click's usage errors (Typer vendors click) and anything unexpected
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `sessiontools`: the help, not an error; exit 2
            typer.echo(exc.format_message())  # type: ignore[attr-defined]
            return 2
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            ctx = getattr(exc, "ctx", None)
            where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            stderr_console().print(f"error: {exc.format_message()}{where}", markup=False)  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":  # click's name for a KeyboardInterrupt
            _stop_dask_workers()
            stderr_console().print("interrupted", markup=False)
            return EXIT_INTERRUPTED
        if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
            raise
        stderr_console().print(f"internal error: {type(exc).__name__}: {exc} (set SESSIONTOOLS_DEBUG=1 for a traceback)", markup=False)
        return 70


def _stop_dask_workers() -> None:
    """A Ctrl-C that reached us outside `--executor dask`'s own loop (e.g. while a result was being
    printed) still stops a LocalCluster's workers at once (`executors.stop_local_cluster`)."""
    if "distributed" in sys.modules:
        from sessiontools.read.executors import stop_local_cluster

        stop_local_cluster()


def run() -> None:  # pragma: no cover
    sys.exit(main())
