"""Issue 26's done-means over a synthetic folder of 288 sessions of every agent (tests/folder.py):
at COLUMNS=100, replay (a 3-setting grid), estimate-error and diff-summaries each print at most 60
lines, none wider than 100 columns, with a totals row per setting / estimator / section, and the
totals agree with the JSON's rows."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.report.layout import tokens
from tests.conftest import SAMPLES
from tests.folder import build_folder

pytestmark = pytest.mark.skipif(not any((SAMPLES / "codex").glob("*.jsonl")), reason="sample_sessions/ is empty")

GRID = ["--context-window", "200k", "--reserve", "8k,16k,32k"]
MAX_LINES, WIDTH = 60, 100


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _json(folder: Path, *args: str) -> dict:  # type: ignore[type-arg]
    """The command's JSON (written to a file: stdout takes bytes)."""
    out = folder.parent / f"{folder.name}.json"
    code, _, err = _run(*args, "--format", "json", "-o", str(out))
    assert code == 0, err
    return json.loads(out.read_bytes())


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("folder")
    build_folder(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(WIDTH))
        yield root


@pytest.fixture(scope="module")
def outputs(folder: Path) -> dict[str, tuple[int, str, str]]:
    """Each command once, as a new user runs it (table on stdout)."""
    return {
        "replay": _run("replay", str(folder), *GRID),
        "estimate-error": _run("estimate-error", str(folder)),
        "diff-summaries": _run("diff-summaries", str(folder)),
    }


def _rows(out: str, first: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.split()[:1] == [first]]


@pytest.mark.parametrize("command", ["replay", "estimate-error", "diff-summaries"])
def test_one_screen(command: str, outputs: dict[str, tuple[int, str, str]]) -> None:
    """At most 60 lines, none wider than 100 columns, exit 0."""
    code, out, err = outputs[command]
    lines = out.splitlines()
    assert code == 0, err
    assert len(lines) <= MAX_LINES, f"{command}: {len(lines)} lines"
    assert max(len(line) for line in lines) <= WIDTH
    words = " ".join(out.split())
    assert "more sessions: --per-session" in words or "more paths with summaries: --per-session" in words


def test_replay_totals_per_setting_agree_with_the_runs(folder: Path, outputs: dict[str, tuple[int, str, str]]) -> None:
    """One totals row per Pi setting (and one per other agent's policy); each row's sessions,
    compactions, overflows and priced count are the sums of the JSON's runs at that setting."""
    code, out, _ = outputs["replay"]
    assert code == 0
    runs = _json(folder, "replay", str(folder), *GRID)["runs"]
    for reserve in (8000, 16000, 32000):
        label = f"200k/{reserve // 1000}k/20k"
        (row,) = [r for r in _rows(out, "pi") if label in r]
        at = [r for r in runs if r.get("agent", "pi") == "pi" and r["settings"]["reserve_tokens"] == reserve]
        sess, comp = int(row[2].replace(",", "")), int(row[3].replace(",", ""))
        ovf = int(row[6].replace(",", ""))
        assert sess == len(at) == 240
        assert comp == sum(r["metrics"]["compactions"] for r in at)
        assert ovf == sum(r["metrics"]["overflows"] for r in at)
        priced = sum(1 for r in at if r["metrics"]["cost"] is not None)
        assert row[-1] == f"{priced}/{len(at)}"
        assert 0 < priced < len(at)  # minimax/MiniMax-M2.5 has no price: the cost says it is partial
        assert row[-2].endswith("*")
    assert _rows(out, "codex") and _rows(out, "claude-code")
    assert "worst sessions" in out and "... and 283 more sessions: --per-session" in out


