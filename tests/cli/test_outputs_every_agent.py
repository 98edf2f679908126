"""Issue 24: every output of a replay exists, with real content, for every agent's file under its own
policy and under each other agent's (the table, JSON, CSV and Parquet rows, the timeline of one setting,
the grid heatmap over the policy's own axes, `export --replay-*` rows, the report's section and the
`--fail-if` message), each from the one run the others show.

One parametrised test per output over `CASES` (Pi, Codex and Claude Code samples x their own policy
and each other agent's policy, and every other registered policy on a file of its own agent: Pi 1.x's
rule on a 1.x file, Claude Code's reactive-only rule: eleven cases). The Codex sample's lab model has no
price anywhere (catalogue, models.json, recorded usage.cost): its cost must read as unknown ("-", "no
price known", a blank cell), never $0. What a policy does not do by design (a reactive-only policy has
no check point) is read from the policy's declared data (`Policy.check_points`, `Policy.axes`), never
from a case's name.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sessiontools.cli import main
from sessiontools.policies.base import Policy, PolicyName
from sessiontools.policies.registry import OWN_AGENT, POLICIES, make_policy
from sessiontools.read.agents import Agent
from sessiontools.replay.invariants import violations
from sessiontools.replay.metrics import METRICS
from sessiontools.replay.registry import policy_axes
from sessiontools.replay.run_document import RunRecord, settings_from_dict
from sessiontools.report.replay import settings_cell
from tests.conftest import SAMPLES

#: name -> (sample, --policy or None, the options of one setting that compacts, a grid over the policy's
#: own axes: (first axis option, its values), (second axis option, its values), a 2 x 2 grid; a policy of
#: one axis (`Policy.axes`) has a grid over that one: ((its option, two values),))
CASES: dict[str, tuple[str, str | None, list[str], tuple[tuple[str, str], ...]]] = {
    "pi": ("pi0-pair-a.jsonl", None, ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
           (("--reserve", "3000,4000"), ("--keep-recent", "2000,6000"))),
    # Pi 1.x's own rule on a 1.x file, at the setting it was recorded with (sample_sessions/MANIFEST.md)
    "pi-1": ("pi1-pair-a.jsonl", None, ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
             (("--reserve", "3000,4000"), ("--keep-recent", "2000,6000"))),
    # the reactive-only rule on the file Claude Code compacted reactively (the lab server's limit, 13000, as
    # W: sample_sessions/claude-code/MANIFEST.md); its one axis is the window
    "claude-code-reactive": ("claude-code/claude-reactive.jsonl", "claude-code-reactive", ["--context-window", "13000"],
                             (("--context-window", "13000,16000"),)),
    "pi-under-codex": ("pi0-pair-a.jsonl", "codex", ["--context-window", "24000", "--auto-compact-limit", "15000"],
                       (("--context-window", "24000,32000"), ("--auto-compact-limit", "15000,18000"))),
    "codex": ("codex/codex-pair-a.jsonl", None, ["--auto-compact-limit", "17000"],
              (("--context-window", "64000,80000"), ("--auto-compact-limit", "17000,19500"))),
    "codex-under-claude-code": ("codex/codex-pair-a.jsonl", "claude-code",
                                ["--context-window", "100000", "--autocompact-pct", "14"],
                                (("--context-window", "100000,120000"), ("--autocompact-pct", "14,15"))),
    "claude-code": ("claude-code/claude-threshold-15.jsonl", None, ["--context-window", "100000", "--autocompact-pct", "15"],
                    (("--context-window", "100000,120000"), ("--autocompact-pct", "14,15"))),
    "claude-code-under-pi-1": ("claude-code/claude-threshold-15.jsonl", "pi-1",
                               ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
                               (("--reserve", "3000,4000"), ("--keep-recent", "2000,6000"))),
    "pi-under-claude-code": ("pi0-pair-a.jsonl", "claude-code", ["--context-window", "100000", "--autocompact-pct", "14"],
                             (("--context-window", "100000,120000"), ("--autocompact-pct", "14,15"))),
    "codex-under-pi-0": ("codex/codex-pair-a.jsonl", "pi-0",
                         ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
                         (("--reserve", "3000,4000"), ("--keep-recent", "2000,6000"))),
    "claude-code-under-codex": ("claude-code/claude-threshold-15.jsonl", "codex",
                                ["--context-window", "100000", "--auto-compact-limit", "15000"],
                                (("--context-window", "100000,120000"), ("--auto-compact-limit", "15000,17000"))),
}
NAMES = sorted(CASES)
#: the replay option of each setting a policy's axes name (`Policy.axes`)
OPTION_KEY = {"--reserve": "reserve_tokens", "--keep-recent": "keep_recent_tokens", "--context-window": "context_window",
              "--auto-compact-limit": "auto_compact_limit", "--autocompact-pct": "autocompact_pct"}


def _file(name: str) -> Path:
    return SAMPLES / CASES[name][0]


def _policy_args(name: str) -> list[str]:
    policy = CASES[name][1]
    return ["--policy", policy] if policy else []


def _one(name: str) -> list[str]:
    """argv after `replay` of one setting of the case."""
    return [str(_file(name)), *_policy_args(name), *CASES[name][2]]


def _grid(name: str) -> list[str]:
    """argv after `replay` of the case's grid (the one setting's options, the grid's axes varied)."""
    opts = dict(zip(CASES[name][2][::2], CASES[name][2][1::2], strict=True))
    for option, values in CASES[name][3]:
        opts[option] = values
    return [str(_file(name)), *_policy_args(name), *(x for kv in opts.items() for x in kv)]


