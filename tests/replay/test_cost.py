"""Issue 13: replay prices prompt caching. At recorded settings the agent's cost is the recorded
one; a recording replayed with its pair's settings predicts the pair's recorded cost; compactions
carry the cache they throw away."""

from __future__ import annotations

import json

import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay import replay_source, run_record
from sessiontools.replay.cost import CacheStyle, Classes, RecordedCall, learn_cache, modelled_classes
from sessiontools.testing import SessionBuilder
from tests.conftest import SAMPLES

MANIFEST = SAMPLES / "manifest.json"
PAIRS = [("pi0-pair-a", "pi0-pair-b"), ("pi0-pair-b", "pi0-pair-a"), ("pi1-pair-a", "pi1-pair-b"),
         ("pi1-pair-b", "pi1-pair-a")]


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


def _replay(name: str, st: dict, **kw: object) -> list:
    return replay_source(load_source(SAMPLES / f"{name}.jsonl"), windows=[st["window"]], reserves=[st["reserve"]],
                          keeps=[st["keep"]], policy=None, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(_manifest()))
def test_recorded_settings_cost_is_the_recorded_cost(name: str) -> None:
    """cost_agent equals the recorded usage.cost total within 1% on every path of every sample."""
    for pr in _replay(name, _manifest()[name], all_leaves=True):
        rec = run_record(pr, pr.runs[0])
        assert rec["recorded_cost_agent"] is not None
        assert rec["metrics"]["cost_agent"] == pytest.approx(rec["recorded_cost_agent"], rel=0.01)
        m = rec["metrics"]
        assert m["cost"] == pytest.approx(m["cost_agent"] + m["cost_summarization"], abs=2e-6)


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_pair_settings_predict_the_pairs_cost(source: str, target: str) -> None:
    """Each recording replayed with its pair's settings predicts the pair's recorded agent cost within 3%;
    every compaction the replay decides on has a positive cache-bust cost."""
    st = _manifest()[target]
    (pa,) = _replay(source, st)
    (pb,) = _replay(target, st)
    ra, rb = run_record(pa, pa.runs[0]), run_record(pb, pb.runs[0])
    assert ra["metrics"]["cost_agent"] == pytest.approx(rb["recorded_cost_agent"], rel=0.03)
    assert ra["compactions"] and all(c["cache_bust_cost"] > 0 for c in ra["compactions"])


def test_rejected_overflow_attempts_are_counted_not_billed() -> None:
    st = _manifest()["pi0-overflow"]
    (pr,) = _replay("pi0-overflow", st)
    rec = run_record(pr, pr.runs[0])
    assert rec["metrics"]["overflows"] > 0 and rec["metrics"]["rejected_input_tokens"] > 0
    assert rec["metrics"]["cost_agent"] == pytest.approx(rec["recorded_cost_agent"], rel=0.01)


def _call(t: float, i: int, cr: int, cw: int, after: bool = False) -> RecordedCall:
    return RecordedCall(t, Classes(i, cr, cw, 10), after)


def test_cache_styles_ttl_and_bust_are_learnt() -> None:
    anthropic = learn_cache([_call(0, 3, 0, 4000), _call(10, 1, 4000, 500), _call(20, 1, 4500, 300),
                             _call(30, 2, 1500, 2000, after=True)])
    assert anthropic.style == CacheStyle.WRITE and anthropic.hit == pytest.approx(1.0, abs=0.01)
    assert anthropic.after_bust == 1500 and anthropic.ttl_s == 300
    auto = learn_cache([_call(0, 1000, 0, 0), _call(10, 100, 960, 0), _call(4000, 50, 1000, 0)])
    assert auto.style == CacheStyle.AUTO and auto.ttl_s == 3600  # a hit after more than 5 minutes
    assert learn_cache([_call(0, 1000, 0, 0), _call(10, 1100, 0, 0)]).style == CacheStyle.NONE
    w = modelled_classes(anthropic, 6000, 20, 4000)
    assert (w.cache_read, w.cache_write + w.input, w.output) == (4000, 2000, 20)
    a = modelled_classes(auto, 6000, 20, 4000)
    assert (a.input, a.cache_read, a.cache_write) == (2000, 4000, 0)


def test_no_prices_says_so() -> None:
    """A model with no catalogue prices and no recorded cost: costs are null and the source says none."""
    b = SessionBuilder(provider="my-gateway", model="my-model")
    b.user("hello " * 50)
    b.assistant("hi", usage={"input": 900, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 910})
    (pr,) = replay_source(b.session(), windows=[32000], reserves=[4000], keeps=[2000], policy=None)
    rec = run_record(pr, pr.runs[0])
    assert rec["prices"]["source"] == "none" and rec["metrics"]["cost"] is None
    assert rec["metrics"]["input_tokens"] == 900


def test_a_grid_prices_each_run_as_alone_with_the_timestamps_read_once() -> None:
    """The runs of one path share `SessionReplay.seconds` (each request timestamp read once for the
    whole grid): every run's cost is the one a fresh reading gives, and the memo holds `iso_seconds`
    of the runs' own timestamps (the modelled requests': a request in the recorded context keeps its
    recorded classes and reads none)."""
    from sessiontools.read.values import iso_seconds
    from sessiontools.replay.cost import price_run

    st = _manifest()["pi0-pair-a"]
    (pr,) = replay_source(load_source(SAMPLES / "pi0-pair-a.jsonl"), windows=[st["window"]],
                          reserves=[st["reserve"] // 2, st["reserve"], st["reserve"] * 2],
                          keeps=[st["keep"] // 2, st["keep"]], policy=None)
    assert len(pr.runs) == 6 and pr.cache.style != CacheStyle.NONE
    shared = [pr.cost_of(run) for run in pr.runs]
    alone = [price_run(run, pr.recorded.classes, pr.cache, pr.price.per_token, pr.truth.overhead,
                       pr.recorded.costs) for run in pr.runs]
    assert shared == alone and len({c.cache_read_tokens for c in shared}) > 1
    stamps = {p.timestamp for run in pr.runs for p in run.requests if not p.overflow}
    assert pr.seconds and set(pr.seconds) <= stamps
    assert all(v == iso_seconds(k) for k, v in pr.seconds.items())
