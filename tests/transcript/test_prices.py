"""Prices of the models Claude Code and Codex record: the lookup rule and the cost of a request."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from sessiontools.transcript.model import Cost, Request, Usage
from sessiontools.transcript.prices import (
    agent_price,
    normalise,
    request_cost,
    session_cost,
    usage_cost,
)


@pytest.mark.parametrize(("provider", "model", "want"), [
    ("anthropic", "claude-opus-4-5-20251101", "claude-opus-4-5-20251101"),
    ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
    ("anthropic", "claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"),
    (None, "claude-opus-4-5-20251101", "claude-opus-4-5-20251101"),  # provider-less: inferred
    (None, "anthropic/claude-opus-4-6", "claude-opus-4-6"),
    ("anthropic", "claude-opus-4.5", "claude-opus-4-5"),  # dotted version
    ("anthropic", "claude-sonnet-4-6[1m]", "claude-sonnet-4-6"),  # Claude Code's 1M tag
    ("anthropic", "claude-sonnet-4@20250514", "claude-sonnet-4-20250514"),  # Vertex-style date
    ("anthropic", "claude-sonnet-4", "claude-sonnet-4-20250514"),  # undated: its dated entry
    ("anthropic", "claude-opus-4", "claude-opus-4-20250514"),  # Opus 4, not Opus 4.5
    ("anthropic", "claude-opus-4-1-20250805", "claude-opus-4-1-20250805"),  # retired, from the Bedrock twin
    ("openai", "gpt-5.3-codex", "gpt-5.3-codex"),
    (None, "gpt-5.4", "gpt-5.4"),
    ("openai", "gpt-5.4-2026-03-05", "gpt-5.4-2026-03-05"),
    ("openai", "gpt-5.2-codex", "gpt-5.2-codex"),
    ("codex", "gpt-5.1-codex-max", "gpt-5.1-codex-max"),  # a Codex provider id of the user's own
    # gateways behind ANTHROPIC_BASE_URL: Claude Code records their ids under `anthropic`
    ("anthropic", "MiniMax-M2.1", "MiniMax-M2.1"),
    ("anthropic", "glm-4.7", "glm-4.7"),
    (None, "MiniMax-M2.1", "MiniMax-M2.1"),
    (None, "glm-4.5-air", "glm-4.5-air"),
])
def test_recorded_ids_find_their_price(provider, model, want) -> None:  # type: ignore[no-untyped-def]
    p = agent_price(provider, model)
    assert p is not None and normalise(p.id) == normalise(want)


@pytest.mark.parametrize(("provider", "model"), [
    ("anthropic", "claude-opus-4-9"),  # no such model: never the nearest version (4-5, 4-8, ...)
    ("anthropic", "glm-9"),  # a gateway id LiteLLM does not list
    ("openai", "claude-opus-4-5"),  # never across providers
    ("ollama", "qwen3.5:cloud"),
    ("lab", "lab-model"),
    (None, None),
])
def test_models_without_a_price_are_not_priced(provider, model) -> None:  # type: ignore[no-untyped-def]
    assert agent_price(provider, model) is None


def test_cost_by_class_one_hour_writes_and_long_context() -> None:
    opus = agent_price("anthropic", "claude-opus-4-5-20251101")
    assert opus is not None
    u = Usage(input=1000, cache_read=100_000, cache_write=20_000, output=5000, cache_write_1h=8000)
    c = usage_cost(u, opus)
    # $5 in, $0.5 read, $6.25 5-minute write, $10 1-hour write, $25 out per million
    assert c.input == pytest.approx(1000 * 5e-6)
    assert c.cache_read == pytest.approx(100_000 * 0.5e-6)
    assert c.cache_write == pytest.approx(12_000 * 6.25e-6 + 8000 * 10e-6)
    assert c.output == pytest.approx(5000 * 25e-6)
    assert c.total == pytest.approx(c.input + c.cache_read + c.cache_write + c.output)
    sonnet = agent_price("anthropic", "claude-sonnet-4-5-20250929")
    assert sonnet is not None and sonnet.above_tokens == 200_000
    small = usage_cost(Usage(0, 200_000, 0, 1000), sonnet)
    big = usage_cost(Usage(0, 200_001, 0, 1000), sonnet)  # past 200k of prompt: every class at the higher rate
    assert small.cache_read == pytest.approx(200_000 * 0.3e-6) and small.output == pytest.approx(1000 * 15e-6)
    assert big.cache_read == pytest.approx(200_001 * 0.6e-6) and big.output == pytest.approx(1000 * 22.5e-6)
    gpt = agent_price("openai", "gpt-5.3-codex")
    assert gpt is not None
    cg = usage_cost(Usage(input=1000, cache_read=9000, cache_write=0, output=500), gpt)  # output has reasoning
    assert cg.total == pytest.approx(1000 * 1.75e-6 + 9000 * 0.175e-6 + 500 * 14e-6)


def test_session_cost_sources() -> None:
    def req(model, cost=None):  # type: ignore[no-untyped-def]
        return Request(-1, 1, Usage(10, 0, 0, 10, cost), (), "anthropic", model)

    priced = session_cost([req("claude-haiku-4-5-20251001"), req("glm-9")])
    assert priced.source == "catalogue" and dict(priced.unpriced) == {"anthropic/glm-9": 1}
    assert priced.to_dict()["cost"] == pytest.approx(round(10 * 1e-6 + 10 * 5e-6, 6))
    none = session_cost([req("glm-9")])
    assert none.source == "none" and none.to_dict()["cost"] is None  # never "$0.0000"
    rec = session_cost([req("glm-9", Cost(0.1, 0, 0, 0.2, 0.3))])
    assert rec.source == "recorded" and rec.total == pytest.approx(0.3)
    assert request_cost(req("glm-9"))[1] == "none"


def test_session_cost_looks_each_model_up_once_and_sums_as_request_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """`session_cost` asks the table once per (provider, model), an unhashable model (any JSON value
    a reader passes) each time, and its sums are `request_cost`'s, request by request in order."""
    from sessiontools.transcript import prices

    models = ["claude-sonnet-4-5", "claude-haiku-4-5-20251001", "glm-9", ["odd"], "claude-sonnet-4-5", None] * 7
    reqs = [Request(-1, i, Usage(10 + i, 3 * i, 2 * i, 5 + i, None, i % 2), (), "anthropic", m,
                    f"2026-01-{1 + i % 28:02d}T00:00:00Z") for i, m in enumerate(models)]
    asked: list[object] = []
    real = prices.agent_price
    monkeypatch.setattr(prices, "agent_price", lambda p, m: asked.append(m) or real(p, m))
    got = session_cost(reqs)
    assert len(asked) == 4 + 7  # (four hashable models, then the list's seven)
    want = 0.0
    for r in reqs:
        cost, _ = request_cost(r)
        want += cost.total if cost is not None else 0.0
    assert got.total == want and got.total > 0  # (the same additions in the same order: equal, not close)
    assert dict(got.unpriced) == {"anthropic/glm-9": 7, "anthropic/['odd']": 7, "anthropic/?": 7}


