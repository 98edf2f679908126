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


def _priced_per_call(run, recorded, cache, prices, overhead, recorded_cost):  # type: ignore[no-untyped-def]
    """`price_run` in its per-call form (the reference its inlined loop is held to): the cache read
    after the previous answered request, `modelled_classes`, `Classes.cost`, summed in order."""
    from sessiontools.read.values import iso_seconds
    from sessiontools.replay.cost import RunCost, _miss_price
    from sessiontools.replay.records import TruthSource

    def read_of(prev, p):  # type: ignore[no-untyped-def]
        if cache.style == CacheStyle.NONE or prev is None:
            return 0.0
        t0, t1 = iso_seconds(prev.timestamp), iso_seconds(p.timestamp)
        if t0 is not None and t1 is not None and t1 - t0 > cache.ttl_s:
            return 0.0
        return cache.after_bust if p.epoch != prev.epoch else cache.hit * prev.truth

    out, agent, prev = RunCost(), 0.0, None
    bust: list = [None] * len(run.compactions)
    for p in run.requests:
        if p.overflow:
            out.rejected_input_tokens += p.truth
            continue
        rec = recorded.get(p.base_index) if p.recorded_context or p.truth_source == TruthSource.RECORDED else None
        c = rec if rec is not None else modelled_classes(cache, p.truth, float(p.output), read_of(prev, p))
        out.input_tokens += c.input
        out.cache_read_tokens += c.cache_read
        out.cache_write_tokens += c.cache_write
        out.output_tokens += c.output
        if prices is not None:
            agent += recorded_cost[p.base_index] if rec is not None and p.base_index in recorded_cost else c.cost(prices)
            last = prev.epoch if prev is not None else 0
            if p.epoch > last:
                for k in range(last, p.epoch - 1):
                    bust[k] = 0.0
                comp = run.compactions[p.epoch - 1]
                hit = min(p.truth, overhead + comp.summary_tokens + comp.kept_tokens)
                bust[p.epoch - 1] = max(0.0, hit - c.cache_read) * (_miss_price(cache, prices) - prices.get("cache_read", 0.0))
        prev = p
    out.cache_bust_costs = bust
    if prices is not None:
        out.cost_agent = agent
        out.cost_summarization = sum(c.summarization_input_tokens * prices.get("input", 0.0)
                                     + c.summarization_output_tokens * prices.get("output", 0.0) for c in run.compactions)
    return out


@pytest.mark.parametrize("c_loop", [False, True], ids=["python", "c"])
@pytest.mark.parametrize("name", sorted(_manifest()))
def test_the_inlined_pricing_loop_is_the_per_call_rule(name: str, c_loop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of every sample under a grid (and under each other cache style, with and without
    prices) prices to the same floats as the per-call form: the loop inlines it, it does not change it;
    by the Python loop (`_price_loop`, the C left out) and by the C where it is built (`c_price_sums`;
    test_cost_native.py holds the two equal bit for bit)."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from sessiontools.replay import cost
    from sessiontools.replay.cost import price_run

    if c_loop and cost.c_price_sums is None:
        pytest.skip("the C extension is not built here")
    if not c_loop:
        monkeypatch.setattr(cost, "c_price_sums", None)

    st = _manifest()[name]
    prs = replay_source(load_source(SAMPLES / f"{name}.jsonl"), windows=[st["window"], st["window"] // 2],
                        reserves=[st["reserve"] // 2, st["reserve"]], keeps=[st["keep"] // 2, st["keep"]],
                        policy=None, all_leaves=True)
    def with_gaps(run):  # type: ignore[no-untyped-def]
        """The run with its requests 40 s apart, every fifth 400 s after the one before (past a 60 s
        TTL), one timestamp unreadable and one absent."""
        t, reqs = 1.8e9, []
        for i, p in enumerate(run.requests):
            t += 400 if i % 5 == 4 else 40
            ts = "not a time" if i == 7 else None if i == 11 else datetime.fromtimestamp(t, UTC).isoformat()
            reqs.append(p._replace(timestamp=ts))
        return replace(run, requests=reqs)

    checked = 0
    for pr in prs:
        prices = pr.price.per_token or {"input": 3e-6, "cache_read": 3e-7, "cache_write": 3.75e-6, "output": 1.5e-5}
        caches = [pr.cache] + [replace(pr.cache, style=s, hit=0.9, after_bust=100.0, input_floor=3.0, ttl_s=60.0)
                               for s in CacheStyle]
        for run in [r for original in pr.runs for r in (original, with_gaps(original))]:
            for cache in caches:
                for per_token in (prices, None):
                    args = (run, pr.recorded.classes, cache, per_token, pr.truth.overhead, pr.recorded.costs)
                    assert price_run(*args, seconds={}) == _priced_per_call(*args), (name, run.settings, cache)
                    checked += 1
    assert checked >= 2 * 8 * 8
