"""Issue 24: every agent gets every output of replay (metrics with cost and cache classes, the timeline
of one setting, the grid heatmap over the policy's own axes, export rows, the report's section), and
a Pi session under a Pi policy has one engine, so two answers cannot exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.policies.registry import POLICIES
from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records, replay_source
from sessiontools.replay.records import ReplaySettings
from sessiontools.replay.registry import policy_axes
from sessiontools.replay.run_document import RunRecord
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.report.replay import settings_cell
from sessiontools.report.replay_figures import heatmap_cells
from sessiontools.testing import run_record
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES

# (file, --policy or None, extra CLI options): one per agent under its own rule, and cross-agent runs.
CASES = {
    "pi": ("pi0-pair-a.jsonl", None, ["--context-window", "24000"]),
    "codex": ("codex/codex-pair-a.jsonl", None, []),
    "claude-code": ("claude-code/claude-threshold-15.jsonl", None, ["--context-window", "100000"]),
    "codex-over-pi": ("pi0-pair-a.jsonl", "codex", ["--context-window", "24000"]),
    "pi-over-claude": ("claude-code/claude-threshold-15.jsonl", "pi-1", ["--context-window", "100000"]),
}
GRID = {
    "pi": ["--reserve", "3000,4000", "--keep-recent", "2000,6000"],
    "codex": ["--context-window", "64000,80000", "--auto-compact-limit", "17000,19500"],
    "claude-code": ["--context-window", "100000,120000", "--autocompact-pct", "14,15"],
    "codex-over-pi": ["--context-window", "24000,32000", "--auto-compact-limit", "15000,18000"],
    "pi-over-claude": ["--reserve", "8000,16384", "--keep-recent", "2000,6000"],
}


def _argv(name: str) -> list[str]:
    f, policy, extra = CASES[name]
    return [str(SAMPLES / f), *(["--policy", policy] if policy else []), *extra]


@pytest.mark.parametrize("name", sorted(CASES))
def test_metrics_are_priced_and_cached_for_every_agent(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The run record has the cache model, the prices' source, the token classes, thrash and mid-run
    counted (not a constant 0/None): the same record for every agent."""
    out = tmp_path / "r.json"
    assert main(["replay", *_argv(name), "-f", "json", "-o", str(out)]) == 0
    (rec, *_) = json.loads(out.read_text())["runs"]
    assert rec["cache_model"]["style"] in ("write", "auto", "none") and rec["prices"]["source"]
    m = rec["metrics"]
    assert all(m[k] is not None for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"))
    assert m["input_tokens"] + m["cache_read_tokens"] + m["cache_write_tokens"] > 0
    assert rec["requests_from_recorded_usage"] + rec["requests_from_model"] > 0
    assert rec["agent"] in ("pi", "codex", "claude-code")


@pytest.mark.parametrize("name", sorted(CASES))
def test_timeline_plot_of_one_setting_for_every_agent(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """--plot of one setting draws the timeline (it used to exit 2 for Codex and Claude Code after
    printing the table), from the same run as the table: no second replay."""
    png = tmp_path / "t.png"
    assert main(["replay", *_argv(name), "-f", "json", "-o", str(tmp_path / "r.json"), "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("name", sorted(CASES))
def test_grid_heatmap_uses_the_policys_axes(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A grid's heatmap has one cell per setting of the policy's own axes (Pi: reserve x keep; Codex:
    window x limit; Claude Code: window x percentage), not one "reserve 0 x keep 0" cell holding the sum."""
    out, svg = tmp_path / "g.json", tmp_path / "g.svg"
    f, policy, _ = CASES[name]
    argv = [str(SAMPLES / f), *(["--policy", policy] if policy else [])]
    if name in ("pi", "pi-over-claude"):
        argv += ["--context-window", CASES[name][2][1]]
    assert main(["replay", *argv, *GRID[name], "-f", "json", "-o", str(out), "--plot", str(svg)]) == 0
    runs = [RunRecord.from_dict(r) for r in json.loads(out.read_text())["runs"]]
    assert len(runs) == 4 and svg.stat().st_size > 1000
    cells = heatmap_cells(runs, "billed_input_tokens")
    assert len(cells["ys"]) == 2 and len(cells["xs"]) == 2
    assert all(v is not None for row in cells["values"] for v in row)
    axes = [a.key for a in policy_axes(runs[0].settings.policy)]
    assert cells["y"].key in axes and cells["x"].key in axes
    assert len({settings_cell(r.settings) for r in runs}) == 4  # the table tells the settings apart


def test_an_unpriced_cell_is_not_zero() -> None:
    """A heatmap cell of runs without a price is blank (None), and a partly priced one says so."""
    runs = [run_record(ReplaySettings(10, r, 1, "pi-0"), agent="pi", cost=c) for r, c in ((1, None), (2, 0.5), (2, None))]
    cells = heatmap_cells(runs, "cost")
    assert cells["values"] == [[None], [0.5]] and cells["known"] == [[0], [1]] and cells["runs"] == [[1], [2]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_export_writes_replay_rows_for_every_agent(name: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`export --replay-*` writes replay rows for every agent's files (it wrote none for Codex and
    Claude Code, with no note), with the policy's own threshold."""
    import duckdb

    f, policy, _ = CASES[name]
    ds = tmp_path / "ds"
    argv = ["export", str(SAMPLES / f), "-o", str(ds), "--jobs", "1", "--replay-window",
            "100000" if "claude" in f else ("64000" if "codex" in f else "24000")]
    if policy:
        argv += ["--replay-policy", policy]
    assert main(argv) == 0
    rows = duckdb.sql(f"SELECT agent, policy, threshold, billed_input_tokens FROM "
                      f"read_parquet('{ds}/replay_runs/**/*.parquet', hive_partitioning = true)").fetchall()
    assert rows and all(t is not None and t > 0 and b > 0 for _, _, t, b in rows)


def test_report_has_a_replay_section_for_every_agent(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The HTML report replays every agent's files (it said "No session could be replayed" for files
    the CLI replays) and draws each one's timeline; no "Pi None.x"."""
    d = tmp_path / "in"
    d.mkdir()
    for f in ("pi0-pair-a.jsonl", "codex/codex-pair-a.jsonl", "claude-code/claude-threshold-15.jsonl"):
        (d / Path(f).name).write_bytes((SAMPLES / f).read_bytes())
    out = tmp_path / "r.html"
    assert main(["report", str(d), "-o", str(out), "--jobs", "1", "--context-window", "100000"]) in (0, 3)
    html = out.read_text()
    section = html.split('<section id="replay">')[1].split("</section>")[0]
    assert "No session could be replayed" not in section
    for name in ("pi0-pair-a", "codex-pair-a", "claude-threshold-15"):
        assert name in section
    assert section.count("<figure>") >= 3  # one timeline per session
    assert "Pi None.x" not in html


def test_one_engine_for_a_pi_session_under_a_pi_policy() -> None:
    """The disagreement issue 24 measured (pi0-chinese at W 16k: 16 vs 4 compactions; pi0-two-overflows:
    8 vs 3 compactions, 11 vs 3 overflows) cannot happen: there is one walk, and `replay_source` and
    `replay_transcript` give a Pi session under a Pi policy the same runs, whichever way it is asked."""
    for name in ("pi0-chinese", "pi0-two-overflows"):
        src = load_source(SAMPLES / f"{name}.jsonl")
        kw = dict(windows=[16000], reserves=[3000], keeps=[4000], leaf=None, all_leaves=False, summary_tokens=None)
        by_default = replay_records(src, policy=None, **kw)
        by_name = replay_records(src, policy="pi-0", **kw)
        assert [r.metrics for r in by_default] == [r.metrics for r in by_name]
        (pr,) = replay_source(src, policy="pi-0", **kw)
        assert pr.path is not None  # the one walk walked the Pi transcript
        (walked,) = replay_transcript(transcript_of(src, rule_version="0"), windows=[16000], reserves=[3000],
                                      keeps=[4000], policy="pi-0")
        assert walked.runs == pr.runs


def test_every_agent_is_in_every_registry() -> None:
    """Adding an agent is one reader, one transcript adapter, one policy and one registry line: every
    agent has an entry in each registry (reader, transcript loader, own policy, default policy, a
    policy that replays its files)."""
    from sessiontools.policies.registry import DEFAULT_POLICY, VERSIONED_POLICY
    from sessiontools.read.agents import Agent

    for agent in Agent:
        assert agent in DEFAULT_POLICY, agent
        assert DEFAULT_POLICY[agent] is not None or agent in VERSIONED_POLICY, agent  # its own rule (own_policy)
        assert any(agent in e.agents for e in POLICIES.values()), agent


def test_heatmap_png_says_what_it_sums_and_is_readable(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The grid heatmap of a 7-session folder: its title says "sum over 7 sessions" (and over the windows
    it also sums), the title lies inside the saved image (not cut off), and the PNG is readable (at least
    880 x 495 px, not the 308 x 418 px of before), as matplotlib saves it."""
    import shutil

    from matplotlib.image import imread

    from sessiontools.report.replay_figures import heatmap_figure, heatmap_title

    d = tmp_path / "d"
    d.mkdir()
    for k in range(7):
        shutil.copy(SAMPLES / "pi0-pair-a.jsonl", d / f"s{k}.jsonl")
    out, png = tmp_path / "g.json", tmp_path / "g.png"
    assert main(["replay", str(d), "--context-window", "24000,32000", "--reserve", "3000,4000",
                 "--keep-recent", "2000,6000", "-f", "json", "-o", str(out), "--plot", str(png)]) == 0
    runs = [RunRecord.from_dict(r) for r in json.loads(out.read_text())["runs"]]
    title = heatmap_title(heatmap_cells(runs, "billed_input_tokens"), "billed_input_tokens")
    assert "sum over 7 sessions and 2 values of" in title
    h, w = imread(png).shape[:2]
    assert w >= 880 and h >= 495, (w, h)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = heatmap_figure(runs, "billed_input_tokens")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = fig.axes[0].title.get_window_extent(canvas.get_renderer())
    fw, fh = fig.bbox.width, fig.bbox.height
    assert fig.axes[0].get_title() == title
    assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fw and box.y1 <= fh, (box, fw, fh)
