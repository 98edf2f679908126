"""What the requests of a Claude Code or Codex session cost, priced as their users are billed.

Neither CLI records a cost (Claude Code 1.0.x wrote ``costUSD``; no transcript read here has it), so
a request is priced from its usage classes with the table
``sessiontools/data/agent_prices.json`` (LiteLLM's price list, the one ccusage prices with, and models.dev's
first-party DeepSeek and MiniMax entries for the ids LiteLLM lacks; regenerate with
``python -m lab.extract_prices``). Dollars per token, by class:

- ``input`` (uncached), ``cache_read``, ``output`` (Codex: reasoning tokens are inside it, as OpenAI
  bills them), ``cache_write`` at the 5-minute write price and its ``cache_write_1h`` part at the
  1-hour write price (twice the input price; Claude Code records the split in
  ``usage.cache_creation``);
- long context: a request whose prompt (input + cache read + cache write) is above the model's
  ``above_tokens`` (200k for Claude Sonnet 4 / 4.5, 272k for GPT-5.4) pays the ``long_context``
  rates on every class, output too (Anthropic's and OpenAI's rule). ccusage instead prices only
  the tokens of each class past 200k at the higher rate; at Claude Code's 200k window no request
  reaches either threshold.

Lookup (`agent_price`): the recorded id exactly, then normalised the way ccusage matches ids: a
provider prefix (``anthropic/``, ``openai/``) and a bracketed tag (``[1m]``) dropped, ``.`` or
``@`` between version parts read as ``-`` (``claude-opus-4.5``, ``claude-sonnet-4@20250514``), and a
date suffix (``-20251101``, ``-2025-11-01``) dropped on both sides; then the aliases below. The
provider is the recorded one when it is ``anthropic`` or ``openai``; else (none recorded, or a
provider id of the user's own: Codex rollouts record ``codex``, a proxy's name, ...) it is inferred
from the id (``claude-`` -> anthropic, ``gpt-``/``o3``/``o4``/``codex-`` -> openai), as ccusage
prices by model id alone. A gateway's id (``MiniMax-...`` -> minimax, ``glm-...`` -> zai,
``deepseek-...`` -> deepseek: the Anthropic-compatible endpoints Claude Code is pointed at with
``ANTHROPIC_BASE_URL``, which it records under ``anthropic``) is priced from that provider's LiteLLM
entry, else from its models.dev entry (``deepseek-v4-pro``, ``MiniMax-M2.7``: the catalogue ccusage
20.0.24 embeds beside LiteLLM's and prices such ids from), as ccusage does; an id is never matched against the other provider's table (``openai``
with ``claude-...``) nor across model versions (``claude-opus-4-9`` is no ``claude-opus-4-8``). A model the table does not
have is not priced: its requests are counted apart (`SessionCost.unpriced`), never as $0.

Rates that changed on a date (``periods``: DeepSeek V4 from 2026-08-16 16:00 UTC, peak hours
01:00-04:00 and 06:00-10:00 UTC Monday to Friday at twice the off-peak rate) are picked by the
request's recorded timestamp, as DeepSeek bills and ccusage 20.0.24 prices; a request without one
gets the base rates.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from sessiontools.read.values import iso_seconds, real
from sessiontools.transcript.model import Cost, Request, Usage

#: Recorded ids the price list does not publish, and the id it prices them under.
ALIASES = {"gpt-5.3-spark": "gpt-5.3-codex-spark"}

_PROVIDERS = ("anthropic", "openai")
#: Model ids of the Anthropic-compatible gateways Claude Code users reach through ANTHROPIC_BASE_URL
#: (MiniMax, Z.ai's GLM, DeepSeek): Claude Code records their own id under its `anthropic` provider.
_GATEWAY_IDS = (("minimax-", "minimax"), ("glm-", "zai"), ("deepseek-", "deepseek"))
_DATE = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_TAG = re.compile(r"\[[^\]]*\]$")
_VERSION_SEP = re.compile(r"(?<=\d)[.@](?=\d)")


@dataclass(frozen=True, slots=True)
class Rates:
    """Dollars per token by class."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float

    @classmethod
    def per_million(cls, d: Mapping[str, Any]) -> Rates:
        def f(k: str, default: float = 0.0) -> float:
            n = real(d.get(k), None)
            return n / 1e6 if n is not None else default

        inp = f("input")
        return cls(inp, f("output"), f("cache_read"), f("cache_write"), f("cache_write_1h", f("cache_write")))


