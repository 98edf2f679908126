"""Session text shown in a terminal is data, never markup or control sequences."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_control(s: str) -> str:
    """Remove ANSI escape sequences and C0/C1 control characters (tabs and newlines stay)."""
    return _CONTROL.sub("", s)


def html_text(s: object) -> str:
    """Text for HTML (the report and its SVG charts): control sequences stripped, then escaped."""
    from html import escape

    return escape(strip_control(str(s)), quote=True)


def safe_text(s: object, *, limit: int | None = None, style: str | None = None) -> Text:
    """A rich `Text` (never parsed as markup) of `s`, control sequences stripped, optionally shortened.
    (rich is imported here: a run that prints no Text never imports it.)"""
    from rich.text import Text

    t = strip_control(str(s))
    if limit is not None and len(t) > limit:
        t = t[: max(0, limit - 1)] + "…"
    return Text(t, style=style or "")


def one_line(s: object, limit: int = 80) -> Text:
    """`safe_text` on a single line: newlines shown as ⏎."""
    return safe_text(str(s).replace("\r\n", "\n").replace("\n", " ⏎ "), limit=limit)
