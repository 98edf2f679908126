"""Rule 10 of `replay.invariants`: a total of a cost over runs says how many runs were priced and
never draws an unknown cost as 0; the report's headline, folder totals and heatmap cells use it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sessiontools.replay.frames import runs_frame
from sessiontools.replay.invariants import PricedTotal, priced_total, priced_total_violations
from sessiontools.replay.records import ReplaySettings
from sessiontools.replay.run_document import RunRecord
from sessiontools.report.replay import _score, priced_words, runs_cost
from sessiontools.report.replay_totals import totals_frame
from sessiontools.testing import run_record

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "out"


@pytest.mark.parametrize(("costs", "want"), [
    ([0.5, None, 0.25], PricedTotal(0.75, 2, 3)),
    ([None, None], PricedTotal(None, 0, 2)),
    ([0.0], PricedTotal(0.0, 1, 1)),  # a price of $0 is known: a total of 0
    ([], PricedTotal(None, 0, 0)),
])
def test_priced_total(costs: list[float | None], want: PricedTotal) -> None:
    got = priced_total(costs)
    assert got == want and priced_total_violations(got, costs) == []


@pytest.mark.parametrize(("total", "costs", "rule"), [
    (PricedTotal(0.0, 0, 2), [None, None], "no run was priced"),  # unknown drawn as $0
    (PricedTotal(0.5, 2, 2), [0.5, None], "runs said priced"),  # the priced sum shown as every run's
    (PricedTotal(0.7, 1, 2), [0.5, None], "not the sum"),
])
def test_a_total_that_breaks_the_rule_is_found(total: PricedTotal, costs: list[float | None], rule: str) -> None:
    violations = priced_total_violations(total, costs)
    assert any(v.startswith("priced totals:") and rule in v for v in violations), violations


def test_the_golden_runs_totals_keep_the_rule() -> None:
    """Over every run of the samples' replay documents: the headline's total, and each setting's row of
    the folder totals (a cost only where a run was priced, null where none was)."""
    runs = [RunRecord.from_dict(r) for r in orjson.loads((GOLDEN / "replay-samples-demo.json").read_bytes())["runs"]]
    costs = [r.metrics.cost for r in runs]
    assert None in costs and any(c is not None for c in costs)  # the samples hold both
    total = runs_cost(runs)
    assert priced_total_violations(total, costs) == []
    assert f"over the {total.priced} of {total.runs} runs with a price" in priced_words(total)
    for row in totals_frame(runs_frame(runs)).iter_rows(named=True):
        assert (row["cost"] is None) == (row["priced"] == 0), row


def test_the_frame_totals_are_the_rows_totals() -> None:
    """Rule 10 is written for rows (`priced_total`) and for frames (`priced_total_aggs`, the folder
    totals): over settings whose runs are all priced, none, or some (a price of $0 included), every
    totals row is the `priced_total` of its runs' costs."""
    per_setting = {8000: [0.5, None, 0.25], 12000: [None, None], 16000: [0.0, 0.125], 20000: [None, 0.0, None]}
    runs = [run_record(ReplaySettings(64000, reserve, 20000, "pi-0"), agent="pi", session=f"s{k}.jsonl", cost=c)
            for reserve, costs in per_setting.items() for k, c in enumerate(costs)]
    rows = {r["reserve_tokens"]: r for r in totals_frame(runs_frame(runs)).iter_rows(named=True)}
    assert sorted(rows) == sorted(per_setting)
    for reserve, costs in per_setting.items():
        row = rows[reserve]
        assert PricedTotal(row["cost"], row["priced"], row["runs"]) == priced_total(costs), (reserve, row)


def test_an_unpriced_setting_is_not_the_cheapest() -> None:
    """The headline's best setting: with as many overflows, a setting whose runs are priced is not beaten
    by one whose unknown costs would sum to $0."""
    priced = [run_record(ReplaySettings(64000, 8000, 20000, "pi-0"), agent="pi", cost=0.4)]
    unknown = [run_record(ReplaySettings(64000, 16000, 20000, "pi-0"), agent="pi")]
    assert min([unknown, priced], key=_score) is priced
    assert priced_words(runs_cost(unknown)) == "no price known"