def test_the_table_states_its_source_and_every_entry_is_complete() -> None:
    doc = json.loads(resources.files("sessiontools").joinpath("data/agent_prices.json").read_bytes())
    source = doc["source"]
    assert "LiteLLM" in source and "ccusage" in source and "models.dev" in source
    for m in doc["models"]:
        cost = m["cost_per_million"]
        assert m["provider"] in ("anthropic", "openai", "minimax", "zai", "deepseek")
        assert cost["input"] >= 0 and cost["output"] >= 0
        assert m["provider"] in ("anthropic", "openai") or m["via"] in (
            f"{m['provider']}/{m['id']}", f"models.dev providers/{m['provider']}/models/{m['id']}.toml")
        if m["provider"] == "anthropic":
            assert cost["cache_write_1h"] >= cost["cache_write"]


def test_gateway_prices_are_litellm_entries_ccusage_prices_with() -> None:
    """MiniMax-M2.1 at LiteLLM's `minimax/MiniMax-M2.1` (0.3 / 1.2 / 0.03 / 0.375 per million) and glm-4.7
    at `zai/glm-4.7` (0.6 / 2.2 / 0.11 / 0): what ccusage 20.0.24 charges sessions of these models
    (checked on the real files, lab.claude_versions)."""
    mm = agent_price("anthropic", "MiniMax-M2.1")
    glm = agent_price("anthropic", "glm-4.7")
    assert mm is not None and glm is not None
    c = usage_cost(Usage(input=561, output=0, cache_read=65368, cache_write=639), mm)
    assert c.total == pytest.approx(0.002368965, abs=1e-12)
    c = usage_cost(Usage(input=229, output=68, cache_read=2816, cache_write=0), glm)
    assert c.total == pytest.approx(0.00059676, abs=1e-12)


@pytest.mark.parametrize(("model", "per_million_each"), [
    ("deepseek-v4-pro", 1.743625), ("deepseek-v4-flash", 0.5628), ("MiniMax-M2.7", 1.935)])
