"""Shared CLI plumbing: option types, consoles, loading with diagnostics, output.

Every command module imports this at start-up (to declare its options), so it imports nothing heavy
at module level: rich, the readers and the report code are imported where they are used.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sessiontools.cli.token_options import parse_token_list, parse_tokens, tokens_option  # noqa: F401 (re-exported)
from sessiontools.errors import InputError, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontools.read import Session

#: Exit codes (documented in README.md).
EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INPUT = 0, 1, 2, 3

MAX_DIAGNOSTICS_SHOWN = 20


def safe_text(s: object) -> Any:
    """`report.text.safe_text` (a rich Text, never parsed as markup), imported on first use."""
    from sessiontools.report.text import safe_text as text

    return text(s)


class TableJson(str, Enum):
    table = "table"
    json = "json"


class TableFormat(str, Enum):
    """Output formats of commands whose rows also go to CSV/Parquet (from one polars DataFrame)."""

    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


class PiVersion(str, Enum):
    v0 = "0"
    v1 = "1"


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def output_width() -> int:
    """Width tables are laid out for: `COLUMNS`, else the terminal's, else 100 (a pipe or a file)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size((100, 24)).columns
    from sessiontools.report.layout import DESIGN_WIDTH

    return DESIGN_WIDTH


def stdout_console(file: Any = None) -> Console:
    from rich.console import Console

    return Console(file=file, highlight=False, width=output_width())


LeafOpt = Annotated[str | None, typer.Option("--leaf", help="Analyse the path ending at this entry id (default: the last entry, as Pi resumes).")]
AllLeavesOpt = Annotated[bool, typer.Option("--all-leaves", help="Analyse every branch (one path per leaf).")]
PiVersionOpt = Annotated[
    PiVersion | None,
    typer.Option("--pi-version", help="Read as Pi 0.x or 1.x (default: 1 if the file uses any 1.x-only feature, else 0)."),
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Exit 3 when any line was skipped or recovered.")]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here instead of stdout.")]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Processes to spread files over (default: one per 32 MB of input, at most the number of cores). Results are the same for any value.")]
PathsArg = Annotated[list[Path] | None, typer.Argument(readable=False, help="Session files, directories (every *.jsonl below) or globs; default: Pi's session directory.")]


def __getattr__(name: str) -> Any:
    """`PI_ONLY`: commands that do not read other agents' transcripts yet pass it to `run_files`
    (made on first use: the readers are not imported at start-up)."""
    if name == "PI_ONLY":
        from sessiontools.read.agents import Agent

        globals()[name] = value = frozenset({Agent.PI})
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Loaded:
    """Sessions read from the command line's paths, with the worst problem seen."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []
        self.processed = 0
        self.unreadable = 0
        self.lines_skipped_or_recovered = 0


def report_diagnostics(err: Console, session: Session) -> None:
    """One line per problem on stderr, `file:line: reason`, at most MAX_DIAGNOSTICS_SHOWN per file."""
    diags = [d for d in session.diagnostics]
    for d in diags[:MAX_DIAGNOSTICS_SHOWN]:
        label = {"skipped": "skipped", "recovered": "recovered", "fatal": "error", "notice": "note"}[d.kind]
        err.print(safe_text(f"{label}: {d}"))
    if len(diags) > MAX_DIAGNOSTICS_SHOWN:
        err.print(safe_text(f"... and {len(diags) - MAX_DIAGNOSTICS_SHOWN} more for {session.path} (see --format json)"))


def default_session_dir() -> Path:
    """Pi's session directory: `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`."""
    agent = os.environ.get("PI_CODING_AGENT_DIR")
    base = Path(agent).expanduser() if agent else Path.home() / ".pi" / "agent"
    return base / "sessions"


def token_cache_path() -> Path:
    """`$SESSIONTOOLS_CACHE_DIR`, else `$XDG_CACHE_HOME/sessiontools`, else `~/.cache/sessiontools`, + tokens.sqlite."""
    base = os.environ.get("SESSIONTOOLS_CACHE_DIR")
    if base:
        return Path(base).expanduser() / "tokens.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "sessiontools" / "tokens.sqlite"


