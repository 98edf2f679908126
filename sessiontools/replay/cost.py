"""What a replayed run costs, with prompt caching: a cache model learnt from the recorded usage.

Token classes (what providers bill): uncached `input`, `cache_read`, `cache_write`, `output`.

**Cache model** (`CacheModel`, learnt per session from its own requests by `learn_cache`):
- `style`: `write` when the provider reports cache writes (Anthropic-style `cacheWrite`: the new part
  of a prompt is written to the cache and billed at the write price), `auto` when it reports only
  cache reads (OpenAI-, DeepSeek-style automatic caching: the new part is plain input), `none` when
  no request ever read the cache.
- `hit`: the share of the previous request's prompt read back from the cache by the next request in
  the same unbroken prefix (median over the recorded pairs; the lab's 64-token blocks give ~0.99).
- `ttl_s`: 300 s (5-minute cache), or 3600 s when the recording shows a cache hit after a gap
  longer than 5 minutes (1-hour cache). Requests further apart than the TTL read nothing.
- `after_bust`: tokens still read right after a compaction (the fixed prefix: system prompt and
  tools), the median over the recorded requests that followed a recorded compaction, else 0.
- `input_floor`: for `write` style, the uncached input tokens of a request whose new part is
  written (Anthropic bills a few tokens after the last breakpoint as input).
A compaction breaks the prefix (the summary replaces the history); so do a context edit and a
branch switch in the recording (the recorded usage shows them, and replayed requests that keep the
recorded context keep their recorded classes).

**Pricing a run** (`price_run`): a request whose context is the recorded one keeps its recorded
classes and its recorded itemised cost (so, at recorded settings, `cost_agent` is the recorded cost,
whichever model answered each request); any other request gets the cache model's classes, its prefix shared with the previous
answered request (none across a compaction, a TTL gap, or when the style is `none`). A request the
provider rejects as too long is not billed: no provider in the catalogue bills a rejected (HTTP 400)
request; its prompt is counted in `rejected_input_tokens`. Summary requests (the policy's own) are
priced as uncached input plus output (`cost_summarization`). A compaction's `cache_bust_cost` is
what the next answered request paid over a cache hit of the prefix it kept (its prompt minus what
was new since the compaction), at the miss price minus the read price.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from sessiontools.read.values import iso_seconds
from sessiontools.replay.records import (
    ReplayRun,
    RequestPoint,
    SimCompaction,
    TruthSource,
    json_field,
    read_json,
    write_json,
)

FIVE_MINUTES, ONE_HOUR = 300.0, 3600.0


class CacheStyle(StrEnum):
    WRITE = "write"
    AUTO = "auto"
    NONE = "none"


class Classes(NamedTuple):
    """Token classes of one request (a named tuple: a session makes one per request, cheaply)."""

    input: float
    cache_read: float
    cache_write: float
    output: float

    def cost(self, prices: Mapping[str, float]) -> float:
        return (self.input * prices.get("input", 0.0) + self.cache_read * prices.get("cache_read", 0.0)
                + self.cache_write * prices.get("cache_write", 0.0) + self.output * prices.get("output", 0.0))


def _round4(v: float) -> float:
    return round(v, 4)


@dataclass(frozen=True, slots=True)
class CacheModel:
    """A session's cache model (the module's docstring says what each field means). Its JSON form
    (`cache_model` of a run record) is its fields in order, `after_bust` and `input_floor` as whole
    `..._tokens`, `hit` to 4 decimals."""

    style: CacheStyle = field(metadata=json_field(write=str, read=CacheStyle))
    hit: float = field(default=0.0, metadata=json_field(write=_round4))
    ttl_s: float = FIVE_MINUTES
    after_bust: float = field(default=0.0, metadata=json_field("after_bust_tokens", round))
    input_floor: float = field(default=0.0, metadata=json_field("input_floor_tokens", round))
    pairs: int = 0  # recorded request pairs it was learnt from

    def to_dict(self) -> dict[str, Any]:
        return write_json(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CacheModel:
        return read_json(cls, d)


class RecordedCall(NamedTuple):
    """One recorded answered request, for learning: time, classes, and whether a compaction (or a
    context rewrite) came between it and the previous one."""

    time: float | None
    classes: Classes
    after_compaction: bool


def learn_cache(calls: Sequence[RecordedCall]) -> CacheModel:
    """The cache model of a session from its recorded answered requests, in order."""
    if not any(c.classes.cache_read > 0 for c in calls):
        return CacheModel(CacheStyle.NONE, pairs=0)
    style = CacheStyle.WRITE if any(c.classes.cache_write > 0 for c in calls) else CacheStyle.AUTO
    ratios, late_hits, busts, floors = [], 0, [], []
    write = style == CacheStyle.WRITE
    for (t0, (p_in, p_read, p_write, _), _), (t1, c, after) in zip(calls, calls[1:], strict=False):
        gap = t1 - t0 if t1 is not None and t0 is not None else 0.0
        prev_prompt = p_in + p_read + p_write
        if after:
            if gap <= FIVE_MINUTES:
                busts.append(c.cache_read)
            continue
        if gap > FIVE_MINUTES:
            late_hits += c.cache_read > 0.5 * prev_prompt > 0
            continue
        if prev_prompt > 0:
            ratios.append(min(1.0, c.cache_read / prev_prompt))
        if write and c.cache_write > 0:
            floors.append(c.input)
    return CacheModel(
        style,
        hit=statistics.median(ratios) if ratios else 1.0,
        ttl_s=ONE_HOUR if late_hits else FIVE_MINUTES,
        after_bust=statistics.median(busts) if busts else 0.0,
        input_floor=statistics.median(floors) if floors else 0.0,
        pairs=len(ratios),
    )


def modelled_classes(cache: CacheModel, prompt: float, output: float, read: float) -> Classes:
    """Classes of a prompt of which `read` tokens come from the cache."""
    read = max(0.0, min(read, prompt))
    rest = prompt - read
    if cache.style == CacheStyle.WRITE:
        floor = min(rest, cache.input_floor)
        return Classes(floor, read, rest - floor, output)
    return Classes(rest, read, 0.0, output)


@dataclass(slots=True)
class RunCost:
    """Token classes and costs of one run (costs None without prices)."""

    input_tokens: float = 0.0
    cache_read_tokens: float = 0.0
    cache_write_tokens: float = 0.0
    output_tokens: float = 0.0
    rejected_input_tokens: float = 0.0
    cost_agent: float | None = None
    cost_summarization: float | None = None
    cache_bust_costs: list[float | None] = field(default_factory=list)  # per compaction, in order

    @property
    def cost(self) -> float | None:
        if self.cost_agent is None or self.cost_summarization is None:
            return None
        return self.cost_agent + self.cost_summarization


def _miss_price(cache: CacheModel, prices: Mapping[str, float]) -> float:
    return prices.get("cache_write", 0.0) if cache.style == CacheStyle.WRITE else prices.get("input", 0.0)


def _unit_prices(cache: CacheModel, prices: Mapping[str, float] | None) -> tuple[float, float, float, float, float]:
    """Dollars per token of (input, cache read, cache write, output, a cache miss); zeros without prices."""
    if prices is None:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    return (prices.get("input", 0.0), prices.get("cache_read", 0.0), prices.get("cache_write", 0.0),
            prices.get("output", 0.0), _miss_price(cache, prices))


try:
    # `_price_loop`'s sums in C (sessiontools/read/_price.c), None for a run it does not take (odd
    # types: Python prices it). Bench s0049, one run of its 25-setting grid (460 requests), min of 7:
    # `price_run` 260-310 -> 17 us (the C's loop 15 us); the grid's instructions (cgdiff.sh grid r)
    # 616M -> 535M.
    from sessiontools.read._native import price_sums as c_price_sums
except ImportError:  # not built on this machine: `_price_loop` prices every run, with the same floats
    c_price_sums = None


def price_run(
    run: ReplayRun, recorded: Mapping[int, Classes], cache: CacheModel, prices: Mapping[str, float] | None,
    overhead: float = 0.0, recorded_cost: Mapping[int, float] | None = None,
    seconds: dict[str | None, float | None] | None = None,
) -> RunCost:
    """Token classes and costs of `run` (see the module docstring). `recorded`: the recorded classes
    of each answered request, by base index, and `recorded_cost` its itemised recorded cost (the
    truth for a request whose context is the recorded one, whatever model answered it);
    `overhead`: the fixed prefix (system prompt, tools); `seconds`: `iso_seconds` of the timestamps
    already read, filled as it goes (the runs of one path share it: every run's requests carry the
    same timestamps, and a grid prices each run)."""
    rec_cost = recorded_cost or {}
    memo: dict[str | None, float | None] = {} if seconds is None else seconds
    units = _unit_prices(cache, prices)
    args = (run, recorded, cache, prices is not None, overhead, rec_cost, memo, units)
    sums = _c_sums(*args) if c_price_sums is not None else None
    if sums is None:
        sums = _price_loop(*args)
    t_in, t_read, t_write, t_out, rejected, agent, bust = sums
    out = RunCost(t_in, t_read, t_write, t_out, rejected, cache_bust_costs=bust)
    if prices is not None:
        p_in, _, _, p_out, _ = units
        out.cost_agent = agent
        out.cost_summarization = sum(c.summarization_input_tokens * p_in + c.summarization_output_tokens * p_out
                                     for c in run.compactions)
    return out


#: What `_price_loop` gives: the four classes' totals, the rejected input, the agent cost, the
#: cache-bust costs (per compaction).
Sums = tuple[float, float, float, float, float, float, list[float | None]]


def _c_sums(run: ReplayRun, recorded: Mapping[int, Classes], cache: CacheModel, priced: bool, overhead: float,
            rec_cost: Mapping[int, float], memo: dict[str | None, float | None],
            units: tuple[float, float, float, float, float]) -> Sums | None:
    """`_price_loop(...)` by `c_price_sums`, or None where the C does not take the run (it has then
    read and filled `memo` only as the Python loop does up to that point)."""
    assert c_price_sums is not None
    flags = (cache.style != CacheStyle.NONE) | (cache.style == CacheStyle.WRITE) << 1 | priced << 2
    sums: Sums | None = c_price_sums(run.requests, run.compactions, recorded, rec_cost, memo,
                                     (RequestPoint, Classes, SimCompaction, TruthSource.RECORDED, iso_seconds),
                                     flags, cache.ttl_s, cache.hit, cache.after_bust, cache.input_floor, overhead,
                                     *units)
    return sums


def _price_loop(run: ReplayRun, recorded: Mapping[int, Classes], cache: CacheModel, priced: bool, overhead: float,
                rec_cost: Mapping[int, float], memo: dict[str | None, float | None],
                units: tuple[float, float, float, float, float]) -> Sums:
    """`price_run`'s loop over the run's requests: the rule (`c_price_sums` does it in C, where it
    takes the run, with the same floats; tests/replay/test_cost_native.py holds the two equal)."""
    # One loop with the per-request rules inlined (the cache read below, `modelled_classes`,
    # `Classes.cost`, the sums: each term in the same order, so the same floats): a grid prices every
    # run, and those calls were most of a run record's cost (s0049's 25-setting grid: 28.5 -> 7.2 ms).
    # tests/replay/test_cost.py holds it to the per-call form, run by run.
    caching, write = cache.style != CacheStyle.NONE, cache.style == CacheStyle.WRITE
    ttl, hit_share, after_bust, input_floor = cache.ttl_s, cache.hit, cache.after_bust, cache.input_floor
    p_in, p_read, p_write, p_out, miss = units
    recorded_get, recorded_source = recorded.get, TruthSource.RECORDED
    t_in = t_read = t_write = t_out = rejected = agent = 0.0
    prev: RequestPoint | None = None
    prev_seconds: float | None = None
    prev_seconds_of: RequestPoint | None = None  # whose timestamp `prev_seconds` is
    bust: list[float | None] = [None] * len(run.compactions)
    for p in run.requests:
        if p.overflow:
            rejected += p.truth
            continue
        rec = recorded_get(p.base_index) if p.recorded_context or p.truth_source == recorded_source else None
        if rec is not None:
            c_in, c_read, c_write, c_out = rec
        else:
            truth = p.truth
            # The cache reads back `hit` of the previous answered request's prompt; nothing after a TTL
            # gap or with no caching; the fixed prefix (`after_bust`) across a compaction.
            read = 0.0
            if caching and prev is not None:
                if prev_seconds_of is not prev:
                    prev_seconds, prev_seconds_of = _seconds(memo, prev.timestamp), prev
                t1 = _seconds(memo, p.timestamp)
                prev_seconds_of, t0, prev_seconds = p, prev_seconds, t1
                if t0 is not None and t1 is not None and t1 - t0 > ttl:
                    read = 0.0
                elif p.epoch != prev.epoch:
                    read = after_bust
                else:
                    read = hit_share * prev.truth
            read = max(0.0, min(read, truth))  # `modelled_classes(cache, truth, output, read)`
            rest = truth - read
            if write:
                c_in = min(rest, input_floor)
                c_read, c_write = read, rest - c_in
            else:
                c_in, c_read, c_write = rest, read, 0.0
            c_out = float(p.output)
        t_in += c_in
        t_read += c_read
        t_write += c_write
        t_out += c_out
        if priced:
            agent += (rec_cost[p.base_index] if rec is not None and p.base_index in rec_cost
                      else c_in * p_in + c_read * p_read + c_write * p_write + c_out * p_out)
            last_epoch = prev.epoch if prev is not None else 0
            if p.epoch > last_epoch:  # compactions [last_epoch, p.epoch) came before this request
                for k in range(last_epoch, p.epoch - 1):
                    bust[k] = 0.0
                comp = run.compactions[p.epoch - 1]
                kept = min(p.truth, overhead + comp.summary_tokens + comp.kept_tokens)
                bust[p.epoch - 1] = max(0.0, kept - c_read) * (miss - p_read)
        prev = p
    return t_in, t_read, t_write, t_out, rejected, agent, bust


def _seconds(memo: dict[str | None, float | None], ts: str | None) -> float | None:
    """`iso_seconds(ts)`, read once per `memo` (the one reading of a timestamp stays `iso_seconds`)."""
    try:
        return memo[ts]
    except KeyError:
        memo[ts] = s = iso_seconds(ts)
        return s
