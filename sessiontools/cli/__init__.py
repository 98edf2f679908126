"""The `sessiontools` command line: thin Typer commands over the library.

Each command parses its options, makes one library call, and renders. One handler turns
`SessionToolsError` into a one-line message and its exit code; `SESSIONTOOLS_DEBUG=1` re-raises.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from ..compaction.settings import DEFAULT_RESERVE_TOKENS, CompactionSettings
from ..errors import SessionToolsError, UsageError
from ..report.writers import envelope
from .common import (
    EXIT_INPUT,
    AllLeavesOpt,
    JobsOpt,
    LeafOpt,
    OutputOpt,
    PathsArg,
    PiVersionOpt,
    StrictOpt,
    TableJson,
    check_leaf_options,
    emit_json,
    emit_renderables,
    exit_code_for,
    load_all,
    run_files,
    stderr_console,
)

app = typer.Typer(
    name="sessiontools",
    help="Analyse and replay Pi coding-agent session files: compaction, token estimates, summary drift.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)


@app.command()
def inspect(
    paths: PathsArg = None,
    format: Annotated[TableJson, typer.Option("--format", "-f", help="table (for people) or json (for machines).")] = TableJson.table,
    leaf: LeafOpt = None,
    all_leaves: AllLeavesOpt = False,
    strict: StrictOpt = False,
    output: OutputOpt = None,
    jobs: JobsOpt = None,
    pi_version: PiVersionOpt = None,
) -> None:
    """What is in each session: format, counts, tree shape, compactions, usage, cost, problems."""
    from ..analysis.inspect import inspect_session  # imported here, not at start-up
    from ..report.inspect import inspect_table

    check_leaf_options(leaf, all_leaves)
    err = stderr_console()
    fn = partial(inspect_session, leaf=leaf, all_leaves=all_leaves, pi_version=pi_version.value if pi_version else None)
    reports, loaded = run_files(paths, err, fn, jobs, "inspecting")
    if format == TableJson.json:
        emit_json(envelope("inspect", sessions=reports), output)
    else:
        emit_renderables([inspect_table(r) for r in reports], output)
    raise typer.Exit(exit_code_for(loaded, strict))


@app.command()
def cut(
    file: Annotated[Path, typer.Argument(help="One session file.")],
    at: Annotated[
        list[str] | None,
        typer.Option("--at", help="Entry id, or #N for the entry at path index N; repeatable (default: the leaf)."),
    ] = None,
    leaf: LeafOpt = None,
    keep_recent: Annotated[int, typer.Option("--keep-recent", min=0, help="keepRecentTokens.")] = 20000,
    reserve: Annotated[int, typer.Option("--reserve", min=0, help="reserveTokens (kept in the settings Pi passes).")] = DEFAULT_RESERVE_TOKENS,
    pi_version: PiVersionOpt = None,
    format: Annotated[TableJson, typer.Option("--format", "-f")] = TableJson.table,
    strict: StrictOpt = False,
    output: OutputOpt = None,
) -> None:
    """What Pi's prepareCompaction would keep and summarise if it compacted at each --at point."""
    from ..analysis.cut import cut_session, kept_span  # imported here, not at start-up
    from ..report.cut import cut_table

    err = stderr_console()
    loaded = load_all([file], err)
    if not loaded.sessions:
        raise typer.Exit(EXIT_INPUT)
    session = loaded.sessions[0]
    if not session.entries:
        raise UsageError(f"{file}: the session has no entries to cut")
    settings = CompactionSettings(True, reserve, keep_recent)
    cuts, path = cut_session(session, at, leaf=leaf, settings=settings, pi_version=pi_version.value if pi_version else None)
    if session.has_lines_pi_drops:
        err.print("note: this file has lines Pi's own reader drops (recovered here); Pi's cut would differ")
    if format == TableJson.json:
        emit_json(
            envelope(
                "cut",
                session=str(file),
                pi_version=pi_version.value if pi_version else session.pi_version,
                settings={"reserve_tokens": reserve, "keep_recent_tokens": keep_recent},
                recovered_lines=[d.to_dict() for d in session.recovered],
                cuts=cuts,
            ),
            output,
        )
    else:
        emit_renderables([cut_table(cuts, [kept_span(path, c) for c in cuts])], output)
    raise typer.Exit(exit_code_for(loaded, strict))


def _register_command_modules() -> None:
    """Each `cli/cmd_<name>.py` module adds its command(s) with `register(app)`."""
    import importlib
    import pkgutil

    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_")):
        importlib.import_module(f"{__name__}.{mod}").register(app)


_register_command_modules()


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: run the app, map library errors to exit codes, no tracebacks."""
    err = stderr_console()
    try:
        rv = app(args=argv, standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except SessionToolsError as exc:
        if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
            raise
        err.print(f"error: {exc}", markup=False)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # click's own exits
        return int(exc.code or 0)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # click's usage errors (Typer vendors click) and anything unexpected
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if type(exc).__name__ == "Abort":
            return 130
        if os.environ.get("SESSIONTOOLS_DEBUG") == "1":
            raise
        err.print(f"internal error: {type(exc).__name__}: {exc} (set SESSIONTOOLS_DEBUG=1 for a traceback)", markup=False)
        return 70


def run() -> None:  # pragma: no cover
    sys.exit(main())
