"""Issue 17, defects 2, 3, 5, 6, 8: ordinary mistakes end with one line on stderr and a documented
exit code (2 usage, 3 input), checked before any work; never exit 70."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.testing import SessionBuilder
from tests.conftest import SAMPLES

TINY = str(SAMPLES / "pi0-tiny.jsonl")
TINY_SETTINGS = ["--context-window", "10k", "--reserve", "2500", "--keep-recent", "2000"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {lines}"
    assert not err.startswith("\n"), "blank first line on stderr"
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def no_pi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "no-such-agent-dir"))
    return tmp_path


@pytest.mark.parametrize("cmd", [["replay", "--plot", "grid.png"], ["inspect"], ["estimate-error"], ["diff-summaries"]])
def test_missing_default_session_dir(cmd: list[str], no_pi_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's replay example with no Pi directory: one line, exit 3 (was exit 70, matplotlib TypeError)."""
    code, out, err = run(capsys, *cmd)
    assert code == 3 and not out
    line = one_line_error(err)
    assert "no path given" in line and "does not exist" in line


def test_missing_named_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "replay", str(tmp_path / "nowhere"), "--plot", str(tmp_path / "grid.png"))
    assert code == 3 and "no such file or directory" in one_line_error(err)
    assert not (tmp_path / "grid.png").exists()


