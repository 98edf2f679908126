"""The one printer of input problems on stderr: `file:line: reason` per diagnostic, the line for a
file that is not a readable session (a note when it was found in a folder, an error when named), and
the note for a file left out (tests/cli/test_one_diagnostics_printer.py keeps every command to these)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from sessiontools.read.diagnostics import Diagnostic

#: At most this many diagnostics are printed per file (the rest are counted in one line).
MAX_DIAGNOSTICS_SHOWN = 20

_LABELS = {"skipped": "skipped", "recovered": "recovered", "fatal": "error", "notice": "note"}


def safe_text(s: object) -> Any:
    """A line for `err.print`: `report.text.safe_text(s)` (a rich Text, never parsed as markup) when
    printed on a rich console, written as it is by `cli.console.StderrConsole` when plain (no rich)."""
    from sessiontools.cli.console import SafeLine

    return SafeLine(str(s))


def print_diagnostics(err: Console, diagnostics: Sequence[Diagnostic], path: object) -> None:
    """One line per problem, `kind: file:line: reason`, at most MAX_DIAGNOSTICS_SHOWN per file."""
    for d in diagnostics[:MAX_DIAGNOSTICS_SHOWN]:
        err.print(safe_text(f"{_LABELS[d.kind]}: {d}"))
    if len(diagnostics) > MAX_DIAGNOSTICS_SHOWN:
        err.print(safe_text(f"... and {len(diagnostics) - MAX_DIAGNOSTICS_SHOWN} more for {path}"))


def _not_a_session(why: str) -> str:
    from sessiontools.read.sources import unreadable_reason

    return unreadable_reason(why)


def print_skipped(err: Console, path: object, reason: str) -> None:
    """A file left out with its reason (not a session, another agent's, a command's own rule)."""
    err.print(safe_text(f"note: {path}: skipped, {reason}"))


def print_unreadable(err: Console, path: Path, fatal: Diagnostic | None, explicit: bool) -> bool:
    """A file that is not a readable session: a note when it was found in a folder (skipped), an error
    at its first fatal line when it was named. Returns whether it counts as unreadable (exit 3)."""
    why = fatal.reason if fatal is not None else "empty"
    if not explicit:
        print_skipped(err, path, _not_a_session(why))
        return False
    where = f"{fatal.path}:{fatal.line}" if fatal is not None else str(path)
    err.print(safe_text(f"error: {where}: {_not_a_session(why)}"))
    return True