def _grid_runs(name: str) -> int:
    """How many settings the case's grid has (2 x 2, or 2 for a policy of one axis)."""
    return math.prod(len(values.split(",")) for _, values in CASES[name][3])


def _policy_of(rec: dict[str, Any]) -> Policy:
    """The Policy object of a run's rule, whose declared data (`check_points`, `axes`) says what the
    run shows."""
    return make_policy(rec["settings"]["policy"])


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each case's one run record (`replay -f json`), made once for every test here."""
    d = tmp_path_factory.mktemp("runs")
    out: dict[str, dict[str, Any]] = {}
    for name in NAMES:
        path = d / f"{name}.json"
        assert main(["replay", *_one(name), "-f", "json", "-o", str(path), "--jobs", "1"]) == 0
        (out[name],) = json.loads(path.read_text())["runs"]
    return out


def _threshold(rec: dict[str, Any]) -> int:
    """The run's threshold: the policy's own (`threshold`), else Pi's W - reserve (the exact port's
    settings carry no `threshold` key)."""
    s = rec["settings"]
    return int(s["threshold"]) if s.get("threshold") is not None else s["context_window"] - s["reserve_tokens"]


def _cell(rec: dict[str, Any]) -> str:
    """The table's setting cell of a JSON run record."""
    return settings_cell(settings_from_dict(rec["settings"]))


def _priced(rec: dict[str, Any]) -> bool:
    return rec["prices"]["source"] != "none"


def test_the_cases_cover_every_agent_own_and_crossed(one_run: dict[str, dict[str, Any]]) -> None:
    """Every agent's file is replayed under a rule of its own agent (one or several: Pi 0.x and 1.x,
    Claude Code's threshold and reactive rules) and under each other agent's; priced and unpriced runs
    both occur (else the cost assertions below would prove half). The agents are the registry's
    (`read.agents.Agent`), so a fourth agent fails this test until its file has a case."""
    def family(rec: dict[str, Any]) -> str:  # a rule's family is its own agent's (`OWN_AGENT`)
        return OWN_AGENT[PolicyName(rec["settings"]["policy"])].value

    own = {r["agent"] for r in one_run.values() if family(r) == r["agent"]}
    crossed = {(r["agent"], family(r)) for r in one_run.values() if family(r) != r["agent"]}
    every = {a.value for a in Agent}  # the registry's agents: a fourth one fails here until it has its cases
    assert own == every
    # each agent's file under each other agent's rule
    assert crossed == {(a, b) for a in every for b in every if a != b}
    # a case without --policy is its file's own rule
    assert all(family(one_run[n]) == one_run[n]["agent"] for n in NAMES if CASES[n][1] is None)
    assert {_priced(r) for r in one_run.values()} == {True, False}


