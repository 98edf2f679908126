"""What a command reads: the session files its paths name (files, directories, globs, URLs; Pi's
session directory by default), read with their problems printed as they come, and the exit code
the reading earns (3 for no readable input, or any skipped line under `--strict`).

Imported at start-up by every command module, so the readers are imported where they are used.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontools.cli.diagnostics import print_diagnostics, print_skipped, print_unreadable, safe_text
from sessiontools.cli.options import EXIT_INPUT, EXIT_OK
from sessiontools.cli.progress import progress  # noqa: F401 (the one progress display; re-exported)
from sessiontools.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontools.read import Session


class Loaded:
    """Sessions read from the command line's paths, with the worst problem seen."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []
        self.processed = 0
        self.unreadable = 0
        self.lines_skipped_or_recovered = 0
        #: With `run_files(..., content_hash=FULL_DIGEST)`: the sha256 of each value's file, in the
        #: order of the values (from the read that made it).
        self.digests: list[str] = []


def agent_home() -> Path:
    """The directory of the agent whose files are read by default (`read.sources.DEFAULT_HOME`: its
    variable, e.g. `$PI_CODING_AGENT_DIR`, else its directory below the user's home)."""
    from sessiontools.read.sources import DEFAULT_HOME

    env = os.environ.get(DEFAULT_HOME.env)
    return Path(env).expanduser() if env else Path.home() / DEFAULT_HOME.default


def default_session_dir() -> Path:
    """The default agent's session directory (Pi's: `$PI_CODING_AGENT_DIR/sessions`, else
    `~/.pi/agent/sessions`)."""
    from sessiontools.read.sources import DEFAULT_HOME

    return agent_home() / DEFAULT_HOME.sessions


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
    from sessiontools.read.sources import DEFAULT_HOME, expand_sources

    given = list(paths or [])
    default = not given
    if default:
        d = default_session_dir()
        if not d.is_dir():
            raise InputError(f"no path given and {DEFAULT_HOME.name}'s session directory {d} does not exist; "
                             "name session files or directories")
        err.print(safe_text(f"reading {DEFAULT_HOME.name}'s session directory {d}"))
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
        where = f"{DEFAULT_HOME.name}'s session directory {given[0]}" if default else ", ".join(str(p) for p in given)
        raise InputError(f"no session files (*.jsonl) found in {where}")
    return files, explicit


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
            from sessiontools.read import parallel

            if not parallel.CONTAIN_ERRORS:
                raise
            err.print(safe_text(f"error: {parallel.internal_error(str(f), exc)}"))
            loaded.unreadable += 1
            continue
        if not getattr(s, "readable", True):  # another agent's reader has no `readable`: it raises instead
            fatal = getattr(s, "fatal", [])
            if print_unreadable(err, f, fatal[0] if fatal else None, f in explicit):
                loaded.unreadable += 1
            continue
        reason = skip(s) if skip is not None else None
        if reason is not None:
            print_skipped(err, f, reason)
            continue
        print_diagnostics(err, list(s.diagnostics), s.path)
        loaded.lines_skipped_or_recovered += len(getattr(s, "skipped", ())) + len(getattr(s, "recovered", ()))
        loaded.sessions.append(s)
    return loaded


def run_files(paths: Iterable[str | os.PathLike[str]] | None, err: Console, fn: Any, jobs: int | None,
              label: str, *, content_hash: bool | str = False, agents: Any = None,
              executor: Any = None) -> tuple[list[Any], Loaded]:
    """`fn(session)` over every file (in processes when jobs > 1, on Dask with `executor` dask),
    diagnostics reported as files finish.

    Returns the values in file order and a `Loaded` summary (its `sessions` stay empty: sessions are
    not kept in memory).
    """
    from sessiontools.cli.executor import dask_cluster
    from sessiontools.cli.limits import max_file_bytes, max_line_bytes
    from sessiontools.read.parallel import ALL_AGENTS, default_jobs, map_sessions

    agents = ALL_AGENTS if agents is None else frozenset(agents)

    loaded = Loaded()
    limits = {"max_bytes": max_file_bytes(), "max_line_bytes": max_line_bytes()}  # (a bad value: exit 2 first)
    files, explicit = resolve_files(paths, err)
    values = []
    notes_seen: set[str] = set()
    dask = dask_cluster(executor, jobs, files)
    with progress(err, len(files), label) as advance:
        for res in map_sessions(files, fn, jobs=jobs or default_jobs(files, fn), content_hash=content_hash,
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
                fatal = next((d for d in res.diagnostics if d.kind == "fatal"), None)
                if print_unreadable(err, p, fatal, p in explicit):
                    loaded.unreadable += 1
                continue
            print_diagnostics(err, res.diagnostics, p)
            if res.unsupported:
                print_skipped(err, p, f"a {res.agent} session (this command reads {', '.join(sorted(agents))} sessions)")
                continue
            if res.error is not None:
                err.print(safe_text(f"error: {res.error}"))
                loaded.unreadable += 1
                continue
            loaded.lines_skipped_or_recovered += res.skipped_or_recovered
            loaded.processed += 1
            values.append(res.value)
            loaded.digests.append(res.content_digest)
    return values, loaded


def exit_code_for(loaded: Loaded, strict: bool) -> int:
    if not loaded.sessions and not loaded.processed:
        return EXIT_INPUT
    if loaded.unreadable:
        return EXIT_INPUT
    if strict and loaded.lines_skipped_or_recovered:
        return EXIT_INPUT
    return EXIT_OK
