"""Catalogue misses (issue 26): one line per missing model with its file count and a "did you
mean", `--context-window MODEL=W` beside the plain form, OpenClaw's config, and a run that finishes
the files that have a window (exit 3, documented, when some were left out)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.cli.windows import did_you_mean, openclaw_providers, split_windows
from sessiontools.errors import UsageError
from tests.folder import pi_session

KNOWN = [("qwen-token-plan", "MiniMax-M2.5"), ("huggingface", "MiniMaxAI/MiniMax-M2.5"), ("minimax", "other"),
         ("opencode", "minimax-m2.5")]


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Six Pi sessions: three (i % 4 == 3) are minimax/MiniMax-M2.5 (no window anywhere), the others catalogued."""
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(tmp_path / "no-openclaw.json"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "no-pi"))
    for i in (0, 1, 2, 3, 7, 11):
        rel, data = pi_session(i)
        p = tmp_path / "s" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return tmp_path / "s"


def test_split_windows() -> None:
    assert split_windows(None) == (None, {})
    assert split_windows(["16k,24k", "minimax/MiniMax-M2.5=200k", "glm=128000"]) == (
        "16k,24k", {"minimax/MiniMax-M2.5": "200k", "glm": "128000"})
    with pytest.raises(UsageError):
        split_windows(["=200k"])


def test_did_you_mean_puts_the_exact_id_first() -> None:
    assert did_you_mean("minimax/MiniMax-M2.5", KNOWN) == [
        "qwen-token-plan/MiniMax-M2.5", "huggingface/MiniMaxAI/MiniMax-M2.5", "opencode/minimax-m2.5"]
    assert did_you_mean("minimax/nothing-like-it", KNOWN) == []


def test_openclaw_config_is_json5() -> None:
    text = b"""{
      // OpenClaw's config: comments, unquoted keys, trailing commas
      models: { mode: 'merge', providers: { minimax: { baseUrl: "https://x/v1", models: [
        { id: "MiniMax-M2.5", contextWindow: 204800, }, ], }, }, },
    }"""
    assert openclaw_providers(text) == {"minimax": {"baseUrl": "https://x/v1", "models": [
        {"id": "MiniMax-M2.5", "contextWindow": 204800}]}}


def test_a_missing_model_is_one_line_and_the_others_finish(folder: Path) -> None:
    code, out, err = _run("replay", str(folder))
    lines = [x for x in err.splitlines() if "not in the catalogue" in x]
    assert code == 3
    assert len(lines) == 1
    assert "model minimax/MiniMax-M2.5 is not in the catalogue: 3 file(s) left out" in lines[0]
    assert "did you mean qwen-token-plan" in lines[0] and "--context-window minimax/MiniMax-M2.5=W" in lines[0]
    assert "replay over 3 session(s)" in out  # the files with a window were replayed


@pytest.mark.parametrize("given", ["minimax/MiniMax-M2.5=200k", "MiniMax-M2.5=200k"])
def test_context_window_model_equals_w(folder: Path, given: str) -> None:
    code, out, err = _run("replay", str(folder), "--context-window", given)
    assert code == 0, err
    assert "not in the catalogue" not in err
    assert "replay over 6 session(s)" in out and "200k/16.4k/20k" in out


def test_openclaw_config_gives_the_window(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "openclaw.json"
    cfg.write_text('{models: {providers: {minimax: {models: [{id: "MiniMax-M2.5", contextWindow: 204800,},],},},},}')
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(cfg))
    code, out, err = _run("replay", str(folder), "-f", "json", "-o", str(tmp_path / "r.json"))
    assert code == 0, err
    assert '"context_window":204800' in (tmp_path / "r.json").read_text().replace(" ", "")


def test_report_writes_the_page_and_exits_3_when_a_section_left_files_out(folder: Path, tmp_path: Path) -> None:
    """`report` over a folder where some files have no known window: the page is written (the other
    files in every section), the missing model is one line, and the exit code is 3 (README: exit codes)."""
    page = tmp_path / "r.html"
    code, _, err = _run("report", str(folder), "-o", str(page))
    assert code == 3
    assert page.stat().st_size > 1000
    assert sum(1 for x in err.splitlines() if "not in the catalogue" in x) == 1
    code, _, err = _run("report", str(folder), "-o", str(page), "--context-window", "200k")
    assert code == 0, err