@dataclass(frozen=True, slots=True)
class Period:
    """Rates from `start` (epoch seconds) on; `peak` rates in the peak hours (UTC) of Monday to Friday."""

    start: float
    rates: Rates
    peak: Rates | None = None
    peak_hours: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, d: Mapping[str, Any]) -> Period | None:
        start = iso_seconds(d.get("from"))
        if start is None:
            return None
        peak = d.get("peak") or {}
        hours = tuple((int(a), int(b)) for a, b in peak.get("hours_utc") or ())
        return cls(start, Rates.per_million(d["cost_per_million"]),
                   Rates.per_million(peak["cost_per_million"]) if peak else None, hours)

    def rates_at(self, t: float) -> Rates:
        if self.peak is not None:
            day, hour = time.gmtime(t).tm_wday, time.gmtime(t).tm_hour
            if day < 5 and any(a <= hour < b for a, b in self.peak_hours):
                return self.peak
        return self.rates


@dataclass(frozen=True, slots=True)
class AgentPrice:
    provider: str
    id: str
    rates: Rates
    above_tokens: int | None = None  # prompt size past which `long_context` applies
    long_context: Rates | None = None
    periods: tuple[Period, ...] = ()  # later rates by date (DeepSeek's peak / off-peak billing)

    def rates_for(self, prompt: int, timestamp: str | None = None) -> Rates:
        """The rates of a request of this prompt size made at `timestamp` (without one: the base rates)."""
        if self.long_context is not None and self.above_tokens is not None and prompt > self.above_tokens:
            return self.long_context
        t = iso_seconds(timestamp) if self.periods else None
        if t is not None:
            for period in reversed(self.periods):
                if t >= period.start:
                    return period.rates_at(t)
        return self.rates


#: The price table's file, beside the package's modules. It is its own file (24 KB), not a section of
#: the 400 KB models.json (Pi's catalogue, which `replay` reads): parsing that whole file was most of
#: what pricing cost an `inspect` run for the few prices it needs (issue 28).
_TABLE_FILE = "agent_prices.json"


def _catalogue_bytes() -> bytes:
    """`sessiontools/data/agent_prices.json`: read as the file beside the package's modules, else (a
    zipped install) through importlib.resources. (importlib.resources, with the zipfile and tempfile
    modules it imports, was a third of what pricing cost every `inspect` run: issue 28.)"""
    import os

    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", _TABLE_FILE), "rb") as f:
            return f.read()
    except OSError:
        from importlib import resources

        return resources.files("sessiontools").joinpath(f"data/{_TABLE_FILE}").read_bytes()


@lru_cache(maxsize=1)
def _table() -> tuple[dict[tuple[str, str], AgentPrice], dict[tuple[str, str], AgentPrice]]:
    section = orjson.loads(_catalogue_bytes())
    exact: dict[tuple[str, str], AgentPrice] = {}
    normal: dict[tuple[str, str], AgentPrice] = {}
    for m in section.get("models") or []:
        lc = m.get("long_context")
        periods = sorted((p for p in map(Period.parse, m.get("periods") or ()) if p), key=lambda p: p.start)
        price = AgentPrice(m["provider"], m["id"], Rates.per_million(m["cost_per_million"]),
                           lc.get("above_tokens") if lc else None,
                           Rates.per_million(lc["cost_per_million"]) if lc else None, tuple(periods))
        exact[(price.provider, price.id)] = price
        # a dated id and its undated twin share prices; the undated entry wins where both exist
        key = (price.provider, normalise(price.id))
        if key not in normal or price.id == key[1]:
            normal[key] = price
    return exact, normal


