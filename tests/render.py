"""The plain lines renderables print as at a width: what the report tests read a table as."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich.console import Console


def rendered_lines(renderables: Sequence[Any], width: int) -> list[str]:
    """The plain lines `renderables` print as at `width` (no colour, no highlighting)."""
    con = Console(width=width, record=True, no_color=True, highlight=False, file=io.StringIO(), legacy_windows=False)
    for r in renderables:
        con.print(r)
    return con.export_text(styles=False).splitlines()
