"""The stderr console, with rich imported only when something needs it.

Importing rich's console and text is about 0.035 s of CPU: a fifth of `sessiontools inspect FILE
--format json`, whose only stderr output is usually one plain line (the headline). `StderrConsole`
writes such a line itself, byte for byte what rich writes for it, and makes the rich `Console`
(`stderr=True, highlight=False, soft_wrap=True`) on first use of anything else: a rich renderable, a
`Text`, markup, a progress display on a terminal.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

#: rich's emoji code pattern (`rich._emoji_replace`): a line that could hold one goes through rich.
_EMOJI_CODE = re.compile(r":\S*?:")
#: Environment variables that change what rich calls a terminal (rich 15: `Console.is_terminal`).
_TERMINAL_ENV = ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "FORCE_TERMINAL")


def plain(text: str) -> bool:
    """Whether rich prints `text` (markup off, highlighting off, soft wrap) exactly as it is: only
    printable characters (no tab, newline or control character, which rich expands or strips) and
    nothing that looks like an emoji code."""
    return text.isprintable() and not (":" in text and _EMOJI_CODE.search(text))


class SafeLine:
    """A line of text for a console: rich prints it as `report.text.safe_text(text)` (control
    sequences stripped, never markup); `StderrConsole` writes it itself when that text is plain."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich__(self) -> Any:
        from sessiontools.report.text import safe_text

        return safe_text(self.text)

    def __str__(self) -> str:
        return self.text


class StderrConsole:
    """What `cli.outputs.stderr_console()` returns: `print(str, markup=False)` of a plain line and
    `is_terminal` off a terminal without rich; everything else is the rich console's (made once)."""

    __slots__ = ("_rich",)

    def __init__(self) -> None:
        self._rich: Console | None = None

    def rich(self) -> Console:
        """The rich console itself (made on first use)."""
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(stderr=True, highlight=False, soft_wrap=True)
        return self._rich

    @property
    def is_terminal(self) -> bool:
        if self._rich is None and not any(k in os.environ for k in _TERMINAL_ENV):
            isatty = getattr(sys.stderr, "isatty", None)
            try:
                if isatty is None or not isatty():
                    return False
            except ValueError:  # a closed stream (rich says False too)
                return False
        return self.rich().is_terminal

    def print(self, *objects: Any, **kwargs: Any) -> None:
        line = _plain_line(objects, kwargs) if self._rich is None else None
        if line is None:
            self.rich().print(*objects, **kwargs)
            return
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich(), name)


def _plain_line(objects: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The line rich would write for `print(*objects, **kwargs)` when it is plain text, else None:
    a str printed with `markup=False`, or a `SafeLine` printed with no options."""
    if len(objects) != 1:
        return None
    obj = objects[0]
    if type(obj) is str and kwargs == {"markup": False}:
        text = obj
    elif type(obj) is SafeLine and not kwargs:
        from sessiontools.report.text import strip_control

        text = strip_control(obj.text)
    else:
        return None
    return text if plain(text) else None


def real_console(console: Any) -> Any:
    """The rich console behind `console` (itself when it is one): what rich's own classes are given."""
    return console.rich() if isinstance(console, StderrConsole) else console
