"""`--group-by` and `--per-session`: the two options every folder answer takes (inspect, replay,
estimate-error, diff-summaries), declared once."""

from enum import Enum
from typing import Annotated

import typer

from sessiontools.names import GROUP_BY

GroupBy = Enum("GroupBy", {g: g for g in GROUP_BY}, type=str)  # type: ignore[misc]

GroupByOpt = Annotated[
    GroupBy | None,  # type: ignore[valid-type]
    typer.Option("--group-by", help="Totals per agent, model, provider, project (the session's working "
                 "directory), day, week (ISO) or month (of the session's start)."),
]
PerSessionOpt = Annotated[
    bool,
    typer.Option("--per-session", help="Over several sessions: every session's own table instead of the folder "
                 "answer (totals, then the worst sessions). JSON/CSV/Parquet always have every row."),
]
