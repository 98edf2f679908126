"""The options and exit codes every command shares: Typer option types and format choices.

Every command module imports this at start-up (to declare its options), so it imports only typer.
Token-count options are in `cli.token_options`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.errors import UsageError

#: Exit codes (documented in README.md).
EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INPUT = 0, 1, 2, 3


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


def check_leaf_options(leaf: str | None, all_leaves: bool) -> None:
    if leaf and all_leaves:
        raise UsageError("--leaf and --all-leaves cannot be used together")