def normalise(model: str) -> str:
    """A recorded model id as the price table is keyed (see the module docstring)."""
    m = model.strip().lower()
    if "/" in m:
        m = m.rsplit("/", 1)[1]
    m = _TAG.sub("", m)
    m = _VERSION_SEP.sub("-", m)
    return _DATE.sub("", m)


def infer_provider(model: str) -> str | None:
    """The provider a provider-less id belongs to, when the id says (else None)."""
    m = model.strip().lower()
    head = m.split("/", 1)[0] if "/" in m else None
    if head in ("anthropic", "openai"):
        return head
    bare = m.rsplit("/", 1)[-1]
    if bare.startswith("claude-"):
        return "anthropic"
    if bare.startswith(("gpt-", "o1", "o3", "o4", "codex-")):
        return "openai"
    for prefix, provider in _GATEWAY_IDS:
        if bare.startswith(prefix):
            return provider
    return None


def agent_price(provider: str | None, model: str | None) -> AgentPrice | None:
    """The price of a recorded (provider, model), or None when the table has no such model."""
    if not isinstance(model, str) or not model:
        return None
    exact, normal = _table()
    prov = provider.lower() if isinstance(provider, str) and provider else None
    inferred = infer_provider(model)
    if prov not in _PROVIDERS:  # none recorded, or a provider id of the user's own (Codex's `codex`, a proxy)
        prov = inferred
    elif inferred is not None and inferred not in _PROVIDERS:  # a gateway's model behind the Anthropic API
        prov = inferred
    if prov is None:
        return None
    hit = exact.get((prov, model))
    if hit is not None:
        return hit
    key = normalise(model)
    return normal.get((prov, key)) or normal.get((prov, normalise(ALIASES.get(key, key))))


def usage_cost(usage: Usage, price: AgentPrice, timestamp: str | None = None) -> Cost:
    """The itemised cost of one request's usage at `price`, made at `timestamp` (``cache_write`` holds
    both write prices)."""
    r = price.rates_for(usage.prompt, timestamp)
    hour = min(usage.cache_write_1h, usage.cache_write)
    inp, read, out = usage.input * r.input, usage.cache_read * r.cache_read, usage.output * r.output
    write = (usage.cache_write - hour) * r.cache_write + hour * r.cache_write_1h
    return Cost(inp, read, write, out, inp + read + write + out)


def request_cost(request: Request, prices: dict[Any, AgentPrice | None] | None = None) -> tuple[Cost | None, str]:
    """A request's cost and where it comes from: ``recorded`` (the file's own), ``catalogue`` (priced
    here), or ``none`` (no recorded cost and a model the table does not have). This is the one rule
    for what a recorded request cost: replay's ``cost_agent`` at the recorded settings is the sum of
    these over the requests it keeps. `prices`: `agent_price`'s answers so far, by (provider, model)."""
    if request.usage.cost is not None:
        return request.usage.cost, "recorded"
    if prices is None:
        price = agent_price(request.provider, request.model)
    else:  # (once per model of a session, not per request)
        key = (request.provider, request.model)
        try:
            price = prices[key]
        except KeyError:
            price = prices[key] = agent_price(*key)
        except TypeError:  # (an unhashable model: a reader may pass any JSON value)
            price = agent_price(*key)
    if price is None:
        return None, "none"
    return usage_cost(request.usage, price, request.timestamp), "catalogue"


@dataclass(slots=True)
class SessionCost:
    """What a session's billed requests cost, by class, and which could not be priced."""

    total: float = 0.0
    by_class: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("input", "cache_read", "cache_write", "output"), 0.0))
    sources: Counter[str] = field(default_factory=Counter)  # requests by cost source
    unpriced: Counter[str] = field(default_factory=Counter)  # requests without a price, by model

    @property
    def source(self) -> str:
        """``recorded`` when every costed request has its own recorded cost, ``catalogue`` when any
        was priced from the table, ``none`` when no request has a cost."""
        if self.sources["catalogue"]:
            return "catalogue"
        return "recorded" if self.sources["recorded"] else "none"

    def to_dict(self) -> dict[str, Any]:
        none = self.source == "none"
        return {"cost": None if none else round(self.total, 6), "cost_source": self.source,
                "cost_by_class": None if none else {k: round(v, 6) for k, v in self.by_class.items()},
                "unpriced_requests": sum(self.unpriced.values()),
                "unpriced_models": dict(sorted(self.unpriced.items()))}


