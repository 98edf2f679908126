"""The report's timeline of a session and its row of the replay table carry the same numbers: both are
made from the one run record of the session's first setting (after the prior refit, so under the
same truth model and priors), for every agent. What `render_report` is handed by the `report`
command is checked, not a second replay.

Measured on the samples (40 sessions at W 16k/24k): settings, compactions (each reason, in order),
requests, overflows and the peak agree on all 40; so do the timeline's policy counts (one per check
point, `ReplayRun.check_counts`: before, the count of a check point with no request of its own was
dropped, 19 of 40 runs one or two short of `check_points`) and its recorded points (one per recorded
compaction: before, one with no answered request before it was dropped, 3 of 40).
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

GRID = ["--context-window", "16k,24k", "--reserve", "3000", "--keep-recent", "4000", "--jobs", "1"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The replay document and the timelines `report` renders its page from."""
    import sessiontools.report.html as html

    seen: dict[str, Any] = {}
    real = html.render_report

    def capture(**kwargs: Any) -> str:
        seen.update(kwargs)  # (the JSON of the typed records, below, for the comparisons)
        seen["typed"] = kwargs["replay"]["runs"]
        seen["replay"] = {"runs": [r.to_dict() for r in seen["typed"]]}
        seen["timelines"] = [tl.to_dict() for tl in kwargs["timelines"]]
        return real(**kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(html, "render_report", capture)
    try:
        out = tmp_path_factory.mktemp("report") / "r.html"
        assert main(["report", str(SAMPLES), "-o", str(out), *GRID]) == 0
    finally:
        mp.undo()
    return seen


def _first_runs(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    first: dict[str, dict[str, Any]] = {}
    for r in runs:
        first.setdefault(r["session"], r)
    return first


def test_every_session_has_the_timeline_of_its_first_setting(rendered: dict[str, Any]) -> None:
    runs, timelines = rendered["replay"]["runs"], rendered["timelines"]
    first = _first_runs(runs)
    assert len(first) >= 30 and sorted(tl["session"] for tl in timelines) == sorted(first)
    assert {r["agent"] for r in first.values()} == {"pi", "codex", "claude-code"}
    # each session's first run carries the timeline the page draws (once, beside the table)
    assert sum(r.timeline is not None for r in rendered["typed"]) == len(timelines)


def test_the_timeline_and_the_table_carry_the_same_numbers(rendered: dict[str, Any]) -> None:
    first = _first_runs(rendered["replay"]["runs"])
    for tl in rendered["timelines"]:
        r = first[tl["session"]]
        m, where = r["metrics"], tl["session"]
        assert (tl["window"], tl["threshold"]) == (r["settings"]["context_window"], r["settings"]["threshold"]), where
        assert [reason for _, reason in tl["compactions"]] == [c["reason"] for c in r["compactions"]], where
        requests = r["requests_from_recorded_usage"] + r["requests_from_model"] + r["requests_from_provider_error"]
        assert len(tl["truth"]) == requests, where
        truths = [t for _, t in tl["truth"]]
        assert sum(t > tl["window"] for t in truths) == m["overflows"] - m["failed_compactions"], where
        assert round(max(truths)) <= m["peak_truth_tokens"], where  # (the peak also counts summarisation requests)
        assert len(tl["policy_count"]) == m["check_points"], where
        assert len(tl["recorded"]) == r["recorded_match"]["recorded"] + m["user_compactions"], where


def test_the_comparison_can_fail(rendered: dict[str, Any]) -> None:
    """A timeline of the session's other setting (another run) is told apart."""
    runs = rendered["replay"]["runs"]
    first = _first_runs(runs)
    tl = rendered["timelines"][0]
    other = next(r for r in runs if r["session"] == tl["session"] and r is not first[tl["session"]])
    assert (tl["window"], tl["threshold"]) != (other["settings"]["context_window"], other["settings"]["threshold"])