def test_gateway_models_litellm_lacks_are_priced_as_ccusage_prices_them(model: str, per_million_each: float) -> None:
    """A million tokens of each class (input, cache write, cache read, output) under Claude Code's
    `anthropic` provider: what ccusage 20.0.24 --offline charged for a one-line session of each id
    (its embedded models.dev snapshot: deepseek-v4-pro $0.435 / $0.87 / $0.003625, a write at the input
    price). The rates are models.dev's first-party provider files (models.json says which)."""
    price = agent_price("anthropic", model)
    assert price is not None and price.provider == ("minimax" if model.startswith("MiniMax") else "deepseek")
    c = usage_cost(Usage(input=10**6, output=10**6, cache_read=10**6, cache_write=10**6), price)
    assert c.total == pytest.approx(per_million_each, abs=1e-9)


def test_alias_ids_stay_unpriced() -> None:
    """deepseek-chat / deepseek-reasoner name whatever model DeepSeek serves at the time: no one
    catalogue date prices every session of them (ccusage charges neither models.dev's rate)."""
    assert agent_price("anthropic", "deepseek-chat") is None
    assert agent_price("anthropic", "deepseek-reasoner") is None


def test_models_dev_entries_fill_only_what_litellm_lacks() -> None:
    from lab.extract_prices import merge, models_dev_entry

    doc = {"cost": {"input": 0.435, "output": 0.87, "cache_read": 0.003625}, "limit": {"context": 1_000_000}}
    m = models_dev_entry("deepseek", "deepseek-v9", doc)
    assert m == {"provider": "deepseek", "id": "deepseek-v9", "context_window": 1_000_000,
                 "cost_per_million": {"input": 0.435, "output": 0.87, "cache_read": 0.003625, "cache_write": 0.435},
                 "via": "models.dev providers/deepseek/models/deepseek-v9.toml"}
    v4 = models_dev_entry("deepseek", "deepseek-v4-pro", doc)
    assert v4 is not None and v4["periods"][0]["from"] == "2026-08-16T16:00:00Z"
    assert models_dev_entry("minimax", "x", {"cost": {"input": 1}}) is None  # no output price: left out
    litellm = [{"provider": "minimax", "id": "MiniMax-M2.1", "cost_per_million": {"input": 0.3}}]
    extra = [{"provider": "minimax", "id": "minimax-m2.1", "cost_per_million": {"input": 9}}, m]
    assert merge(litellm, extra) == [m, litellm[0]]  # LiteLLM's entry wins; sorted by provider, id


@pytest.mark.parametrize(("timestamp", "pro", "flash"), [
    (None, 1.743625, 0.5628),  # no timestamp: the base (first) rates
    ("2026-08-16T15:59:59.000Z", 1.743625, 0.5628),  # before the switch
    ("2026-08-16T16:00:00.000Z", 3.322, 1.107),  # Sunday: off-peak
    ("2026-08-17T07:00:00.000Z", 6.644, 2.214),  # Monday 07:00 UTC: peak
    ("2026-09-01T00:59:59.000Z", 3.322, 1.107), ("2026-09-01T01:00:00.000Z", 6.644, 2.214),
    ("2026-09-01T03:59:59.000Z", 6.644, 2.214), ("2026-09-01T04:00:00.000Z", 3.322, 1.107),
    ("2026-09-01T06:00:00.000Z", 6.644, 2.214), ("2026-09-01T10:00:00.000Z", 3.322, 1.107),
    ("2026-09-05T07:00:00.000Z", 3.322, 1.107),  # Saturday
    ("2026-09-01T08:00:00+02:00", 6.644, 2.214),  # 06:00 UTC
])
def test_deepseek_v4_is_billed_by_the_hour_from_2026_08_16(timestamp: str | None, pro: float, flash: float) -> None:
    """A million tokens of each class, what ccusage 20.0.24 --offline charged one-line sessions at these
    times (bisected against it: the switch at 16:00:00 UTC, the peak-hour edges, weekends)."""
    each = Usage(input=10**6, output=10**6, cache_read=10**6, cache_write=10**6)
    for model, want in (("deepseek-v4-pro", pro), ("deepseek-v4-flash", flash)):
        price = agent_price("anthropic", model)
        assert price is not None
        assert usage_cost(each, price, timestamp).total == pytest.approx(want, abs=1e-9), model
        req = Request(-1, 1, each, (), "anthropic", model, timestamp)
        assert request_cost(req)[0].total == pytest.approx(want, abs=1e-9)  # type: ignore[union-attr]


def test_catalogue_read_without_the_file_beside_the_package(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The catalogue is a plain file read; where it is not a file beside the modules (a zipped
    install) importlib.resources reads the same bytes."""
    import builtins

    from sessiontools.transcript import prices

    plain = prices._catalogue_bytes()
    real_open = builtins.open

    def no_file(path, *a, **k):  # type: ignore[no-untyped-def]
        if str(path).endswith("agent_prices.json"):
            raise FileNotFoundError(path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_file)
    assert prices._catalogue_bytes() == plain and b'"cost_per_million"' in plain
