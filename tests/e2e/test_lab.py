"""Fast checks of the lab model server's parts (no Node needed)."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lab.server import LabServer, ServerConfig
from lab.summarizer import classify, drop_index, summarize
from lab.to_v1 import to_v1
from lab.tokenizer import PrefixCache, PseudoTokenizer
from lab.workload import build_workload, call_id, parse_call_id


def test_tokenizer_counts_cjk_per_character() -> None:
    tok = PseudoTokenizer(3.2, 1.0)
    assert tok.count("") == 0
    assert tok.count("a" * 32) == 10
    assert tok.count("压缩之后") == 4
    assert tok.count("ab压缩") == 1 + 2
    # Pi's chars/4 is far off for Chinese
    text = "压缩之后，旧的消息会被摘要替换。" * 10
    assert tok.count(text) > 3.5 * (len(text) / 4)


def test_prefix_cache_blocks() -> None:
    cache = PrefixCache(block=64)
    segs, toks = ["tools", "system", "user 1"], [100, 200, 10]
    assert cache.lookup_and_store(segs, toks) == 0
    assert cache.lookup_and_store([*segs, "assistant", "user 2"], [*toks, 5, 5]) == 256  # 310 -> 256
    assert cache.lookup_and_store(["tools", "other system"], [100, 50]) == 64


def test_workload_is_deterministic_and_extends() -> None:
    a, b = build_workload(7, 10), build_workload(7, 20)
    assert a.files == b.files
    assert [p.prompt for p in a.prompts] == [p.prompt for p in b.prompts[:10]]
    assert [p.steps for p in a.prompts] == [p.steps for p in b.prompts[:10]]
    assert build_workload(8, 10).files != a.files
    assert a.prompt_index(a.prompts[3].prompt) == 3
    assert parse_call_id(call_id(12, 3, 1)) == (12, 3)
    zh = build_workload(7, 5, "chinese")
    assert all(p.prompt.startswith("任务") for p in zh.prompts)


def _post(url: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _events(sse: str) -> list[dict]:
    out = []
    for block in sse.split("\n\n"):
        if block.startswith("data: ") and block != "data: [DONE]":
            out.append(json.loads(block[6:]))
    assert sse.rstrip().endswith("data: [DONE]")
    return out


def test_server_scripts_tool_calls_usage_and_overflow() -> None:
    wl = build_workload(3, 4)
    with LabServer(ServerConfig(workload=wl, window=3000)) as srv:
        system = {"role": "system", "content": "You are Pi, a coding agent. " * 40}
        user = {"role": "user", "content": [{"type": "text", "text": wl.prompts[1].prompt}]}
        status, text = _post(srv.base_url, {"model": "lab-model", "stream": True, "messages": [system, user]})
        assert status == 200
        ev = _events(text)
        calls = [tc for e in ev for c in e["choices"] for tc in c["delta"].get("tool_calls", [])]
        first = [tc for tc in calls if "id" in tc]
        assert first and first[0]["id"] == call_id(1, 0, 0)
        assert first[0]["function"]["name"] == wl.prompts[1].steps[0].calls[0].name
        finish = [c["finish_reason"] for e in ev for c in e["choices"] if c["finish_reason"]]
        assert finish == ["tool_calls"]
        usage = ev[-1]["usage"]
        assert ev[-1]["choices"] == [] and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        # next step, selected by the tool_call_id of the last tool result; prefix cache hits
        args = "".join(tc["function"].get("arguments", "") for tc in calls)
        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id(1, 0, 0), "type": "function", "function": {"name": first[0]["function"]["name"],
                                                                       "arguments": args}}]}
        last = len(wl.prompts[1].steps)
        tool = {"role": "tool", "tool_call_id": call_id(1, last - 1, 0), "content": "ok"}
        status, text = _post(srv.base_url, {"model": "lab-model", "stream": True,
                                            "messages": [system, user, assistant, tool]})
        ev = _events(text)
        content = "".join(c["delta"].get("content") or "" for e in ev for c in e["choices"])
        assert content == wl.prompts[1].final
        assert ev[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
        # overflow: the error Pi's overflow patterns recognise
        big = {"role": "user", "content": "x" * 20000}
        status, text = _post(srv.base_url, {"model": "lab-model", "stream": True, "messages": [system, big]})
        assert status == 400
        assert "maximum context length is 3000 tokens" in json.loads(text)["error"]["message"]


_SYS = "You are a context summarization assistant. Your task is to read a conversation"


def test_summarizer_formats_and_drop_rule() -> None:
    conv = ("<conversation>\n[User]: Task 1: Read a.py.\n\n[Assistant tool calls]: read(path=\"a.py\")\n\n"
            "[Tool result]: def f(): pass\n\n[Assistant]: Done reading a.py.\n</conversation>\n\n"
            "The messages above are a conversation to summarize.")
    assert classify(_SYS, conv) == "initial"
    first = summarize("initial", conv, seed=5)
    for heading in ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                    "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"):
        assert heading in first
    assert "- Summary generation: 1" in first
    assert "- [x] Read `a.py`" in first and "- [x] Finished: Task 1: Read a.py." in first
    upd = conv.replace("</conversation>\n\n", f"</conversation>\n\n<previous-summary>\n{first}\n</previous-summary>\n\n")
    assert classify(_SYS, upd) == "update"
    second = summarize("update", upd, seed=5)
    assert "- Summary generation: 2" in second
    k = int.from_bytes(hashlib.sha256(b"5:drop:2").digest()[:4], "big") % 2
    assert drop_index(5, 2, 2) == k
    done = [ln for ln in second.split("### In Progress")[0].split("\n") if ln.startswith("- [x] ")]
    assert len(done) == 2 - 1 + 2
    assert classify("You are Pi.", conv) is None


def test_to_v1_uses_header_relative_indexes() -> None:
    v3 = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/w"},
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": {"role": "user"}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": {"role": "assistant"}},
        {"type": "compaction", "id": "c", "parentId": "b", "timestamp": "t", "summary": "S",
         "firstKeptEntryId": "b", "tokensBefore": 9},
    ]
    v1 = to_v1(v3)
    assert "version" not in v1[0]
    assert all("id" not in e and "parentId" not in e for e in v1[1:])
    assert v1[3]["firstKeptEntryIndex"] == 2 and "firstKeptEntryId" not in v1[3]
    with pytest.raises(ValueError):
        to_v1([v3[0], v3[2]])


SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


@pytest.mark.skipif(not (SAMPLES / "manifest.json").exists(), reason="sample_sessions not generated")
def test_committed_samples_match_their_manifest() -> None:
    from lab.manifest import analyze, workload_signature

    manifest = json.loads((SAMPLES / "manifest.json").read_text())
    total = 0
    for name, meta in manifest.items():
        facts = analyze(SAMPLES / f"{name}.jsonl")
        total += facts.bytes
        assert facts.skipped == 0
        assert facts.compactions == meta["facts"]["compactions"], name
    assert total < 5 * 1024 * 1024
    assert workload_signature(SAMPLES / "pi0-pair-a.jsonl") == workload_signature(SAMPLES / "pi0-pair-b.jsonl")
