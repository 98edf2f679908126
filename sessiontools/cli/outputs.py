"""Where a command's output goes: consoles, the format (`--format`, else the `-o` suffix), JSON,
rich renderables, CSV/Parquet frames and figures, each file written atomically and announced on
stderr; and the early checks of `-o`/`--plot` paths (exit 2 before any work).

Imported at start-up by every command module, so rich and the report code are imported where used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontools.cli.diagnostics import safe_text
from sessiontools.cli.progress import phase
from sessiontools.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console


def stderr_console() -> Console:
    """The stderr console (`cli.console.StderrConsole`: rich's Console, made when first needed)."""
    from sessiontools.cli.console import StderrConsole

    return StderrConsole()  # type: ignore[return-value]


def output_width() -> int:
    """Width tables are laid out for: `COLUMNS`, else the terminal's, else 100 (a pipe or a file)."""
    from sessiontools.read.values import number_text

    cols = number_text(os.environ.get("COLUMNS"), int)
    if cols is not None and cols > 0:
        return cols
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size((100, 24)).columns
    from sessiontools.report.layout import DESIGN_WIDTH

    return DESIGN_WIDTH


def stdout_console(file: Any = None) -> Console:
    from rich.console import Console

    return Console(file=file, highlight=False, width=output_width())


def emit_json(obj: Any, output: Path | None) -> None:
    from sessiontools.report.writers import dumps_json, write_atomic

    with phase(stderr_console(), "rendering JSON"):
        data = dumps_json(obj)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        with phase(stderr_console(), f"writing {output.name}"):
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
        # On the same terminal the table appearing is the progress (a spinner would draw into it);
        # into a pipe or a file, a spinner on stderr says the table is being drawn.
        with phase(stderr_console(), "rendering") if not con.is_terminal else nullcontext():
            for it in items:
                con.print(it, soft_wrap=isinstance(it, Text))  # a line of text (a long path) is never folded
    else:
        from sessiontools.report.writers import atomic_open

        with phase(stderr_console(), f"rendering {output.name}"), atomic_open(output, "w") as fh:
            con = Console(file=fh, width=DESIGN_WIDTH, no_color=True, highlight=False)
            for it in items:
                con.print(it, soft_wrap=isinstance(it, Text))
        wrote(output)


def write_frame(frame: Any, fmt: str, output: Path | None) -> None:
    """CSV (stdout or file) or Parquet (file) from a polars DataFrame."""
    from sessiontools.report.writers import frame_bytes, write_atomic

    if fmt == "parquet":
        if output is None:
            raise UsageError("--format parquet needs --output PATH")
        with phase(stderr_console(), f"writing {output.name}"):
            write_atomic(output, frame_bytes(frame, "parquet"))
        wrote(output)
    elif output is None:
        sys.stdout.write(frame_bytes(frame, "csv").decode("utf-8"))
    else:
        with phase(stderr_console(), f"writing {output.name}"):
            write_atomic(output, frame_bytes(frame, "csv"))
        wrote(output)


def save_figure(fig: Any, path: Path) -> None:
    """Write a figure through the one figure writer (`report.figures`, reproducible bytes) and say so."""
    from sessiontools.report.figures import save_figure as write_figure

    with phase(stderr_console(), f"drawing {path.name}"):
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
