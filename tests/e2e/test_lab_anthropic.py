"""Fast checks of the lab server's Anthropic Messages API (no Claude Code needed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from lab.anthropic_api import AnthropicConfig, AnthropicModel
from lab.claude_summary import summarise
from lab.server import LabServer, ServerConfig
from lab.summarizer import drop_index
from lab.workload import build_workload

WS = "/tmp/ws"


def _model(window: int = 200000) -> AnthropicModel:
    return AnthropicModel(AnthropicConfig(workload=build_workload(3, 4, "heavy"), workspace=WS, window=window))


def _user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]}


def test_step_counter_and_tool_mapping() -> None:
    m = _model()
    wl = m.config.workload
    body = {"system": [{"type": "text", "text": "sys"}], "tools": [{"name": "Read"}],
            "messages": [_user(wl.prompts[0].prompt)]}
    status, r = m.respond(body)
    assert status == 200 and r["stop"] == "tool_use"
    call = r["calls"][0]
    assert call["id"] == "toolu_p000_s00_0" and call["name"] == "Read"
    assert call["input"]["file_path"].startswith(WS + "/")
    assert r["usage"]["input_tokens"] == 0 and r["usage"]["cache_read_input_tokens"] == 0
    assert r["usage"]["cache_creation_input_tokens"] > 0
    msgs = [*body["messages"], {"role": "assistant", "content": [{"type": "tool_use", **call}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "x"}]}]
    status, r2 = m.respond({**body, "messages": msgs})
    assert r2["calls"][0]["id"].startswith("toolu_p000_s01_")
    assert r2["usage"]["cache_read_input_tokens"] > 0  # the prefix was stored by the first request
    # the counter, not the history, decides: the same request again gets the next step
    _, r3 = m.respond({**body, "messages": msgs})
    assert r3["calls"] == [] or r3["calls"][0]["id"].startswith("toolu_p000_s02_")
    assert m.mismatches  # ... and the disagreement is recorded


def test_too_long_does_not_move_the_counter() -> None:
    m = _model(window=50)
    status, err = m.respond({"messages": [_user(m.config.workload.prompts[0].prompt)]})
    assert status == 400 and err["error"]["type"] == "invalid_request_error"
    assert err["error"]["message"].startswith("prompt is too long: ") and err["error"]["message"].endswith(
        " tokens > 50 maximum")
    assert m.prompt is None and m.log[-1].kind == "too_long"


def _history(wl, prompts: int) -> list[dict]:
    msgs: list[dict] = []
    for p in wl.prompts[:prompts]:
        msgs.append({"role": "user", "content": p.prompt})
        for s in range(len(p.steps)):
            tid = f"toolu_p{p.index:03d}_s{s:02d}_0"
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read",
                                                           "input": {"file_path": f"{WS}/README.md"}}]})
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "1\tx"}]})
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": p.final}]})
    return msgs


def test_summarise_initial_then_update_drops_one_done_item() -> None:
    wl = build_workload(3, 4, "heavy")
    compact = _user("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.")
    first = summarise([*_history(wl, 2), compact], 3, WS)
    assert first.startswith("<analysis>") and "<summary>\n## Goal" in first
    s1 = first.split("<summary>\n")[1].split("\n</summary>")[0]
    assert s1.endswith("- Summary generation: 1")
    done1 = [ln[6:] for ln in s1.splitlines() if ln.startswith("- [x] ")]
    cont = ("This session is being continued from a previous conversation that ran out of context.\n\n"
            f"Summary:\n{s1}\n\nContinue the conversation from where it left off.")
    second = summarise([{"role": "user", "content": cont}, compact], 3, WS)
    s2 = second.split("<summary>\n")[1].split("\n</summary>")[0]
    assert s2.endswith("- Summary generation: 2")
    done2 = [ln[6:] for ln in s2.splitlines() if ln.startswith("- [x] ")]
    k = drop_index(3, 2, len(done1))
    assert done2 == done1[:k] + done1[k + 1:]


def test_http_sse_and_routing() -> None:
    wl = build_workload(3, 2, "heavy")
    m = AnthropicModel(AnthropicConfig(workload=wl, workspace=WS))
    with LabServer(ServerConfig(workload=wl), anthropic=m) as srv:
        host, port = srv.httpd.server_address[:2]
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": wl.prompts[0].prompt}]}
        req = urllib.request.Request(f"http://{host}:{port}/v1/messages?beta=true", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
        events = [ln[7:] for ln in text.splitlines() if ln.startswith("event: ")]
        assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
        assert "content_block_start" in events and "content_block_stop" in events
        data = [json.loads(ln[6:]) for ln in text.splitlines() if ln.startswith("data: ")]
        assert data[-2]["usage"]["output_tokens"] > 0 and data[-2]["delta"]["stop_reason"] == "tool_use"
        req = urllib.request.Request(f"http://{host}:{port}/v1/chat/completions", data=b"{bad",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
        except urllib.error.HTTPError as err:  # the OpenAI route still answers
            assert err.code == 400