def resolve_files(paths: Iterable[str | os.PathLike[str]] | None, err: Console) -> tuple[list[Path], set[Path]]:
    """The session files to read, and which of them were named explicitly (not found in a directory).

    With no path at all, Pi's own session directory is read.
    """
    from sessiontools.read.remote import is_url, url_exists, url_of
    from sessiontools.read.sources import expand_sources

    given = list(paths or [])
    default = not given
    if default:
        d = default_session_dir()
        if not d.is_dir():
            raise InputError(f"no path given and Pi's session directory {d} does not exist; "
                             "name session files or directories")
        err.print(safe_text(f"reading Pi's session directory {d}"))
        given = [d]
    for p in given:
        if is_url(p):
            if not url_exists(url_of(p) or ""):
                raise InputError(f"{url_of(p)}: no such file or directory")
        elif not Path(p).exists() and not glob.has_magic(os.fspath(p)):
            raise InputError(f"{p}: no such file or directory")
    given = [url_of(p) or p for p in given]  # a Path folds the `//` of a URL
    explicit = {Path(p) for p in given if not Path(p).is_dir()}
    files = list(expand_sources(given))
    if not files:
        where = f"Pi's session directory {given[0]}" if default else ", ".join(str(p) for p in given)
        raise InputError(f"no session files (*.jsonl) found in {where}")
    return files, explicit


def _not_a_session(why: str) -> str:
    return why if "Pi session" in why else f"not a Pi session ({why})"


def load_all(paths: Iterable[str | os.PathLike[str]] | None, err: Console, *, any_agent: bool = False,
             skip: Any = None) -> Loaded:
    """Read every session named (files, directories, globs); report problems; never stop early.

    A file found in a directory that is not a Pi session is skipped with a note; a file named
    explicitly that cannot be read makes the exit code 3. `any_agent`: read each file with its
    agent's reader; `skip(session)`: a reason to leave a readable session out (said in a note), or None.
    """
    from sessiontools.read import load_session
    from sessiontools.read.sources import load_source

    loaded = Loaded()
    files, explicit = resolve_files(paths, err)
    for f in files:
        try:
            s = load_source(f) if any_agent else load_session(f)
        except InputError as exc:
            err.print(safe_text(f"error: {exc}"))
            loaded.unreadable += 1
            continue
        except Exception as exc:  # a bug on this file: named, and the others are still read
            from sessiontools import parallel

            if not parallel.CONTAIN_ERRORS:
                raise
            err.print(safe_text(f"error: {parallel.internal_error(str(f), exc)}"))
            loaded.unreadable += 1
            continue
        if not getattr(s, "readable", True):  # another agent's reader has no `readable`: it raises instead
            fatal = getattr(s, "fatal", [])
            why = fatal[0].reason if fatal else "empty"
            if f not in explicit:
                err.print(safe_text(f"note: {f}: skipped, {_not_a_session(why)}"))
            else:
                where = f"{fatal[0].path}:{fatal[0].line}" if fatal else str(f)
                err.print(safe_text(f"error: {where}: {_not_a_session(why)}"))
                loaded.unreadable += 1
            continue
        reason = skip(s) if skip is not None else None
        if reason is not None:
            err.print(safe_text(f"note: {f}: skipped, {reason}"))
            continue
        report_diagnostics(err, s)
        loaded.lines_skipped_or_recovered += len(getattr(s, "skipped", ())) + len(getattr(s, "recovered", ()))
        loaded.sessions.append(s)
    return loaded