def test_replay_per_session_and_group_by(folder: Path) -> None:
    """--per-session gives every session's table back; --group-by week one row per week and setting."""
    sub = folder / "codex"
    code, out, _ = _run("replay", str(sub), *GRID, "--per-session")
    assert code == 0 and out.count("session: ") >= 24
    code, out, _ = _run("replay", str(folder / "pi"), *GRID, "--group-by", "week")
    weeks = {r[0] for r in (line.split() for line in out.splitlines()) if r and r[0].startswith("2026-W")}
    assert code == 0 and len(weeks) >= 5
    assert len(_rows(out, sorted(weeks)[0])) == 3  # one row per setting in each week


def test_estimate_error_totals_per_estimator_and_group(folder: Path, outputs: dict[str, tuple[int, str, str]]) -> None:
    """A row per estimator over every request, an `all` row per group table whose MAPE is the overall
    MAPE, the hybrids' note, and the worst sessions."""
    code, out, _ = outputs["estimate-error"]
    summary = _json(folder, "estimate-error", str(folder))
    for est in summary["estimators"]:
        assert any(line.startswith(est + " ") for line in out.splitlines())
    (all_row,) = _rows(out, "all")
    assert int(all_row[1].replace(",", "")) == summary["requests"]
    assert all_row[2] == f"{summary['estimators']['chars4']['mape'] * 100:.0f}"
    assert "hybrids" in out and "judged against each other" in out
    assert "worst sessions by MAPE of pi" in out


