"""`read._native.price_sums` (sessiontools/read/_price.c, through `replay.cost._c_sums`) is
`replay.cost._price_loop` in C: the same floats (bit for bit, the sign of a zero included; a NaN is a
NaN), the same cache-bust list, and the timestamp memo (`seconds`, shared by a path's runs) left with
the same contents in the same order: on every run of every sample under a grid, under every cache
style, with and without prices, on generated runs, and on odd values one at a time, where it either
prices as Python does or hands the run to Python (`price_run` then gives what the Python loop gives,
or raises what it raises)."""

from __future__ import annotations

import json
import math
import random
import struct
from collections.abc import Callable
from dataclasses import fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay import cost, replay_source
from sessiontools.replay.cost import CacheStyle, Classes, price_run
from sessiontools.replay.records import RequestPoint, TruthSource
from tests.conftest import SAMPLES, shared_sessions

pytestmark = pytest.mark.skipif(cost.c_price_sums is None, reason="the C extension is not built here")

PRICES = {"input": 3e-6, "cache_read": 3e-7, "cache_write": 3.75e-6, "output": 1.5e-5}
SAMPLE_FILES = sorted(p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*.jsonl"))


def _bits(v: Any) -> Any:
    """`v` in a form equal only for the same types and the same doubles (-0.0 is not 0.0; NaNs are
    one: their payloads are the hardware's, whichever operand order a compiler chose)."""
    if type(v) is float:
        return ("nan",) if math.isnan(v) else ("f", struct.pack("<d", v))
    if isinstance(v, list | tuple):
        return (type(v).__name__, tuple(_bits(x) for x in v))
    if isinstance(v, cost.RunCost):
        return _bits([getattr(v, f.name) for f in fields(v)])
    return (type(v).__name__, v)


def _both(run, recorded, cache, prices, overhead, rec_cost, mc: dict, mp: dict):  # type: ignore[no-untyped-def]
    """(the C's sums, the Python loop's), the C filling memo `mc` and Python `mp`."""
    units = cost._unit_prices(cache, prices)
    c = cost._c_sums(run, recorded, cache, prices is not None, overhead, rec_cost, mc, units)
    return c, cost._price_loop(run, recorded, cache, prices is not None, overhead, rec_cost, mp, units)


def _with_gaps(run):  # type: ignore[no-untyped-def]
    """The run with its requests 40 s apart, every fifth 400 s after the one before (past a 60 s TTL),
    one timestamp unreadable, one absent, one empty and one without a zone (local time)."""
    t, reqs = 1.8e9, []
    for i, p in enumerate(run.requests):
        t += 400 if i % 5 == 4 else 40
        ts = datetime.fromtimestamp(t, UTC).isoformat()
        ts = {7: "not a time", 11: None, 13: "", 17: ts[:19]}.get(i, ts)
        reqs.append(p._replace(timestamp=ts))
    return replace(run, requests=reqs)


def _replays(path: Path) -> list:
    return replay_source(load_source(path), windows=[100000, 24000], reserves=[4000, 16384], keeps=[2000, 20000],
                         policy=None, all_leaves=True)


def _hold_every_run(path: Path) -> int:
    """Every run of every path of `path`, as recorded and with TTL gaps, under its cache model and each
    style (other hit, TTL, after-bust and floor), with its prices, the test's and none: the C takes
    each and gives the Python loop's sums; the runs of a path share one memo, as a grid's do."""
    checked = 0
    for pr in _replays(path):
        caches = [pr.cache] + [replace(pr.cache, style=s, hit=0.9, after_bust=100.0, input_floor=3.0, ttl_s=60.0)
                               for s in CacheStyle]
        mc: dict = {}
        mp: dict = {}
        for run in [r for original in pr.runs for r in (original, _with_gaps(original))]:
            for cache in caches:
                for prices in (pr.price.per_token, PRICES, None):
                    c, p = _both(run, pr.recorded.classes, cache, prices, pr.truth.overhead, pr.recorded.costs, mc, mp)
                    assert c is not None, (path.name, run.settings, cache)
                    assert _bits(c) == _bits(p), (path.name, run.settings, cache, prices)
                    assert list(mc.items()) == list(mp.items())
                    checked += 1
    return checked


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_the_c_prices_every_sample_run_as_python(name: str) -> None:
    assert _hold_every_run(SAMPLES / name) >= 2 * 2 * 4 * 2


@pytest.mark.parametrize("path", shared_sessions() or [None], ids=lambda p: p.name if p else "absent")
def test_the_c_prices_every_real_session_run_as_python(path: Path | None) -> None:
    if path is None:
        pytest.skip("../shared/sessions is absent")
    assert _hold_every_run(path) >= 2 * 2 * 4 * 2


def _base() -> Any:
    """A path of pi0-pair-a replayed where it compacts, and its run with the most compactions."""
    st = json.loads((SAMPLES / "manifest.json").read_text())["pi0-pair-a"]
    prs = replay_source(load_source(SAMPLES / "pi0-pair-a.jsonl"), windows=[st["window"]], reserves=[st["reserve"]],
                        keeps=[st["keep"] // 2, st["keep"]], policy=None)
    pr = prs[0]
    run = max(pr.runs, key=lambda r: len(r.compactions))
    assert len(run.compactions) >= 2 and any(p.recorded_context for p in run.requests)
    return pr, run


def _generated(rng: random.Random, base) -> tuple:  # type: ignore[no-untyped-def]
    """A generated run (truths, epochs that skip and go back, overflows, recorded requests, the same
    point twice, odd floats, a pool of timestamps), its recorded classes and costs, cache and prices."""
    odd = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, -3.0, 5e-324]
    num = (lambda: rng.choice(odd)) if rng.random() < 0.1 else (lambda: rng.choice([rng.uniform(0, 9e4), 0.0, 100.0]))
    comps = [replace(base.compactions[0], summary_tokens=num(), kept_tokens=num()) for _ in range(rng.randint(0, 4))]
    stamps = [datetime.fromtimestamp(1.8e9 + rng.choice([0, 30, 299, 300, 301, 4000]) * k, UTC).isoformat()
              for k in range(8)] + ["not a time", None, "", "2026-12-04T10:00:00", "2026-12-04T10:00:00+05:00"]
    reqs: list = []
    epoch = 0
    for _ in range(rng.randint(0, 40)):
        if reqs and rng.random() < 0.1:
            reqs.append(reqs[-1])  # the same point object again
            continue
        epoch = max(0, min(len(comps), epoch + rng.choice([0, 0, 0, 1, 2, -1])))
        source = rng.choice([TruthSource.MODEL, TruthSource.RECORDED, TruthSource.PROVIDER, "recorded", "model"])
        reqs.append(RequestPoint(rng.randint(0, 30), None, num(), source, None, rng.random() < 0.1,
                                 rng.choice([0, 1, 500, 2**60]), rng.choice(stamps), epoch, rng.random() < 0.3))
    recorded = {i: Classes(num(), num(), num(), num()) if rng.random() < 0.9 else None
                for i in range(31) if rng.random() < 0.5}
    rec_cost = {i: num() for i in range(31) if rng.random() < 0.5}
    cache = cost.CacheModel(rng.choice(list(CacheStyle)), hit=rng.uniform(0, 1.2), ttl_s=rng.choice([60.0, 300.0, 3600.0]),
                            after_bust=num(), input_floor=num())
    prices = rng.choice([None, PRICES, {"input": 1e-6, "output": num()}, {k: num() for k in PRICES}])
    return replace(base, requests=reqs, compactions=comps), recorded, rec_cost, cache, prices, num()


def test_the_c_prices_generated_runs_as_python() -> None:
    """800 generated runs (`_generated`), a memo shared by each ten, as a path's grid shares one."""
    _, base = _base()
    rng = random.Random(20261204)
    mc: dict = {}
    mp: dict = {}
    for k in range(800):
        if k % 10 == 0:
            mc, mp = {}, {}
        run, recorded, rec_cost, cache, prices, overhead = _generated(rng, base)
        c, p = _both(run, recorded, cache, prices, overhead, rec_cost, mc, mp)
        assert c is not None and _bits(c) == _bits(p), k
        assert list(mc.items()) == list(mp.items()), k


class _Float(float):
    """A float whose arithmetic and order are not a float's (Python's loop runs them)."""

    def __add__(self, o: object) -> float:
        return 1.0

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __add__

    def __lt__(self, o: object) -> bool:
        return True

    __gt__ = __lt__


class _Int(int):
    """An int whose float is not its value."""

    def __float__(self) -> float:
        return 2.5


class _Point(RequestPoint):
    @property
    def truth(self) -> float:  # type: ignore[override]
        return 1.0


class _Classes(Classes):
    """Classes that unpack to other values."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((1.0, 2.0, 3.0, 4.0))


#: Values a reader or a caller could hand in where a float, an int, a bool or a str is expected.
ODD: list[Any] = [None, True, False, 0, 1, 7, -1, 2**53 + 1, 10**400, 1.5, -0.0, math.nan, math.inf, -math.inf,
                  _Float(3.0), _Int(3), "recorded", "x", b"x", (), [], 1j]


def _outcome(fn: Callable[[], Any], memo: dict) -> tuple:
    """What `fn` gave (or raised) and the memo after it."""
    try:
        got = ("gave", _bits(fn()))
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        got = ("raised", type(e), str(e))
    return got, list(memo.items())


def _same_as_python(run, recorded, cache, prices, overhead, rec_cost, seeds: dict) -> bool:  # type: ignore[no-untyped-def]
    """`price_run` with the C and without it give (or raise) the same, the memo the same after: True
    when the C took the run."""
    mc, mp = dict(seeds), dict(seeds)
    took = []
    c_sums = cost.c_price_sums

    def spy(*a: Any) -> Any:
        got = c_sums(*a)
        took.append(got is not None)
        return got

    try:
        cost.c_price_sums = spy
        with_c = _outcome(lambda: price_run(run, recorded, cache, prices, overhead, rec_cost, mc), mc)
        cost.c_price_sums = None
        alone = _outcome(lambda: price_run(run, recorded, cache, prices, overhead, rec_cost, mp), mp)
    finally:
        cost.c_price_sums = c_sums
    assert with_c == alone
    return took == [True]


def test_odd_values_one_at_a_time_price_as_python() -> None:
    """Every field of a request point (at the first request, a recorded one, a modelled one, the
    first after a compaction, a rejected one), of its recorded classes and cost, of a compaction, of
    the cache model, the prices, the overhead and a memo entry replaced by each odd value, and odd
    points and classes: the C prices as Python or hands the run over; it takes the plain ones."""
    pr, run = _base()
    reqs = run.requests
    at = {0, next(i for i, p in enumerate(reqs) if p.recorded_context),
          next(i for i, p in enumerate(reqs) if not p.recorded_context and not p.overflow),
          next(i for i, p in enumerate(reqs) if p.epoch > 0)}
    at |= set([i for i, p in enumerate(reqs) if p.overflow][:1])
    args = (run, pr.recorded.classes, pr.cache, pr.price.per_token or PRICES, pr.truth.overhead, pr.recorded.costs)
    seeds = dict(list(pr.seconds.items())[:5])
    assert _same_as_python(*args, {}) and _same_as_python(*args, seeds)
    took = gave_up = 0

    def check(*a: Any) -> None:
        nonlocal took, gave_up
        if _same_as_python(*a, seeds):
            took += 1
        else:
            gave_up += 1

    def with_points(points: list) -> Any:
        return replace(run, requests=points)

    for i in at:
        p = reqs[i]
        for name in RequestPoint._fields:
            for v in ODD:
                check(with_points(reqs[:i] + [p._replace(**{name: v})] + reqs[i + 1:]), *args[1:])
        for q in (tuple(p), _Point(*p), tuple.__new__(RequestPoint, (*p, 0)), tuple.__new__(RequestPoint, p[:9])):
            check(with_points(reqs[:i] + [q] + reqs[i + 1:]), *args[1:])
        c = pr.recorded.classes.get(p.base_index)
        if c is not None:
            odd_classes = [c._replace(**{f: v}) for f in Classes._fields for v in ODD]
            for oc in [*odd_classes, tuple(c), list(c), _Classes(*c), c[:3], None]:
                check(run, {**pr.recorded.classes, p.base_index: oc}, *args[2:])
            for v in ODD:
                check(*args[:5], {**pr.recorded.costs, p.base_index: v})
    for k in range(len(run.compactions)):
        for f in ("summary_tokens", "kept_tokens", "summarization_input_tokens"):
            for v in ODD:
                comps = [*run.compactions]
                comps[k] = replace(comps[k], **{f: v})
                check(replace(run, compactions=comps), *args[1:])
    for f in ("hit", "ttl_s", "after_bust", "input_floor"):
        for v in ODD:
            check(args[0], args[1], replace(pr.cache, **{f: v}), *args[3:])
    for v in ODD:
        for key in PRICES:
            check(*args[:3], {**PRICES, key: v}, *args[4:])
        check(*args[:4], v, args[5])
        mc = {**seeds, reqs[1].timestamp: v}
        assert _same_as_python(*args, mc) in (True, False)
    for prices in ({}, {"input": 1e-6}):
        check(*args[:3], prices, *args[4:])
    assert took > 100 and gave_up > 100, (took, gave_up)


def test_the_c_relies_on_truth_sources_comparing_as_str() -> None:
    """The C compares a truth source of TruthSource's type (or a str) as a str: TruthSource has str's
    equality (a member of another type is handed to Python)."""
    assert TruthSource.__eq__ is str.__eq__ and TruthSource.__hash__ is str.__hash__