def test_empty_default_dir_wording(no_pi_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (no_pi_home / "no-such-agent-dir" / "sessions").mkdir(parents=True)
    code, _, err = run(capsys, "inspect")
    assert code == 3
    assert "Pi's session directory" in err and "the paths given" not in err


@pytest.mark.parametrize("cmd", [
    ["inspect", TINY, "-o", "{missing}/out.json"],
    ["cut", TINY, "-o", "{missing}/cut.txt"],
    ["replay", TINY, *TINY_SETTINGS, "-o", "{missing}/r.json"],
    ["estimate-error", TINY, "--save-calibration", "{missing}/cal.json"],
    ["estimate-error", TINY, "--plot", "{missing}/e.png"],
    ["diff-summaries", TINY, "-o", "{missing}/d.md"],
    ["report", TINY, "-o", "{missing}/report.html"],
])
def test_output_into_missing_folder(cmd: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{missing}", str(tmp_path / "missing")) for a in cmd]
    code, out, err = run(capsys, *args)
    assert code == 2 and not out
    assert "does not exist" in one_line_error(err)


@pytest.mark.parametrize("cmd", [["replay", TINY, *TINY_SETTINGS], ["estimate-error", TINY], ["diff-summaries", TINY]])
def test_plot_suffix_refused_before_the_run(cmd: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *cmd, "--plot", str(tmp_path / "x.jpg"))
    assert code == 2 and not out  # refused before: no table was printed
    assert ".png or .svg" in one_line_error(err)


@pytest.mark.parametrize("args, needle", [
    (["--context-window", "0"], "at least 1"),
    (["--context-window", "16000", "--reserve", "16000"], "not below --context-window"),
    (["--context-window", "16000", "--reserve", "20k"], "not below --context-window"),
    (["--context-window", "lots"], "token count"),
    (["--reserve", "-5"], "at least 0"),
])
def test_replay_settings_validated(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", TINY, *args)
    assert code == 2 and not out
    assert needle in one_line_error(err)


def test_16k_accepted_by_every_token_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`16k` means 16000 in --context-window, --reserve, --keep-recent, --summary-tokens, cut's and estimate-error's."""
    import orjson

    code, out, _ = run(capsys, "replay", TINY, "--context-window", "10k", "--reserve", "2.5k", "--keep-recent", "2k",
                       "--summary-tokens", "1k", "--format", "json")
    assert code == 0
    s = orjson.loads(out)["runs"][0]["settings"]
    assert (s["context_window"], s["reserve_tokens"], s["keep_recent_tokens"]) == (10000, 2500, 2000)
    code, out, _ = run(capsys, "cut", TINY, "--keep-recent", "5k", "--reserve", "16k", "--format", "json")
    assert code == 0 and orjson.loads(out)["settings"] == {"reserve_tokens": 16000, "keep_recent_tokens": 5000}
    code, out, _ = run(capsys, "estimate-error", TINY, "--threshold-grid", "8k", "--format", "json", "--jobs", "1")
    assert code == 0 and orjson.loads(out)["thresholds"][0]["tokens"] == 8000
    code, _, err = run(capsys, "cut", TINY, "--keep-recent", "5q")
    assert code == 2 and "token count" in one_line_error(err)


def test_output_format_from_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o out.csv` with no --format writes CSV (was a box table); a contradicting --format is refused."""
    csv = tmp_path / "out.csv"
    code, out, err = run(capsys, "replay", TINY, *TINY_SETTINGS, "-o", str(csv))
    assert code == 0 and not out
    assert f"wrote {csv}" in err
    head, row = csv.read_text().splitlines()[:2]
    assert head.startswith("session,leaf_id,model,policy,context_window,reserve_tokens,keep_recent_tokens,threshold,")
    assert len(csv.read_text().splitlines()) == 2  # one row per setting, even without compactions
    js = tmp_path / "i.json"
    assert run(capsys, "inspect", TINY, "-o", str(js))[0] == 0 and js.read_text().startswith("{")
    code, _, err = run(capsys, "replay", TINY, *TINY_SETTINGS, "--format", "table", "-o", str(tmp_path / "x.csv"))
    assert code == 2 and "suffix" in one_line_error(err)


def test_wrote_file_after_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    txt = tmp_path / "inspect.txt"
    code, out, err = run(capsys, "inspect", TINY, "-o", str(txt))
    assert code == 0 and not out and f"wrote {txt}" in err
    assert max(len(x) for x in txt.read_text().splitlines()) <= 100
    cal = tmp_path / "cal.json"
    code, _, err = run(capsys, "estimate-error", TINY, "--save-calibration", str(cal), "--format", "json", "--jobs", "1")
    assert code == 0 and cal.exists() and f"wrote {cal}" in err


def test_estimate_error_on_nothing_usable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No empty table of dashes: one line, exit 3."""
    b = SessionBuilder("no-usage")
    b.user("hello")
    f = tmp_path / "s.jsonl"
    f.write_bytes(b.jsonl())
    code, out, err = run(capsys, "estimate-error", str(f), "--jobs", "1")
    assert code == 3 and not out
    assert "no request with usable usage" in one_line_error(err)


def test_no_model_none_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = SessionBuilder("no-model")
    b.user("hello")
    f = tmp_path / "s.jsonl"
    f.write_bytes(b.jsonl())
    code, out, err = run(capsys, "replay", str(f))
    assert code == 3 and "None" not in err + out
    # A file with nothing to replay is left out with its reason, as every agent's (`NothingToReplay`):
    # one note, then the one error line of a run with no input.
    note, error = [x for x in err.splitlines() if x.strip()]
    assert note.startswith("note: ") and "no model request in the file" in note and note.endswith("left out")
    one_line_error(error)


def test_non_session_text_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A text file named on the command line: one line with the reason first (was 21 lines)."""
    f = tmp_path / "notes.jsonl"
    f.write_text("".join(f"line {i} of my notes\n" for i in range(20)))
    for cmd in (["inspect"], ["replay"], ["estimate-error", "--jobs", "1"], ["diff-summaries"], ["cut"]):
        code, out, err = run(capsys, cmd[0], str(f), *cmd[1:])
        assert code == 3, cmd
        line = one_line_error(err)
        assert line.startswith(f"error: {f}:1: ") and "not a Pi session" in line, line  # file:line: reason


@pytest.mark.parametrize("target", ["dir", "glob"])
def test_cut_on_several_files_refused(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`cut DIR` / `cut GLOB` named one arbitrary file and exit 0; now exit 2 naming the count."""
    for n in ("a", "b"):
        shutil.copy(TINY, tmp_path / f"{n}.jsonl")
    arg = str(tmp_path) if target == "dir" else str(tmp_path / "*.jsonl")
    code, out, err = run(capsys, "cut", arg)
    assert code == 2 and not out
    assert "names 2" in one_line_error(err)
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(TINY, one / "x.jsonl")
    assert run(capsys, "cut", str(one), "--format", "json")[0] == 0  # a directory with one file is that file


def test_click_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "replay", "--no-such-option")
    assert code == 2
    assert "no-such-option" in one_line_error(err)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from sessiontools import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"sessiontools {__version__}"


def test_no_blank_first_stderr_line(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in (["inspect", str(SAMPLES)], ["replay", str(SAMPLES), "--context-window", "24k", "--reserve", "3k",
                                              "--keep-recent", "4k", "--jobs", "1"]):
        code, _, err = run(capsys, *cmd)
        assert code == 0 and err and not err.startswith("\n"), (cmd, err[:80])


def test_os_errors_are_not_internal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file the system refuses (here: a directory named like a file inside the output path) is exit 2/3, not 70."""
    out_dir = tmp_path / "o.json"
    out_dir.mkdir()
    code, _, err = run(capsys, "inspect", TINY, "-o", str(out_dir))
    assert code == 2 and "is a directory" in one_line_error(err)


def test_terms_and_exit_codes_documented(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 4: every term is defined once in the README and in --help; defect 2: exit 70 is documented."""
    readme = (SAMPLES.parent / "README.md").read_text(encoding="utf-8")
    terms = readme.split("### Terms", 1)[1].split("\n## ", 1)[0]
    for term in ("rec. match", "mid-run", "thrash", "OOS", "LOSO", "A/E", "`*` row", "bias", "MAPE", "W / R / K",
                 "early", "late", "overflow", "truth", "leaf", "split turn"):
        assert term in terms, term
    assert "| 70 |" in readme and "| 2 |" in readme and "| 3 |" in readme
    helps = {}
    for cmd in ("replay", "estimate-error", "inspect", "diff-summaries", "cut"):
        assert main([cmd, "--help"]) == 0
        helps[cmd] = " ".join(capsys.readouterr().out.split())
    for term in ("rec. match", "mid-run", "thrash", "early", "late", "overflow", "truth"):
        assert term in helps["replay"], term
    for term in ("OOS", "LOSO", "A/E", "`*` row", "bias", "MAPE"):
        assert term in helps["estimate-error"], term
    assert "leaf" in helps["inspect"] and "split turn" in helps["cut"].lower()