def test_every_registered_policy_is_the_rule_of_a_case(one_run: dict[str, dict[str, Any]]) -> None:
    """Each registered policy (`policies.registry.POLICIES`) replays at least one case, its own file's
    rule or via --policy, so a new policy fails here until every output above is proven for it."""
    ruled = {r["settings"]["policy"] for r in one_run.values()}
    assert {str(n) for n in POLICIES} <= ruled, {str(n) for n in POLICIES} - ruled


def test_every_policys_axes_have_an_option_here() -> None:
    """Each axis of every registered policy (`Policy.axes`) is a replay option these tests know, so a
    new policy's grid, table and heatmap are tested along its own axes, not silently skipped."""
    assert {a.key for n in POLICIES for a in policy_axes(n)} <= set(OPTION_KEY.values())


@pytest.mark.parametrize("name", NAMES)
def test_json_run_has_every_metric(name: str, one_run: dict[str, dict[str, Any]]) -> None:
    """The run record: compactions decided, every metric a number (cost where the model is priced,
    None where it is not), the cache model, the truth model, no broken invariant."""
    rec = one_run[name]
    m = rec["metrics"]
    assert set(m) == set(METRICS), set(m) ^ set(METRICS)  # every metric, whoever's file and rule
    assert all(m[k] is not None for k in METRICS if not k.startswith("cost")), name
    assert m["compactions"] >= 1 and rec["compactions"], name  # each case's setting compacts
    assert m["peak_truth_tokens"] > 0 and m["billed_input_tokens"] > 0
    # check points where the policy declares some (a reactive-only rule has none: it compacts after a rejection)
    assert (m["check_points"] > 0) == bool(_policy_of(rec).check_points), (m["check_points"], name)
    for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "thrash", "mid_run_crossings"):
        assert isinstance(m[k], int), k
    for k in ("cost", "cost_agent", "cost_summarization"):
        assert (m[k] is not None) == _priced(rec), (k, m[k], rec["prices"])
    assert rec["cache_model"]["style"] in ("write", "auto", "none")
    assert rec["truth_model"]["overhead_tokens"] is not None
    assert _threshold(rec) > 0
    assert violations(rec) == []