def run_files(paths: Iterable[str | os.PathLike[str]] | None, err: Console, fn: Any, jobs: int | None,
              label: str, *, content_hash: bool = False, agents: Any = None,
              executor: Any = None) -> tuple[list[Any], Loaded]:
    """`fn(session)` over every file (in processes when jobs > 1, on Dask with `executor` dask),
    diagnostics reported as files finish.

    Returns the values in file order and a `Loaded` summary (its `sessions` stay empty: sessions are
    not kept in memory).
    """
    from sessiontools.cli.executor import dask_cluster
    from sessiontools.cli.limits import max_file_bytes, max_line_bytes
    from sessiontools.parallel import ALL_AGENTS, default_jobs, map_sessions

    agents = ALL_AGENTS if agents is None else frozenset(agents)

    loaded = Loaded()
    limits = {"max_bytes": max_file_bytes(), "max_line_bytes": max_line_bytes()}  # (a bad value: exit 2 first)
    files, explicit = resolve_files(paths, err)
    values = []
    notes_seen: set[str] = set()
    dask = dask_cluster(executor, jobs, files)
    with progress(err, len(files), label) as advance:
        for res in map_sessions(files, fn, jobs=jobs or default_jobs(files), content_hash=content_hash,
                                agents=agents, dask=dask, on_done=advance, **limits):
            if dask is None:  # on Dask the bar follows the cluster's futures (on_done)
                advance()
            for note in res.notes:  # from this process or a --jobs worker; each shown once
                if note not in notes_seen:
                    notes_seen.add(note)
                    err.print(safe_text(f"note: {note}"))
            p = Path(res.path)
            if res.error is not None and not res.readable:
                err.print(safe_text(f"error: {res.error}"))
                loaded.unreadable += 1
                continue
            if not res.readable:
                why = next((d.reason for d in res.diagnostics if d.kind == "fatal"), "empty")
                if p not in explicit:
                    err.print(safe_text(f"note: {p}: skipped, {_not_a_session(why)}"))
                else:
                    fatal = next((d for d in res.diagnostics if d.kind == "fatal"), None)
                    where = f"{fatal.path}:{fatal.line}" if fatal is not None else str(p)
                    err.print(safe_text(f"error: {where}: {_not_a_session(why)}"))
                    loaded.unreadable += 1
                continue
            for d in res.diagnostics[:MAX_DIAGNOSTICS_SHOWN]:
                label_ = {"skipped": "skipped", "recovered": "recovered", "fatal": "error", "notice": "note"}[d.kind]
                err.print(safe_text(f"{label_}: {d}"))
            if len(res.diagnostics) > MAX_DIAGNOSTICS_SHOWN:
                err.print(safe_text(f"... and {len(res.diagnostics) - MAX_DIAGNOSTICS_SHOWN} more for {p}"))
            if not res.readable:
                loaded.unreadable += 1
                continue
            if res.unsupported:
                err.print(safe_text(f"note: {p}: skipped, a {res.agent} session (this command reads "
                                    f"{', '.join(sorted(agents))} sessions)"))
                continue
            if res.error is not None:
                err.print(safe_text(f"error: {res.error}"))
                loaded.unreadable += 1
                continue
            loaded.lines_skipped_or_recovered += res.skipped_or_recovered
            loaded.processed += 1
            values.append(res.value)
    return values, loaded


def exit_code_for(loaded: Loaded, strict: bool) -> int:
    if not loaded.sessions and not loaded.processed:
        return EXIT_INPUT
    if loaded.unreadable:
        return EXIT_INPUT
    if strict and loaded.lines_skipped_or_recovered:
        return EXIT_INPUT
    return EXIT_OK


def emit_json(obj: Any, output: Path | None) -> None:
    from sessiontools.report.writers import dumps_json, write_atomic

    data = dumps_json(obj)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_atomic(output, data)
        wrote(output)


def wrote(path: Path, what: str = "") -> None:
    """`wrote FILE` on stderr after a file was written (-o, --plot, --save-calibration)."""
    stderr_console().print(safe_text(f"wrote {path}{f' ({what})' if what else ''}"))


def emit_renderables(items: Iterator[Any] | list[Any], output: Path | None) -> None:
    from rich.console import Console
    from rich.text import Text

    from sessiontools.report.layout import DESIGN_WIDTH

    if output is None:
        con = stdout_console()
        for it in items:
            con.print(it, soft_wrap=isinstance(it, Text))  # a line of text (a long path) is never folded
    else:
        from sessiontools.report.writers import atomic_open

        with atomic_open(output, "w") as fh:
            con = Console(file=fh, width=DESIGN_WIDTH, no_color=True, highlight=False)
            for it in items:
                con.print(it, soft_wrap=isinstance(it, Text))
        wrote(output)


