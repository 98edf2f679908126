"""Every command is documented: it has help text, and the README names it with an example."""

from __future__ import annotations

import re

import pytest

from sessiontools.cli import app, main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = sorted(c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands)


def test_all_commands_are_known() -> None:
    assert COMMANDS == ["cut", "diff-summaries", "estimate-error", "export", "inspect", "replay", "report"]


@pytest.mark.parametrize("command", COMMANDS)
def test_command_has_help_and_readme_entry(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` works and says something, and the README's command table and text mention it."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) > 5
    assert re.search(rf"`sessiontools {re.escape(command)}\b", README), f"README lacks `sessiontools {command}`"


def test_readme_first_screen_has_the_two_setup_commands() -> None:
    """The first screen gives exactly the two set-up commands, and .ci/run calls the test one."""
    first = "\n".join(README.splitlines()[:20])
    assert "make demo" in first and "make test" in first
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_exit_codes_are_documented() -> None:
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in README
