"""The HTML report of a folder (issue 26) in headless Chromium at 1280 px: 136 sessions of every
agent, under 2 MB; the inspect, estimate-error and drift sections show aggregates and the worst
sessions first, everything else collapsed, and fit the width (nothing to scroll sideways).

Chromium measures a copy of the page with a small probe script added (the report itself has no
script and a CSP that forbids one): the page height, each section's height, and every scroll box
whose content is wider than the box.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES
from tests.folder import build_folder
from tests.report.test_html import _need_chromium

pytestmark = pytest.mark.skipif(not any((SAMPLES / "codex").glob("*.jsonl")), reason="sample_sessions/ is empty")

PROBE = """<script>
window.addEventListener('load', () => {
  const d = document.documentElement;
  const cut = [...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => e.closest('section').id);
  const sections = Object.fromEntries([...document.querySelectorAll('section')]
    .map(s => [s.id, Math.round(s.getBoundingClientRect().height)]));
  document.body.setAttribute('data-probe', JSON.stringify({height: d.scrollHeight, width: d.scrollWidth, cut, sections}));
});
</script>"""


@pytest.fixture(scope="module")
def folder_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folder-report")
    build_folder(root / "s", pi=100, codex=18, claude=18)
    out = root / "report.html"
    code = main(["report", str(root / "s"), "--context-window", "200k", "--reserve", "16k", "-o", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def probe(folder_report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    exe = _need_chromium()
    work = tmp_path_factory.mktemp("probe")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", folder_report.read_text(encoding="utf-8"))
    page = work / "probe.html"
    page.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    run = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                          "--window-size=1280,900", f"--user-data-dir={work / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=300)
    m = re.search(r'data-probe="([^"]*)"', run.stdout)
    assert m, run.stderr[-2000:]
    return json.loads(m.group(1).replace("&quot;", '"'))


def test_report_of_136_sessions_is_under_2_mb(folder_report: Path) -> None:
    html = folder_report.read_text(encoding="utf-8")
    assert len(html.encode("utf-8")) < 2_000_000
    assert "<script" not in html.lower()
    assert "every session (136, largest first)" in html  # the rest is collapsed, not dropped


@pytest.mark.parametrize("section", ["inspect", "estimate-error", "drift"])
def test_folder_sections_are_a_screenful_and_fit_1280_px(probe: dict, section: str) -> None:  # type: ignore[type-arg]
    assert probe["sections"][section] <= 2_500, probe["sections"]
    assert section not in probe["cut"], probe["cut"]
    assert probe["width"] <= 1280


def test_whole_report_is_under_15000_px(probe: dict) -> None:  # type: ignore[type-arg]
    assert probe["height"] < 15_000 and not probe["cut"], probe
