"""Fast checks of the lab server's Responses API (what Codex talks to), over HTTP, without Codex."""

from __future__ import annotations

import json
import urllib.request

from lab.responses_api import SUMMARY_MARKER, to_command
from lab.server import LabServer, ServerConfig
from lab.workload import ToolCall, build_workload

TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]
COMPACTION = json.dumps({"request_kind": "compaction"})
PREFIX = "Another language model started to solve this problem and produced a summary. analysis:\n"


def _post(url: str, body: dict, kind: str = "turn") -> list[dict]:
    req = urllib.request.Request(url + "/responses", data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "x-codex-turn-metadata": json.dumps({"request_kind": kind})})
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    return [json.loads(block.split("data: ", 1)[1]) for block in text.strip().split("\n\n")]


def _user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _completed(events: list[dict]) -> dict:
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    return events[-1]["response"]


def test_steps_compaction_and_position_after_summary() -> None:
    wl = build_workload(5, 3)
    with LabServer(ServerConfig(workload=wl, window=100000)) as srv:
        history = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sys"}]},
                   _user(wl.prompts[0].prompt)]
        first = _completed(_post(srv.base_url, {"input": history, "tools": TOOLS}))
        calls = [it for it in first["output"] if it["type"] == "function_call"]
        assert calls and calls[0]["call_id"] == "call_p000_s00_0" and calls[0]["name"] == "exec_command"
        assert json.loads(calls[0]["arguments"])["cmd"] == to_command(wl.prompts[0].steps[0].calls[0])
        history += [*first["output"], {"type": "function_call_output", "call_id": "call_p000_s00_0",
                                       "output": "Chunk ID: ab12\nWall time: 0.0101 seconds\nOutput:\nREADME.md\n"}]
        second = _completed(_post(srv.base_url, {"input": history, "tools": TOOLS}))
        assert second["usage"]["input_tokens_details"]["cached_tokens"] > 0
        assert any(it.get("call_id") == "call_p000_s01_0" for it in second["output"])
        # the wall time is not counted: the same request with another wall time costs the same
        other = json.loads(json.dumps(history).replace("0.0101", "7.5"))
        assert _completed(_post(srv.base_url, {"input": other, "tools": TOOLS}))["usage"]["input_tokens"] == \
            second["usage"]["input_tokens"]
        # a compaction request: a lossy summary, uncached
        summ = _completed(_post(srv.base_url, {"input": [*history, _user("CONTEXT CHECKPOINT COMPACTION")]},
                                "compaction"))
        text = summ["output"][0]["content"][0]["text"]
        assert text.startswith("## Goal") and SUMMARY_MARKER + "1" in text
        assert summ["usage"]["input_tokens_details"]["cached_tokens"] == 0
        # after the compaction the call ids are gone: the server continues where the summary was made
        compacted = [history[0], _user(wl.prompts[0].prompt), _user(PREFIX + text)]
        nxt = _completed(_post(srv.base_url, {"input": compacted, "tools": TOOLS}))
        assert any(it.get("call_id") == "call_p000_s01_0" for it in nxt["output"])
        kinds = [r.kind for r in srv.model.log]
        assert kinds.count("compaction") == 1 and kinds.count("agent") == 4


def test_over_the_window_is_context_length_exceeded() -> None:
    wl = build_workload(5, 1)
    with LabServer(ServerConfig(workload=wl, window=50)) as srv:
        events = _post(srv.base_url, {"input": [_user(wl.prompts[0].prompt)], "tools": TOOLS})
        assert [e["type"] for e in events] == ["response.created", "response.failed"]
        assert events[1]["response"]["error"]["code"] == "context_length_exceeded"
        assert srv.model.log[-1].kind == "overflow"


def test_commands_for_every_workload_tool() -> None:
    assert to_command(ToolCall("read", {"path": "a b.py"})) == "cat 'a b.py'"
    assert to_command(ToolCall("bash", {"command": "ls notes"})) == "ls notes"
    edit = to_command(ToolCall("edit", {"path": "src/x.py", "edits": [{"oldText": "def f():", "newText": "def f():  # r"}]}))
    assert edit.startswith("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/x.py\n@@\n-def f():\n+def f():  # r")
    write = to_command(ToolCall("write", {"path": "notes/t.md", "content": "hi"}))
    assert write == "mkdir -p notes && cat > notes/t.md <<'SESSIONTOOLS_EOF'\nhi\nSESSIONTOOLS_EOF"
