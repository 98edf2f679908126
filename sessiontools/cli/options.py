"""The options and exit codes every command shares: Typer option types and format choices.

Every command module imports this at start-up (to declare its options), so it imports only typer
(and `names`, which imports nothing).
Token-count options are in `cli.token_options`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sessiontools.errors import UsageError
from sessiontools.names import LEAF_HELP, PATHS_HELP, RULE_VERSION_HELP, RULE_VERSION_OPTION

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


class RuleVersion(str, Enum):
    """The version of its agent's rules a file is read as (`names.RULE_VERSION_OPTION`)."""

    v0 = "0"
    v1 = "1"


LeafOpt = Annotated[str | None, typer.Option("--leaf", help=LEAF_HELP)]
AllLeavesOpt = Annotated[bool, typer.Option("--all-leaves", help="Analyse every branch (one path per leaf).")]
RuleVersionOpt = Annotated[
    RuleVersion | None,
    typer.Option(RULE_VERSION_OPTION, help=RULE_VERSION_HELP),
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Exit 3 when any line was skipped or recovered.")]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here instead of stdout.")]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Processes to spread files over (default: one per 32 MB of input, 56 MB for inspect over files cheaper per byte to read, at most the number of cores). Results are the same for any value.")]
PathsArg = Annotated[list[Path] | None, typer.Argument(readable=False, help=PATHS_HELP)]


def check_leaf_options(leaf: str | None, all_leaves: bool) -> None:
    if leaf and all_leaves:
        raise UsageError("--leaf and --all-leaves cannot be used together")