@pytest.mark.parametrize("name", NAMES)
def test_table_row_names_the_setting_and_the_cost(name: str, one_run: dict[str, dict[str, Any]],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The table's row shows the setting along the policy's own axes, the policy, the cost ("-" when
    no price is known) and the compactions of the setting; the headline says the price is unknown
    instead of $0; nothing reads "None"."""
    monkeypatch.setenv("COLUMNS", "220")
    assert main(["replay", *_one(name), "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    rec = one_run[name]
    row = next(line for line in out.splitlines() if line.startswith(_file(name).stem))
    assert _cell(rec) in row and rec["settings"]["policy"] in row
    assert ("$" in row) == _priced(rec)
    assert "None" not in out and "None" not in err
    assert "compactions of this setting" in out
    assert ("no price known" in err) == (not _priced(rec))
    legend = out[out.index("setting:"):]
    for a in policy_axes(rec["settings"]["policy"]):
        assert a.label in legend, (a.label, legend[:300])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_csv_and_parquet_rows(name: str, fmt: str, one_run: dict[str, dict[str, Any]], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """`replay -f csv|parquet`: one row per setting of the grid, with the policy's own axes as
    columns (each set), its threshold, and the cost null exactly when no price is known."""
    import polars as pl

    out = tmp_path / f"r.{fmt}"
    assert main(["replay", *_grid(name), "-f", fmt, "-o", str(out), "--jobs", "1"]) == 0
    df = pl.read_csv(out) if fmt == "csv" else pl.read_parquet(out)
    n = _grid_runs(name)
    assert df.height == n
    assert set(df["policy"]) == {one_run[name]["settings"]["policy"]}
    for option, _ in CASES[name][3]:
        key = OPTION_KEY[option]
        assert df[key].n_unique() == 2 and df[key].null_count() == 0, key
    assert df["threshold"].null_count() == 0 and (df["threshold"] > 0).all()
    assert (df["cost"].null_count() == 0) if _priced(one_run[name]) else (df["cost"].null_count() == n)
    assert (df["billed_input_tokens"] > 0).all() and (df["compactions"] >= 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_timeline_is_of_the_run_the_table_shows(name: str, one_run: dict[str, dict[str, Any]], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`--plot` of one setting draws the timeline of the run the JSON reports: one truth point per
    request, the run's compactions, its threshold and window, the policy in the title."""
    import sessiontools.report.replay_figures as rr

    drawn: list[RunRecord] = []
    real = rr.timeline_figure

    def spy(record: RunRecord) -> Any:
        drawn.append(record)
        return real(record)

    monkeypatch.setattr(rr, "timeline_figure", spy)
    png, js = tmp_path / "t.png", tmp_path / "r.json"
    assert main(["replay", *_one(name), "-f", "json", "-o", str(js), "--plot", str(png), "--jobs", "1"]) == 0
    (rec,) = json.loads(js.read_text())["runs"]
    (shown,) = drawn
    assert shown.to_dict() == rec
    tl = shown.to_dict(timeline=True)["timeline"]
    assert len(tl["truth"]) == (rec["requests_from_recorded_usage"] + rec["requests_from_model"]
                                + rec["requests_from_provider_error"])
    assert [r for _, r in tl["compactions"]] == [c["reason"] for c in rec["compactions"]]
    assert max(y for _, y in tl["truth"]) <= rec["metrics"]["peak_truth_tokens"] + 0.5
    assert tl["threshold"] == _threshold(rec)
    assert tl["window"] == rec["settings"]["context_window"]
    # the policy's count at its check points, where it declares some (a reactive-only rule counts none)
    assert bool(tl["policy_count"]) == bool(_policy_of(rec).check_points), (len(tl["policy_count"]), name)
    assert len(tl["policy_count"]) == rec["metrics"]["check_points"], name
    fig = real(shown)
    assert rec["settings"]["policy"] in fig.axes[0].get_title()
    assert png.stat().st_size > 10_000


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("metric", ["billed_input_tokens", "cost"])
def test_grid_heatmap_is_over_the_policys_own_axes(name: str, metric: str, one_run: dict[str, dict[str, Any]],
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`--plot` of a 2 x 2 grid: one panel with the policy's two varied axes as its labelled axes, 2 x 2
    ticks and four filled cells (a policy of one axis: that axis's two rows, one unlabelled column); an
    unpriced model's cost cells read "n/a", not 0."""
    import sessiontools.report.replay_figures as rr

    figs: list[Any] = []
    real = rr.heatmap_figure

    def spy(records: Any, m: str) -> Any:
        figs.append(real(records, m))
        return figs[-1]

    monkeypatch.setattr(rr, "heatmap_figure", spy)
    svg = tmp_path / "g.svg"
    assert main(["replay", *_grid(name), "-f", "json", "-o", str(tmp_path / "g.json"), "--plot", str(svg),
                 "--plot-metric", metric, "--jobs", "1"]) == 0
    (fig,) = figs
    ax = fig.axes[0]
    axes = policy_axes(one_run[name]["settings"]["policy"])
    labels = {a.key: a.label for a in axes}
    grid = [OPTION_KEY[o] for o, _ in CASES[name][3]]
    # the case's grid is over the policy's own axes: two of them, or its one
    assert set(grid) <= set(labels) and len(grid) == min(2, len(axes)), (grid, axes)
    assert (ax.get_ylabel(), ax.get_xlabel()) == (labels[grid[0]], labels[grid[1]] if len(grid) == 2 else "")
    assert len(ax.get_yticks()) == 2 and len(ax.get_xticks()) == (2 if len(grid) == 2 else 1)
    cells = [t.get_text() for t in ax.texts]
    assert len(cells) == _grid_runs(name)
    if metric == "cost" and not _priced(one_run[name]):
        assert cells == ["n/a"] * len(cells)
    else:
        assert all(c not in ("n/a", "0") for c in cells), cells
    assert svg.stat().st_size > 5_000


@pytest.mark.parametrize("name", NAMES)
def test_fail_if_names_the_run_along_the_policys_axes(name: str, one_run: dict[str, dict[str, Any]],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A tripped gate exits 1 and names each run by its window and its policy's own axes (the limit,
    the percentage, reserve and keep), so the runs of a grid read apart."""
    assert main(["replay", *_grid(name), "--fail-if", "billed_input_tokens>0", "-f", "json", "-o", "/dev/null",
                 "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    gates = [line for line in err.splitlines() if line.startswith("gate ")]
    assert len(gates) == _grid_runs(name) and len(set(gates)) == len(gates)
    labels = [a.label for a in policy_axes(one_run[name]["settings"]["policy"])[1:]]
    for line in gates:
        assert f"policy {one_run[name]['settings']['policy']}" in line and "None" not in line
        assert all(label in line for label in labels if label != "W"), (labels, line)


@pytest.mark.parametrize("name", NAMES)
def test_export_writes_the_runs_replay_reports(name: str, one_run: dict[str, dict[str, Any]], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`export --replay-*` writes the replay rows `replay` reports for the same setting (the same
    numbers), with the agent, the policy's threshold and the cost null exactly when unpriced."""
    import polars as pl

    rec = one_run[name]
    s = rec["settings"]
    argv = ["export", str(_file(name)), "-o", str(tmp_path / "ds"), "--jobs", "1",
            "--replay-window", str(s["context_window"])]
    if s["policy"].startswith("pi-"):
        argv += ["--replay-reserve", str(s["reserve_tokens"]), "--replay-keep", str(s["keep_recent_tokens"])]
    if CASES[name][1]:
        argv += ["--replay-policy", CASES[name][1]]
    for opt, flag in (("auto_compact_limit", "--replay-auto-compact-limit"), ("autocompact_pct", "--replay-autocompact-pct")):
        if s.get(opt) is not None:
            argv += [flag, str(s[opt])]
    assert main(argv) == 0
    runs = pl.read_parquet(tmp_path / "ds" / "replay_runs" / "**" / "*.parquet", hive_partitioning=True)
    assert runs.height == 1
    row = runs.row(0, named=True)
    assert row["agent"] == rec["agent"] and row["policy"] == s["policy"] and row["threshold"] == _threshold(rec)
    for k in ("compactions", "overflows", "peak_truth_tokens", "billed_input_tokens", "cost"):
        assert row[k] == rec["metrics"][k], k
    assert row["unmetered_replies"] == rec["unmetered_replies"] is not None
    comps = pl.read_parquet(tmp_path / "ds" / "replay_compactions" / "**" / "*.parquet", hive_partitioning=True)
    assert comps.height == len(rec["compactions"])
    for k in ("threshold", "auto_compact_limit", "autocompact_pct"):  # the run's setting on each compaction
        assert set(comps[k]) == {row[k]}, k


def test_compaction_rows_tell_a_limit_grids_runs_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--compactions-output` of a Codex limit grid: each compaction row carries its run's limit and
    threshold (they were keyed by window, reserve 0 and keep 0 alone, so two limits' rows read alike)."""
    import polars as pl

    out = tmp_path / "c.csv"
    assert main(["replay", str(SAMPLES / "codex" / "codex-pair-a.jsonl"), "--auto-compact-limit", "17000,19500",
                 "--compactions-output", str(out), "-f", "json", "-o", str(tmp_path / "r.json"), "--jobs", "1"]) == 0
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    df = pl.read_csv(out)
    by = dict(df.group_by("auto_compact_limit").len().iter_rows())
    assert by == {r["settings"]["auto_compact_limit"]: len(r["compactions"]) for r in runs} and len(by) == 2
    assert dict(df.select("auto_compact_limit", "threshold").unique().iter_rows()) == {17000: 17000, 19500: 19500}


@pytest.mark.parametrize("name", NAMES)
def test_report_section_for_every_agent_and_policy(name: str, one_run: dict[str, dict[str, Any]], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`report` (with --policy for the crossed cases) replays the file: its row with the setting, its
    timeline figure, its cost or "-", the grid's heatmap; no "No session could be replayed", no "None"."""
    d = tmp_path / "in"
    d.mkdir()
    (d / _file(name).name).write_bytes(_file(name).read_bytes())
    out = tmp_path / "r.html"
    argv = ["report", str(d), "-o", str(out), "--jobs", "1", *_policy_args(name), *CASES[name][2]]
    assert main(argv) == 0
    html = out.read_text()
    section = html.split('<section id="replay">')[1].split("</section>")[0]
    rec = one_run[name]
    assert "No session could be replayed" not in section and "None" not in section
    assert _file(name).stem in section and "<figure>" in section
    assert _cell(rec) in section and rec["settings"]["policy"] in section
    assert ("$" in section.split("rec. match")[1]) == _priced(rec)
    assert "Pi None.x" not in html


def test_folder_totals_tell_a_policys_own_axes_apart(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A folder's totals (the table and the report's) have one row per setting of the policy's own axes,
    named along them ("64k/17k", "64k/19.5k"), not two rows both called "64k codex"."""
    from sessiontools.report.html_replay import replay_section

    monkeypatch.setenv("COLUMNS", "200")
    d = tmp_path / "in"
    d.mkdir()
    for f in ("codex/codex-pair-a.jsonl", "codex/codex-pair-b.jsonl"):
        (d / Path(f).name).write_bytes((SAMPLES / f).read_bytes())
    js = tmp_path / "r.json"
    argv = ["replay", str(d), "--context-window", "64000", "--auto-compact-limit", "17000,19500", "--jobs", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    totals = out.split("worst sessions")[0]
    assert totals.count("64k/17k") == 1 and totals.count("64k/19.5k") == 1 and "64k codex" not in totals
    assert main([*argv, "-f", "json", "-o", str(js)]) == 0
    html = replay_section({"runs": [RunRecord.from_dict(r) for r in json.loads(js.read_text())["runs"]]}, [])
    totals_html = html.split("Worst sessions")[0]
    assert totals_html.count(">64k/17k</td>") == 1 and totals_html.count(">64k/19.5k</td>") == 1


def test_totals_say_how_many_runs_were_priced(one_run: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of one agent, one priced and one not: the headline, the folder table and the report say
    the cost is over 1 of the 2 runs (never the priced sum as the total, never the unknown one as $0)."""
    from rich.console import Console

    from sessiontools.report.html_replay import replay_section
    from sessiontools.report.replay import replay_headline
    from sessiontools.report.replay_totals import folder_answer

    priced, unpriced = one_run["pi-under-codex"], dict(one_run["codex"])
    assert priced["metrics"]["cost"] is not None and unpriced["metrics"]["cost"] is None
    unpriced["agent"] = priced["agent"]  # one agent's two sessions at one setting
    unpriced["settings"] = priced["settings"]
    runs = [RunRecord.from_dict(priced), RunRecord.from_dict(unpriced)]
    head = replay_headline(runs)
    assert f"${priced['metrics']['cost']:.2f} over the 1 of 2 runs with a price" in head
    con = Console(width=200, record=True)
    con.print(folder_answer(runs, None, None))
    table = con.export_text()
    row = next(line for line in table.splitlines() if _cell(priced) in line and "/2" in line)
    assert "*" in row and "1/2" in row
    html = replay_section({"runs": runs}, [])
    assert "over the 1 of 2 runs with a price" in html and "1/2" in html


@pytest.mark.parametrize("name", ["pi", "codex", "claude-code", "claude-code-reactive"])
def test_a_grid_over_the_window_alone_is_not_one_cell(name: str, one_run: dict[str, dict[str, Any]]) -> None:
    """Three windows and nothing else varied: the heatmap has a cell per window (it summed Pi's three
    windows into one "reserve x keep" cell); with every axis varied, Pi's cells still sum the windows."""
    from sessiontools.report.replay_figures import heatmap_cells

    rec = one_run[name]
    runs = [RunRecord.from_dict({**rec, "settings": {**rec["settings"], "context_window": w}})
            for w in (24000, 32000, 48000)]
    cells = heatmap_cells(runs, "billed_input_tokens")
    assert cells["y"].key == "context_window" and cells["ys"] == [24000, 32000, 48000]
    assert [len(row) for row in cells["values"]] == [1, 1, 1] and not any(k > 1 for k in cells["summed_axes"].values())


def test_the_reserve_check_is_the_policys_in_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`replay`, `report` and `export --replay-*` share one rule (`cli.cmd_replay.check_grid`): a window
    below the default reserve is refused (exit 2) only for a policy whose threshold uses a reserve."""
    f = str(SAMPLES / "codex" / "codex-pair-a.jsonl")
    d = tmp_path / "in"
    d.mkdir()
    (d / "codex-pair-a.jsonl").write_bytes(Path(f).read_bytes())
    for policy, code in (("codex", 0), ("pi-1", 2)):
        assert main(["replay", f, "--policy", policy, "--context-window", "12000", "--reserve", "16384,20000",
                     "-f", "json", "-o", str(tmp_path / "r.json")]) == code
        assert main(["report", str(d), "--policy", policy, "--context-window", "12000", "--reserve", "20000",
                     "-o", str(tmp_path / "r.html"), "--jobs", "1"]) == code
        assert main(["export", f, "-o", str(tmp_path / f"ds-{policy}"), "--replay-policy", policy,
                     "--replay-window", "12000", "--jobs", "1"]) == code
    assert "not below --replay-window 12,000" in capsys.readouterr().err


#: policy -> (a sample, the options of one setting, two values of each of the policy's axes): values where
#: each axis the policy declares (`Policy.axes`) makes a difference on that sample, the others fixed
AXIS_PROBES: dict[str, tuple[str, list[str], dict[str, tuple[str, str]]]] = {
    "pi-0": ("pi0-pair-a.jsonl", ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
             {"--context-window": ("24000", "32000"), "--reserve": ("3000", "4000"), "--keep-recent": ("2000", "6000")}),
    "pi-1": ("pi1-pair-a.jsonl", ["--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
             {"--context-window": ("24000", "32000"), "--reserve": ("3000", "4000"), "--keep-recent": ("2000", "6000")}),
    # the window caps the limit at 90% of it: 18000 -> 16200 below the limit 17000
    "codex": ("codex/codex-pair-a.jsonl", ["--context-window", "24000", "--auto-compact-limit", "17000"],
              {"--context-window": ("18000", "24000"), "--auto-compact-limit": ("17000", "19500")}),
    "claude-code": ("claude-code/claude-threshold-15.jsonl", ["--context-window", "100000", "--autocompact-pct", "15"],
                    {"--context-window": ("100000", "120000"), "--autocompact-pct": ("14", "15")}),
    "claude-code-reactive": ("claude-code/claude-reactive.jsonl", ["--context-window", "13000"],
                             {"--context-window": ("13000", "16000")}),
}
_OPTION_OF = {key: option for option, key in OPTION_KEY.items()}


@pytest.mark.parametrize(("policy", "key"), [(str(n), a.key) for n in POLICIES for a in policy_axes(n)])
def test_no_declared_axis_is_ignored(policy: str, key: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Each axis a registered policy declares (`Policy.axes`, what grids, tables, heatmaps and gates vary)
    is one its rule reads: two values of it, the others fixed, give two runs whose numbers (metrics or
    compactions) differ. A declared axis the rule ignores (Claude Code's percentage on its reactive-only
    rule, whose threshold is W) would draw a grid of identical cells."""
    assert policy in AXIS_PROBES, f"{policy}: no sample and values in AXIS_PROBES"
    sample, base, values = AXIS_PROBES[policy]
    option = _OPTION_OF[key]
    assert option in values, f"{policy}: no two values of {option} in AXIS_PROBES"
    opts = dict(zip(base[::2], base[1::2], strict=True))
    opts[option] = ",".join(values[option])
    out = tmp_path / "r.json"
    argv = [str(SAMPLES / sample), "--policy", policy, *(x for kv in opts.items() for x in kv)]
    assert main(["replay", *argv, "-f", "json", "-o", str(out), "--jobs", "1"]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [str(r["settings"][key]) for r in runs] == list(values[option]), [r["settings"] for r in runs]
    first, second = ((r["metrics"], r["compactions"]) for r in runs)
    assert first != second, f"{policy}: {option} {' and '.join(values[option])} give the same run: the axis is ignored"
