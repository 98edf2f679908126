"""`cli.console.StderrConsole` writes a plain line itself, byte for byte what rich's stderr console
(`highlight=False, soft_wrap=True`) writes, and hands everything else to rich."""

from __future__ import annotations

import contextlib
import io

import pytest
from rich.console import Console

from sessiontools.cli.console import SafeLine, StderrConsole, plain, real_console
from sessiontools.report.text import safe_text

LINES = ["inspect: 1 session(s), cost $0.03", "  lead and trail  ", "x" * 500, "中文 テスト 한국어 " * 30,
         "emoji :smile: here", "a:b:c", "wrote /tmp/a b.json", "café ñ", "\u200b zero width", "tab\there",
         "nl\nhere", "bell\x07x", "\x1b[31mred", "[bold]markup[/bold]", "surrogate \udcff", "", " ",
         "wide 👍 thumbs", "e\u0301 combining", "\u00a0nbsp", "\r\n", "note: a.jsonl:3: recovered"]


def _stderr(fn) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        fn()
    return buf.getvalue()


@pytest.mark.parametrize("text", LINES)
def test_same_bytes_as_rich(text: str) -> None:
    rich_console = Console(stderr=True, highlight=False, soft_wrap=True)
    assert _stderr(lambda: StderrConsole().print(text, markup=False)) == _stderr(
        lambda: rich_console.print(text, markup=False))
    assert _stderr(lambda: StderrConsole().print(SafeLine(text))) == _stderr(
        lambda: rich_console.print(safe_text(text)))
    # a real rich console given a SafeLine prints it as the Text (never as markup)
    assert _stderr(lambda: rich_console.print(SafeLine(text))) == _stderr(
        lambda: rich_console.print(safe_text(text)))


def test_plain_lines_need_no_rich_console() -> None:
    con = StderrConsole()
    _stderr(lambda: con.print("a plain line", markup=False))
    _stderr(lambda: con.print(SafeLine("another one")))
    assert con._rich is None and con.is_terminal is False  # (stderr is a StringIO here)
    assert plain("inspect: 2 session(s)") and not plain("a :smile: code") and not plain("tab\t")
    _stderr(lambda: con.print("[b]markup on[/b]"))  # markup: rich's job
    assert con._rich is not None and real_console(con) is con._rich


def test_forced_terminal_asks_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    con = StderrConsole()
    assert con.is_terminal is True and con._rich is not None