#: A price as `session_cost` applies it: the price, its base rates (None: rates by date, `periods`,
#: asked of `rates_for`), the prompt size past which its long-context rates apply (None: none), those.
_Priced = tuple[AgentPrice, "Rates | None", "int | None", "Rates | None"]


def _priced(price: AgentPrice | None) -> _Priced | None:
    if price is None:
        return None
    long = price.long_context is not None and price.above_tokens is not None
    return (price, None if price.periods else price.rates, price.above_tokens if long else None,
            price.long_context if long else None)


def session_cost(requests: Iterable[Request]) -> SessionCost:
    """`request_cost` summed over a session's billed requests (`session_cost_of` their usages)."""
    return session_cost_of((r.provider, r.model, r.timestamp, u.cost, u.input, u.cache_read, u.cache_write,
                            u.output, u.cache_write_1h) for r in requests for u in (r.usage,))


#: What `session_cost_of` reads of a request: provider, model, timestamp, recorded cost (or None),
#: input, cache read, cache write, output and the 1h part of cache write.
Billed = tuple[Any, Any, "str | None", "Cost | None", int, int, int, int, int]


def session_cost_of(items: Iterable[Billed]) -> SessionCost:
    """`request_cost` summed over a session's billed requests, each as `Billed` (a reader's rows
    are priced without a `Request` each: `model.BilledRows`). Its arithmetic is `usage_cost`'s,
    inlined (no `Cost` per request: most of what pricing cost `inspect`, issue 28): the same
    products and the same additions in the same order, so the same floats
    (tests/transcript/test_prices.py holds the sums equal, not close)."""
    out = SessionCost()
    prices: dict[Any, _Priced | None] = {}
    total = c_in = c_read = c_write = c_out = 0.0
    n_recorded = n_catalogue = n_none = 0
    order: list[str] = []  # (the sources in the order first met, as `Counter` += kept them)
    unpriced = out.unpriced
    last: Any = (object(), object())
    hit: _Priced | None = None
    for provider, model, timestamp, cost, u_in, u_read, cw, u_out, u_hour in items:
        if cost is not None:
            if not n_recorded:
                order.append("recorded")
            n_recorded += 1
            inp, read, write, output, whole = cost.input, cost.cache_read, cost.cache_write, cost.output, cost.total
        else:
            if model is not last[1] or provider is not last[0]:  # (the same model as the last request's: its price)
                last = key = (provider, model)
                try:
                    hit = prices[key]
                except KeyError:
                    hit = prices[key] = _priced(agent_price(*key))
                except TypeError:  # (an unhashable model: a reader may pass any JSON value)
                    hit = _priced(agent_price(*key))
                    last = (object(), object())
            if hit is None:
                if not n_none:
                    order.append("none")
                n_none += 1
                unpriced[f"{provider or '?'}/{model or '?'}"] += 1
                continue
            if not n_catalogue:
                order.append("catalogue")
            n_catalogue += 1
            price, rates, above, long = hit
            if rates is None:
                rates = price.rates_for(u_in + u_read + cw, timestamp)
            elif above is not None and u_in + u_read + cw > above:  # (`rates_for` without periods)
                rates = long
            hour = cw if cw < u_hour else u_hour  # (min(u_hour, cw))
            inp, read, output = u_in * rates.input, u_read * rates.cache_read, u_out * rates.output
            write = (cw - hour) * rates.cache_write + hour * rates.cache_write_1h
            whole = inp + read + write + output
        total += whole
        c_in += inp
        c_read += read
        c_write += write
        c_out += output
    out.total = total
    out.by_class = {"input": c_in, "cache_read": c_read, "cache_write": c_write, "output": c_out}
    counts = {"recorded": n_recorded, "catalogue": n_catalogue, "none": n_none}
    out.sources.update({k: counts[k] for k in order})
    return out