def check_leaf_options(leaf: str | None, all_leaves: bool) -> None:
    if leaf and all_leaves:
        raise UsageError("--leaf and --all-leaves cannot be used together")


class _Progress:
    def __init__(self, err: Console, total: int, label: str) -> None:
        self.err, self.total, self.label = err, total, label
        self.bar = None

    def __enter__(self):  # type: ignore[no-untyped-def]
        if self.total > 1 and self.err.is_terminal:  # a bar drawn into a pipe leaves a blank line
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                console=self.err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total)
        return self.advance

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def progress(err: Console, total: int, label: str) -> _Progress:
    """A transient progress bar on stderr when there is more than one item; `with ... as advance`."""
    return _Progress(err, total, label)


def write_frame(frame: Any, fmt: str, output: Path | None) -> None:
    """CSV (stdout or file) or Parquet (file) from a polars DataFrame."""
    from sessiontools.report.writers import frame_bytes, write_atomic

    if fmt == "parquet":
        if output is None:
            raise UsageError("--format parquet needs --output PATH")
        write_atomic(output, frame_bytes(frame, "parquet"))
        wrote(output)
    elif output is None:
        sys.stdout.write(frame_bytes(frame, "csv").decode("utf-8"))
    else:
        write_atomic(output, frame_bytes(frame, "csv"))
        wrote(output)


def save_figure(fig: Any, path: Path) -> None:
    """Write a figure through the one figure writer (`report.figures`, reproducible bytes) and say so."""
    from sessiontools.report.figures import save_figure as write_figure

    write_figure(fig, path)
    wrote(path)



# --------------------------------------------------------------------------- early validation


def check_output_path(path: Path | None, option: str = "--output") -> None:
    """Refuse, before any work, an output path whose folder is missing or that is a directory (exit 2)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {parent} is not writable")


def check_plot_path(path: Path | None) -> str:
    """`.png` or `.svg` (returned), checked before the run; anything else is refused (exit 2)."""
    if path is None:
        return ""
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise UsageError(f"--plot {path}: use a .png or .svg file name")
    check_output_path(path, "--plot")
    return suffix


_SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".md": "markdown"}


#: Suffixes a text table may be written to (besides none at all).
_TEXT_SUFFIXES = {"", ".txt", ".text", ".log", ".out"}


def _check_text_suffix(output: Path | None, names: set[str]) -> None:
    """A table goes to a text file: `-o r.xlsx` would be a text table in a file that claims to be a
    spreadsheet, so an unknown suffix is refused (exit 2)."""
    if output is None or output.suffix.lower() in _TEXT_SUFFIXES:
        return
    by = {"json": ".json", "csv": ".csv", "parquet": ".parquet", "markdown": ".md"}
    known = ", ".join(f"{n} ({by[n]})" for n in sorted(names) if n in by)
    raise UsageError(f"--output {output}: cannot write {output.suffix} files; a table goes to .txt (or no suffix)"
                     + (f"; other formats: {known}" if known else ""))


def resolve_format(fmt: Any, output: Path | None, allowed: type[Enum]) -> Any:
    """The format asked for, else the one the `-o` file's suffix names (out.csv -> csv), else table.

    An explicit format that contradicts the suffix (`--format table -o out.csv`) is refused (exit 2).
    """
    by_suffix = _SUFFIX_FORMATS.get(output.suffix.lower()) if output is not None else None
    names = {m.value for m in allowed}  # type: ignore[attr-defined]
    if fmt is None:
        if by_suffix is None:
            _check_text_suffix(output, names)
            return allowed("table")
        if by_suffix not in names:
            raise UsageError(f"--output {output}: this command does not write {by_suffix}; "
                             f"formats: {', '.join(sorted(names))}")
        return allowed(by_suffix)
    value = fmt.value if isinstance(fmt, Enum) else str(fmt)
    if value == "table" and by_suffix is None:
        _check_text_suffix(output, names)
    if by_suffix is not None and by_suffix != value and not (value == "table" and by_suffix == "markdown"):
        raise UsageError(f"--format {value} with --output {output}: the suffix says {by_suffix}; "
                         "use a matching file name or drop --format")
    return fmt
