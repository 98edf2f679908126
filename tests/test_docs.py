"""Every command is documented: it has help text, and the README names it with an example."""

from __future__ import annotations

import re

import pytest

from sessiontools.cli import app, main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = sorted(c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands)


def test_all_commands_are_known() -> None:
    assert COMMANDS == ["cut", "diff-summaries", "estimate-error", "export", "inspect", "replay", "report", "resummarize"]


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


def _readme_examples() -> list[str]:
    """The README's `$ sessiontools ...` example lines that run on what the repository ships
    (sample_sessions/, or ../shared/sessions when it is there); examples over a user's own
    directories (~/.pi, s3://, ...) cannot run here and are left out."""
    out = []
    for line in README.splitlines():
        if not line.startswith("$ sessiontools "):
            continue
        cmd = line[2:].split("  #", 1)[0].strip()
        if cmd.endswith("\\") or "~" in cmd or "://" in cmd or "sample.jsonl" in cmd:
            continue
        if re.search(r"(^|\s)(new-)?sessions/", cmd):  # a user's own folder in the example
            continue
        if "sample_sessions" in cmd or "../shared/" in cmd:
            out.append(cmd)
    return out


EXAMPLES = _readme_examples()


def test_readme_has_runnable_examples() -> None:
    assert len(EXAMPLES) >= 4, EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES)
def test_readme_example_runs(example: str, tmp_path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                             capsys: pytest.CaptureFixture[str]) -> None:
    """Each README example runs as printed (outputs redirected into a temporary folder) and exits 0,
    or 1 where it shows a tripped gate."""
    import shlex

    if "../shared/" in example and not (ROOT.parent / "shared" / "sessions").is_dir():
        pytest.skip("../shared/sessions is absent")
    argv = shlex.split(example)[1:]
    argv = [str(tmp_path / a) if i and argv[i - 1] in ("-o", "--output", "--plot") else a for i, a in enumerate(argv)]
    monkeypatch.chdir(ROOT)
    code = main([*argv, *(["--jobs", "1"] if argv[0] not in ("cut",) else [])])
    err = capsys.readouterr().err
    assert code in (0, 1) and "Traceback" not in err, f"{example}: exit {code}\n{err[-2000:]}"
