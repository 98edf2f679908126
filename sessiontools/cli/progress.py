"""Progress on stderr, on a terminal only (never in a pipe or a CI log): the one progress display.

- `progress(err, total, label)`: a counted phase (reading, replaying, tokenizing, summarising files
  or requests): label, bar, `done/total`, the rate (items per second) and the elapsed time;
- `phase(err, label)`: a phase without a count (fitting, rendering, writing): a spinner, the label
  and the elapsed time, so a long step is never silent;
- `stage(name)`: a prefix for every label inside it (`report` reads each file once, then fits and
  renders, and says each is the report's: "report: reading the files (every section)", "report:
  fitting priors; ...");
- `shown_on(console)`: draw the progress there, whatever console a pass was given (a pass whose
  notes are swallowed still shows its progress).

Everything is transient (erased when done) and drawn only when the console is a terminal: the same
command in a pipe prints exactly what it prints without this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

_TARGET: ContextVar[Console | None] = ContextVar("sessiontools_progress_target", default=None)
_PREFIX: ContextVar[str] = ContextVar("sessiontools_progress_prefix", default="")


def _console(err: Console) -> Console:
    return _TARGET.get() or err


def _rich(con: Console) -> Console:
    """What rich's Progress draws on (a `cli.console.StderrConsole`'s rich console)."""
    from sessiontools.cli.console import real_console

    return real_console(con)  # type: ignore[no-any-return]


def _label(label: str) -> str:
    prefix = _PREFIX.get()
    return f"{prefix}: {label}" if prefix else label


def _rate_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second of a counted phase ("12.5/s"), blank until it is known."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")

    return RateColumn()


class Bar:
    """A counted phase; `with progress(...) as advance: ... advance()`."""

    def __init__(self, err: Console, total: int, label: str) -> None:
        self.err, self.total, self.label = _console(err), total, _label(label)
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[], None]:
        if self.total > 1 and self.err.is_terminal:  # a bar drawn into a pipe leaves a blank line
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _rate_column(),
                                TimeElapsedColumn(), console=_rich(self.err), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total)
        return self.advance

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def progress(err: Console, total: int, label: str) -> Bar:
    """A transient counted bar on stderr when there is more than one item; `with ... as advance`."""
    return Bar(err, total, label)


@contextmanager
def phase(err: Console, label: str) -> Iterator[None]:
    """A transient spinner with the elapsed time while an uncounted step runs (terminal only)."""
    con = _console(err)
    if not con.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=_rich(con), transient=True)
    bar.start()
    bar.add_task(_label(label), total=None)
    try:
        yield
    finally:
        bar.stop()


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Prefix every progress label inside with `name`."""
    token = _PREFIX.set(name)
    try:
        yield
    finally:
        _PREFIX.reset(token)


@contextmanager
def shown_on(console: Console) -> Iterator[None]:
    """Draw every progress display inside on `console`."""
    token = _TARGET.set(console)
    try:
        yield
    finally:
        _TARGET.reset(token)


__all__ = ["Bar", "phase", "progress", "shown_on", "stage"]
