"""`sessiontools report`: one self-contained, safe HTML file, checked in a real browser (headless Chromium).

In CI (`CI=true`) a missing Chromium is a failure, not a skip: `.ci/run` installs Debian's `chromium`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.report.html import render_report
from sessiontools.testing import SessionBuilder
from tests.conftest import SAMPLES

SECTIONS = ("inspect", "replay", "estimate-error", "drift", "terms")
EVIL = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _need_chromium() -> str:
    exe = _chromium()
    if exe is None:
        why = ("no chromium or chromium-browser on PATH (Debian: apt-get install -y chromium); "
               "the HTML report cannot be checked in a browser here")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    return exe


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    code = main(["report", str(SAMPLES), "--context-window", "16k,24k", "--reserve", "3000", "--keep-recent", "4000",
                 "-o", str(out), "--jobs", "1"])
    assert code == 0
    return out


def test_report_is_self_contained_and_small(sample_report: Path) -> None:
    html = sample_report.read_text(encoding="utf-8")
    size = len(html.encode("utf-8"))
    assert size < 400_000, f"report of sample_sessions/ is {size} bytes"
    for sec in SECTIONS:
        assert f'<section id="{sec}">' in html
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the report refers to the network"
    assert "@import" not in html and "url(http" not in html
    assert html.count("<svg") >= 12 + 2  # a timeline per session, the estimator bars, the decay curves


def _evil_session(tmp_path: Path) -> Path:
    b = SessionBuilder("evil", provider="anthropic", model="claude-sonnet-4-5")
    b.user(f"please {EVIL}")
    first = b.assistant("ok", usage=b.usage(2000, 20))
    b.user("more " * 50)
    b.assistant("done", usage=b.usage(2600, 20))
    b.compaction(f"## Goal\n- {EVIL}\n\n## Progress\n### Done\n- [x] wrote {EVIL}\n", first, 2600)
    b.user("next")
    b.assistant("fine", usage=b.usage(1500, 20))
    b.user("again " * 50)
    b.assistant("done", usage=b.usage(2300, 20))
    b.compaction("## Goal\n- something else entirely\n", None, 2300)
    f = tmp_path / f"{EVIL.replace('/', '_')[:30]}.jsonl"
    f.write_bytes(b.jsonl())
    return f


def test_session_text_is_escaped(tmp_path: Path) -> None:
    """A summary (and a file name) holding <script> renders as text, never as markup."""
    f = _evil_session(tmp_path)
    out = tmp_path / "r.html"
    code = main(["report", str(f), "-o", str(out), "--context-window", "200k", "--jobs", "1"])
    assert code == 0
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html  # the dropped item / file name is shown, escaped


def test_render_report_escapes_every_field() -> None:
    doc = {"sessions": [{"path": EVIL, "pi_version": "0", "entries": 1, "requests": 0, "compactions": [],
                         "leaves": 2, "leaf_ids": [EVIL, "b"], "usage": {"input": 0, "output": 0, "cache_read": 0,
                                                                          "cache_write": 0},
                         "cost": 0.0, "errors": 0, "overflow_errors": 0}]}
    html = render_report(inspect=doc, replay={"runs": []}, estimate_error={"requests": 0, "estimators": {}},
                         drift={"chains": [], "metrics": {}}, headlines=[EVIL], title=EVIL)
    assert "<script" not in html and "<img" not in html


def test_report_opens_in_headless_chromium(sample_report: Path, tmp_path: Path) -> None:
    """The DOM Chromium builds has every section, and the screenshot is not blank."""
    exe = _need_chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}"]
    url = sample_report.resolve().as_uri()
    dom = subprocess.run([exe, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for sec in SECTIONS:
        assert f'id="{sec}"' in dom.stdout, f"section {sec} missing from the rendered DOM"
    assert dom.stdout.count("<svg") >= 14
    shot = tmp_path / "shot.png"
    run = subprocess.run([exe, *flags, "--window-size=1366,2400", f"--screenshot={shot}", url],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    from PIL import Image, ImageStat

    img = Image.open(shot).convert("L")
    stat = ImageStat.Stat(img)
    assert stat.var[0] > 100, f"the screenshot looks blank (pixel variance {stat.var[0]:.1f})"
    hist = img.histogram()
    assert max(hist) / sum(hist) < 0.95, "one colour covers 95% of the screenshot"


def test_report_refuses_a_non_html_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(SAMPLES / "pi0-tiny.jsonl"), "-o", str(tmp_path / "r.pdf")]) == 2
    assert "HTML" in capsys.readouterr().err


def test_missing_chromium_fails_in_ci_and_skips_with_a_reason_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but no chromium"):
        _need_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        _need_chromium()


def test_a_section_that_fails_is_reported_and_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The lab model is not in the catalogue: without --context-window replay cannot run; say so once."""
    out = tmp_path / "r.html"
    assert main(["report", str(SAMPLES / "pi0-tiny.jsonl"), "-o", str(out), "--jobs", "1"]) == 3
    err = capsys.readouterr().err
    assert err.count("is not in the catalogue") == 1 and out.exists()
    assert "No session could be replayed" in out.read_text(encoding="utf-8")
