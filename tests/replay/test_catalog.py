"""Issue 12 cause 6 and 7: the session's model, windows and prices from the catalogue, Pi's own
models.json and --models, never another provider's; clear messages for files with nothing to replay."""

from __future__ import annotations

import orjson
import pytest

from sessiontools.cli import main
from sessiontools.replay import replay_source, run_record
from sessiontools.replay.catalog import catalogue, lookup, read_model_file, recorded_prices
from sessiontools.testing import SessionBuilder
from tests.replay.test_real_sessions import pseudo_reply

CUSTOM = {"providers": {"my-gw": {"baseUrl": "http://127.0.0.1:1", "api": "openai-completions", "models": [
    {"id": "claude-sonnet-4-5", "contextWindow": 48000, "maxTokens": 4096,
     "cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.2, "cacheWrite": 0}}]}}}


def _session(provider: str = "my-gw", model: str = "claude-sonnet-4-5", *, pseudo_last: bool = False) -> SessionBuilder:
    b = SessionBuilder(provider=provider, model=model)
    for k in range(3):
        b.user(f"task {k} " * 40)
        b.assistant("done", usage=b.usage(2000 + 500 * k, 20))
    if pseudo_last:
        pseudo_reply(b)
    return b


def test_no_fallback_to_another_providers_model() -> None:
    assert lookup("anthropic", "claude-sonnet-4-5") is not None
    assert lookup("my-gw", "claude-sonnet-4-5") is None  # not anthropic's window and prices
    assert lookup(None, "claude-sonnet-4-5") is not None  # a file that records no provider
    assert lookup("anthropic", "claude-sonnet-4-5-20250929") is not None  # date suffix, same provider


def test_catalogue_is_refreshed() -> None:
    ids = {(m["provider"], m["id"]) for m in catalogue()["models"]}
    assert ("deepseek", "deepseek-v4-flash") in ids and ("deepseek", "deepseek-v4-pro") in ids
    assert "@earendil-works/pi-ai" in catalogue()["source"]


def test_pi_models_json_gives_custom_windows_and_prices(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    extra = read_model_file(orjson.dumps(CUSTOM), "models.json")
    info = lookup("my-gw", "claude-sonnet-4-5", extra)
    assert info is not None and info.context_window == 48000 and info.prices == pytest.approx({
        "input": 2e-06, "output": 8e-06, "cache_read": 2e-07, "cache_write": 0.0})
    f = tmp_path / "s.jsonl"
    f.write_bytes(_session().jsonl())
    assert main(["replay", str(f)]) == 3  # not in any catalogue: no silent fallback
    assert "my-gw/claude-sonnet-4-5" in capsys.readouterr().err
    models = tmp_path / "models.json"
    models.write_bytes(orjson.dumps(CUSTOM))
    assert main(["replay", str(f), "--models", str(models), "--format", "json"]) == 0
    run = orjson.loads(capsys.readouterr().out)["runs"][0]
    assert run["settings"]["context_window"] == 48000 and run["prices"]["source"] == str(models)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_bytes(orjson.dumps(CUSTOM))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    assert main(["replay", str(f), "--format", "json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["runs"][0]["settings"]["context_window"] == 48000


def test_prices_from_itemised_recorded_cost() -> None:
    usage = {"input": 100, "output": 10, "cacheRead": 1000, "cacheWrite": 0}
    cost = {"input": 0.0001, "output": 0.00004, "cacheRead": 0.0001, "cacheWrite": 0}
    assert recorded_prices([(usage, cost)]) == pytest.approx({"input": 1e-06, "output": 4e-06, "cache_read": 1e-07})
    assert recorded_prices([(usage, dict.fromkeys(cost, 0))]) is None


def test_session_model_is_the_model_of_real_requests(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A file ending with a pseudo-reply takes its model from its real requests (no exit 3)."""
    f = tmp_path / "s.jsonl"
    f.write_bytes(_session("anthropic", pseudo_last=True).jsonl())
    assert main(["replay", str(f), "--format", "json"]) == 0
    run = orjson.loads(capsys.readouterr().out)["runs"][0]
    assert run["model"] == "anthropic/claude-sonnet-4-5" and run["settings"]["context_window"] == 200000


def test_all_leaves_keeps_a_leaf_without_replies() -> None:
    """--all-leaves: a branch that ends before any reply takes the session's model, not an error."""
    b = _session("anthropic")
    first = b.entries[0]["id"]
    b.branch(first)
    b.user("another idea")
    prs = replay_source(b.session(), windows=None, reserves=[4000], keeps=[2000], policy=None, all_leaves=True)
    assert len(prs) == 2 and all(pr.runs[0].settings.context_window == 200000 for pr in prs)
    assert all(run_record(pr, pr.runs[0])["model"] for pr in prs)


def test_header_only_and_reply_less_files_say_so(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A Pi file with nothing to replay (a header only; prompts only) is left out with its reason, as
    every agent's (`NothingToReplay`); alone, the run has no input: exit 3."""
    b = SessionBuilder()
    header = tmp_path / "h.jsonl"
    header.write_bytes(orjson.dumps(b.header) + b"\n")
    assert main(["replay", str(header)]) == 3
    err = capsys.readouterr().err
    assert "None/None" not in err and "no model request in the file (0 message(s)" in err and "left out" in err
    b.user("hello")
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(b.jsonl())
    assert main(["replay", str(prompts)]) == 3
    err = capsys.readouterr().err
    assert "None/None" not in err and "no model request in the file (1 message(s), no response)" in err


def test_a_custom_model_without_context_window_has_pis_default() -> None:
    """Pi gives a models.json model that omits `contextWindow` 128000 and runs with it; such models are
    common in real custom-provider files (an id and a name only) and must not read as 'not in the
    catalogue'. A window that is not a positive number is still no entry."""
    doc = {"providers": {"gw": {"models": [{"id": "bare", "name": "Bare"}, {"id": "bad", "contextWindow": 0},
                                           {"id": "text", "contextWindow": "big"}]}}}
    extra = read_model_file(orjson.dumps(doc), "models.json")
    info = lookup("gw", "bare", extra)
    assert info is not None and info.context_window == 128000
    assert lookup("gw", "bad", extra) is None and lookup("gw", "text", extra) is None


def test_window_per_request_when_the_model_changes() -> None:
    """A session that switches from a 200k model to an 8k one: requests after the switch are checked
    against the 8k window (recorded usage 9000 > 8192 is an overflow there), those before against 200k."""
    b = SessionBuilder(provider="anthropic", model="claude-sonnet-4-5")
    for k in range(3):
        b.user(f"task {k} " * 40)
        b.assistant("done", usage=b.usage(5000 + 2000 * k, 20))
    b.model_change("openai", "gpt-4")
    b.provider, b.model = "openai", "gpt-4"
    b.user("more " * 40)
    b.assistant("done", usage=b.usage(9500, 20))
    (pr,) = replay_source(b.session(), windows=None, reserves=[1000], keeps=[2000], policy=None)
    st = pr.runs[0].settings
    assert st.context_window == 8192 and st.window_changes and st.window_changes[0][1] == 200000
    assert st.window_at(pr.path.requests[0].index) == 200000
    m = run_record(pr, pr.runs[0])["metrics"]
    points = pr.runs[0].requests
    assert [p.overflow for p in points[:3]] == [False, False, False]  # 9000 tokens fit claude's 200k
    assert points[3].overflow and m["overflows"] >= 1  # 9500 do not fit gpt-4's 8192
    assert run_record(pr, pr.runs[0])["settings"]["window_changes"][-1][1] == 8192