def test_estimate_error_fits_40_lines_with_the_details_on_demand(folder: Path,
                                                                  outputs: dict[str, tuple[int, str, str]]) -> None:
    """Issue 26 asked for one screen: estimate-error's folder answer is at most 40 lines (was 60). What
    it says in brief is in full behind --per-session: each column's legend, the compaction decisions
    at every threshold T with what early/late mean, every session's row."""
    from sessiontools.report.estimate_totals import SCREEN_LINES

    code, out, _ = outputs["estimate-error"]
    lines = out.splitlines()
    assert code == 0 and SCREEN_LINES == 40 and len(lines) <= SCREEN_LINES, f"{len(lines)} lines:\n{out}"
    summary = _json(folder, "estimate-error", str(folder))
    thresholds = [th["tokens"] for th in summary["thresholds"]]
    middle = thresholds[len(thresholds) // 2]
    (line,) = [" ".join(b.split("\nout of")[0].split()) for b in out.split("\n\n") if b.startswith("compaction decisions")]
    by_key = {(x["estimator"], x["threshold"]): x for x in summary["timing"]}
    assert f"T={middle:,}" in line and f"pi {by_key[('pi', middle)]['early']}/{by_key[('pi', middle)]['late']}" in line
    assert "--per-session" in out and "more sessions" in out
    code, full, _ = _run("estimate-error", str(folder), "--per-session")
    assert code == 0
    assert "compaction decisions: early / late requests at each threshold T" in full
    assert all(f"T={tokens(th)}" in full for th in thresholds)
    assert "A/E: median of actual / estimate" in full and "p95 |e|: 95th percentile" in full
    assert "early = E > T while A <= T" in full
    assert sum(1 for s in summary["sessions"] if s["session"].rsplit("/", 1)[-1].removesuffix(".jsonl")[-12:] in full) \
        == len(summary["sessions"])


def test_estimate_error_group_by_project(folder: Path) -> None:
    code, out, _ = _run("estimate-error", str(folder / "pi"), "--group-by", "project", "--estimators", "chars4,pi")
    assert code == 0
    assert "per project and estimator" in out
    assert sum(1 for line in out.splitlines() if line.startswith("/home/dev/") or line.startswith("/srv/")) == 5


def test_diff_summaries_totals_per_section(folder: Path, outputs: dict[str, tuple[int, str, str]]) -> None:
    """Retention per section with an `all sections` row equal to the JSON's dropped items; the paths
    without summaries in one line; per-agent rows with an `all` row."""
    code, out, _ = outputs["diff-summaries"]
    metrics = _json(folder, "diff-summaries", str(folder))["metrics"]
    (row,) = [line.split() for line in out.splitlines() if line.startswith("all sections")]
    assert int(row[6].replace(",", "")) == metrics["dropped_items"]
    assert sum(1 for line in out.splitlines() if "no summaries" in line) == 1
    without = [c for c in _json(folder, "diff-summaries", str(folder))["chains"] if not c["summaries"]]
    n = len(without)
    assert n > 100 and f"{n} path(s) in {len({c['session'] for c in without})} session(s) have no summaries" in out
    assert {r[0] for r in _rows(out, "pi") + _rows(out, "codex") + _rows(out, "claude-code")} == {
        "pi", "codex", "claude-code"}
    assert _rows(out, "all")


def test_diff_summaries_group_by_model_and_provider(folder: Path) -> None:
    """The model is the transcript's (its requests'), not "(unknown)": every Pi model of the folder
    that compacts has its own row, and no row is "(unknown)"."""
    from tests.folder import PI_MODELS

    code, out, _ = _run("diff-summaries", str(folder / "pi"), "--group-by", "model")
    assert code == 0
    assert "(unknown)" not in out
    shown = {f"{p}/{m}" for p, m in PI_MODELS if any(line.startswith(f"{p}/{m}") for line in out.splitlines())}
    assert len(shown) >= 2, out
    code, out, _ = _run("diff-summaries", str(folder / "pi"), "--group-by", "provider")
    assert code == 0 and "(unknown)" not in out
    assert sum(1 for p, _ in PI_MODELS if any(line.split()[:1] == [p] for line in out.splitlines())) >= 2, out


def test_diff_summaries_per_session(folder: Path) -> None:
    code, out, _ = _run("diff-summaries", str(folder / "codex"), "--per-session")
    assert code == 0 and out.count("summaries on ") >= 16


#: A guard against the old cost (a rich table per file: 6-24x the JSON), not the target: the 1.5x
#: target is judged by `make bench` (`inspect_table_vs_json`), where timing belongs; a loaded CI
#: machine gave 1.51 here with the table code unchanged.
GUARD = 3.0


def test_inspect_table_of_1000_files_is_not_many_times_its_json(tmp_path: Path) -> None:
    """Issue 26: the table of 1,000 files against the JSON, measured in one run (best of two rounds
    each, interleaved); the folder answer prints totals, not 1,000 blocks, and --per-session streams
    plain lines (not 1,000 rich tables). The 1.5x target itself is `make bench`'s."""
    import time

    from tests.folder import pi_session

    for i in range(1000):
        rel, data = pi_session(i)
        p = tmp_path / "s" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    files = list((tmp_path / "s").rglob("*.jsonl"))
    assert len(files) == 1000
    best = {"table": float("inf"), "json": float("inf"), "per-session": float("inf")}
    args = {"table": ["--format", "table"], "json": ["--format", "json"], "per-session": ["--per-session"]}
    for _ in range(2):
        for fmt in best:
            out = tmp_path / f"{fmt}.{'json' if fmt == 'json' else 'txt'}"
            t = time.perf_counter()
            code, _, err = _run("inspect", str(tmp_path / "s"), *args[fmt], "-o", str(out), "--jobs", "1")
            best[fmt] = min(best[fmt], time.perf_counter() - t)
            assert code == 0, err
    text = (tmp_path / "table.txt").read_text()
    assert len(text.splitlines()) <= MAX_LINES and "totals per agent" in text
    every = (tmp_path / "per-session.txt").read_text().splitlines()
    assert sum(1 for line in every if line.startswith("== ")) == 1000 and max(len(x) for x in every) <= WIDTH
    print(f"inspect --per-session over 1,000 files: {best['per-session']:.2f}s, "
          f"ratio {best['per-session'] / best['json']:.2f}")
    assert best["per-session"] <= GUARD * best["json"], best
    print(f"inspect over 1,000 files: table {best['table']:.2f}s, json {best['json']:.2f}s, "
          f"ratio {best['table'] / best['json']:.2f}")
    assert best["table"] <= GUARD * best["json"], best
