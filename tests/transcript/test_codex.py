"""The Codex reader and transcript on small synthetic rollouts: current schema, 2025 schema with
resume and remote (encrypted) compaction, the bare legacy format, overflows and bad lines."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontools.read.codex import (
    SUMMARY_PREFIX,
    default_sessions_dir,
    is_rollout,
    load_rollout,
    read_rollout_bytes,
    records_from_objects,
)
from sessiontools.transcript.codex import codex_transcript, usage_of
from sessiontools.transcript.model import Agent, Role, Trigger, UnitKind

PREFIX = SUMMARY_PREFIX + " You also have access ... use the information in this summary to assist with your own analysis:\n"


def line(kind: str, payload: dict, n: int | None = None, ts: str = "2026-01-01T00:00:00Z") -> dict:
    obj = {"timestamp": ts, "type": kind, "payload": payload}
    if n is not None:
        obj["ordinal"] = n
    return obj


def usage(inp: int, cached: int, out: int) -> dict:
    return {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": inp + out}


def count(last: dict, total: dict, window: int = 60800) -> dict:
    return {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                            "model_context_window": window}}


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(cid: str, cmd: str) -> dict:
    return {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd}), "call_id": cid}


def output(cid: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": cid, "output": text}


def current_rollout() -> list[dict]:
    """0.171 shape: one compaction mid-turn, a repeated count, a zero count after the compaction."""
    t1, t2, t3 = usage(1000, 0, 20), usage(1300, 960, 30), usage(800, 0, 200)
    r = [
        line("session_meta", {"id": "S1", "cwd": "/w", "cli_version": "0.171.0", "model_provider": "lab",
                              "base_instructions": {"text": "You are Codex."}}),
        line("turn_context", {"turn_id": "T1", "model": "m1", "cwd": "/w"}),
        line("event_msg", {"type": "task_started", "turn_id": "T1", "model_context_window": 60800,
                           "turn_attribution": {"turn_trigger": "exec"}}),
        line("response_item", user("<environment_context>cwd</environment_context>")),
        line("response_item", user("Task 1: read a.py")),
        line("response_item", call("c1", "cat a.py")),
        line("token_usage_record", {"response_id": "resp_1", "usage": t1}),
        line("response_item", output("c1", "print(1)\n")),
        line("event_msg", count(t1, t1)),
        line("event_msg", count(t1, t1)),  # repeated: not a request
        line("response_item", assistant("a.py prints 1.")),
        line("token_usage_record", {"response_id": "resp_2", "usage": t2}),
        line("event_msg", count(t2, usage(2300, 960, 50))),
        line("response_item", call("c2", "cat b.py")),
        line("event_msg", count(usage(1400, 1280, 10), usage(3700, 2240, 60))),
        line("response_item", output("c2", "x" * 400)),
        # compaction: the summarisation reply, its count, the compacted line, Codex's estimate
        line("response_item", assistant("## Goal\n- read files")),
        line("event_msg", count(t3, usage(4500, 2240, 260))),
        line("compacted", {"message": PREFIX + "## Goal\n- read files",
                           "replacement_history": [user("Task 1: read a.py"),
                                                   user("<environment_context>cwd</environment_context>"),
                                                   user(PREFIX + "## Goal\n- read files")],
                           "latest_token_usage_record": {"usage": t3}}),
        line("event_msg", {"type": "item_completed", "item": {"type": "ContextCompaction", "id": "x"}}),
        line("event_msg", count(usage(0, 0, 0) | {"total_tokens": 321}, usage(4500, 2240, 260))),
        line("response_item", assistant("b.py is long.")),
        line("event_msg", count(usage(700, 640, 15), usage(5200, 2880, 275))),
        line("event_msg", {"type": "task_complete", "turn_id": "T1"}),
    ]
    return r


def test_current_schema_requests_usage_and_compaction() -> None:
    t = codex_transcript(records_from_objects(current_rollout(), "r.jsonl"))
    assert t.agent == Agent.CODEX and t.format == "codex-2025"  # no `ordinal` on these lines
    p = t.main
    assert p is not None and t.diagnostics == []
    assert p.messages[0].role == Role.SYSTEM and p.messages[0].text == "You are Codex."
    assert [r.usage.total for r in p.requests] == [1020, 1330, 1410, 715]
    r0, r1 = p.requests[0], p.requests[1]
    assert usage_of_ok(r1)
    assert r0.id == "resp_1" and r1.id == "resp_2" and p.requests[2].id is None
    assert r0.model == "m1" and r0.provider == "lab" and r0.context_window == 60800
    assert p.messages[r0.index].units[0].kind == UnitKind.TOOL_CALL
    assert p.messages[r0.index].units[0].text == 'exec_command {"cmd": "cat a.py"}'
    assert [m.role for m in p.context(r0)] == [Role.SYSTEM, Role.USER, Role.USER]
    assert p.skipped["compaction summarisation call"] == 1
    assert not any(m.text == "## Goal\n- read files" and m.role == Role.ASSISTANT for m in p.messages)
    (c,) = p.compactions
    assert c.tokens_before == 1410 and c.tokens_after == 321 and c.trigger == Trigger.THRESHOLD
    assert c.summary == "## Goal\n- read files" and c.writer == "agent"
    assert p.messages[c.index].role == Role.SUMMARY
    assert c.kept == ((c.index - 2, c.index),)
    last = p.requests[-1]
    ctx = p.context(last)
    assert ctx[0].role == Role.SYSTEM and ctx[1].text == "Task 1: read a.py" and p.messages[c.index] in ctx
    assert ctx[-1].index == last.index - 1 and all(m.line < 19 for m in ctx[:1])


def usage_of_ok(r) -> bool:
    return r.usage.input == 1300 - 960 and r.usage.cache_read == 960 and r.usage.cache_write == 0 and r.usage.output == 30


def test_usage_mapping_counts_cached_inside_input() -> None:
    from sessiontools.read.codex import TokenUsage

    u = usage_of(TokenUsage(1000, 900, 50, 20, 1050))
    assert (u.input, u.cache_read, u.cache_write, u.output, u.total) == (100, 900, 0, 50, 1050)


def test_ordinal_lines_are_the_current_schema() -> None:
    objs = [dict(o, ordinal=i) for i, o in enumerate(current_rollout())]
    t = codex_transcript(records_from_objects(objs))
    assert t.format == "codex-0.171" and t.settings["schema"] == "current"
    assert t.settings["model_context_window"] == 60800 and t.settings["cli_version"] == "0.171.0"


def test_2025_resume_and_remote_compaction() -> None:
    objs = [
        line("session_meta", {"id": "S2", "cwd": "/w", "cli_version": "0.46.0", "instructions": None}),
        line("response_item", user("fix the bug")),
        line("response_item", assistant("done")),
        line("event_msg", count(usage(500, 0, 10), usage(500, 0, 10), 258400)),
        line("session_meta", {"id": "S2", "cwd": "/w", "cli_version": "0.46.0"}),  # resume
        line("response_item", user("and the tests")),
        line("response_item", {"type": "compaction", "encrypted_content": "gAAAA..."}),
        line("compacted", {"message": "", "replacement_history": [
            user("fix the bug"), user("and the tests"), {"type": "compaction", "encrypted_content": "gAAAA..."}]}),
        line("event_msg", {"type": "context_compacted"}),
        line("response_item", assistant("tests pass")),
        line("event_msg", count(usage(300, 0, 5), usage(800, 0, 15), 258400)),
    ]
    t = codex_transcript(records_from_objects(objs))
    p = t.main
    assert t.format == "codex-2025" and t.settings["session_metas"] == 2 and t.session_id == "S2"
    assert not any(m.role == Role.SYSTEM for m in p.messages)  # no base instructions recorded
    (c,) = p.compactions
    assert c.summary is None and c.writer == "provider" and c.tokens_before == 510
    assert p.messages[c.index].role == Role.SUMMARY and c.kept == ((c.index - 2, c.index),)
    assert [r.usage.total for r in p.requests] == [510, 305]
    assert p.context(p.requests[1])[0].text == "fix the bug"


def test_2025_without_replacement_history_and_event_only() -> None:
    objs = [
        line("session_meta", {"id": "S3", "cli_version": "0.30.0"}),
        line("response_item", user("hello")),
        line("response_item", assistant("hi")),
        line("event_msg", count(usage(100, 0, 5), usage(100, 0, 5))),
        line("compacted", {"message": "the summary"}),
        line("response_item", assistant("after")),
        line("event_msg", count(usage(60, 0, 5), usage(160, 0, 10))),
    ]
    p = codex_transcript(records_from_objects(objs)).main
    (c,) = p.compactions
    assert c.summary == "the summary" and c.kept == () and c.tokens_before == 105
    assert [m.text for m in p.context(p.requests[1])] == ["the summary"]
    only_events = [objs[0], objs[1], objs[2], objs[3], line("event_msg", {"type": "context_compacted"})]
    p2 = codex_transcript(records_from_objects(only_events)).main
    assert len(p2.compactions) == 1 and p2.compactions[0].summary is None


def test_legacy_bare_items() -> None:
    objs = [
        {"id": "L1", "timestamp": "2025-04-20T10:00:00Z", "instructions": "be brief"},
        {"record_type": "state"},
        user("hi"),
        assistant("hello"),
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
    ]
    r = records_from_objects(objs)
    assert r.schema == "legacy" and r.diagnostics == []
    t = codex_transcript(r)
    assert t.format == "codex-legacy" and t.session_id == "L1"
    assert [m.role for m in t.main.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.ASSISTANT]
    assert t.main.messages[-1].units[0].kind == UnitKind.THINKING and t.main.requests == ()


def test_overflow_turns() -> None:
    objs = [
        line("session_meta", {"id": "S4", "cli_version": "0.171.0"}),
        line("response_item", user("read everything")),
        line("event_msg", count(usage(0, 0, 0) | {"total_tokens": 131071}, usage(0, 0, 0) | {"total_tokens": 131071})),
        line("event_msg", {"type": "task_complete", "error": {
            "message": "Codex ran out of room in the model's context window.", "codex_error_info": "context_window_exceeded"}}),
        line("event_msg", {"type": "error", "message": "This model's maximum context length is 18000 tokens. "
                                                       "However, your messages resulted in 20000 tokens."}),
    ]
    p = codex_transcript(records_from_objects(objs)).main
    assert p.requests == () and len(p.overflows) == 2
    assert p.overflows[0].provider_tokens is None
    assert (p.overflows[1].provider_tokens, p.overflows[1].provider_limit) == (20000, 18000)
    # an older turn that reports the error event and then fails: one overflow, not two
    same_turn = [*objs, line("event_msg", {"type": "task_complete", "error": {
        "message": "x", "codex_error_info": "context_window_exceeded"}})]
    assert len(codex_transcript(records_from_objects(same_turn)).main.overflows) == 2


def test_bad_lines_are_reported_and_reading_goes_on() -> None:
    good = current_rollout()
    raw = [json.dumps(o) for o in good]
    raw.insert(3, "{not json")
    raw.insert(5, '"a string"')
    raw.insert(7, json.dumps({"type": "mystery", "payload": {}}))
    raw.insert(9, json.dumps({"type": "response_item", "payload": 5}))
    raw.insert(11, json.dumps({"type": "response_item", "payload": {"no": "type"}}))
    data = ("\n".join(raw) + "\n" + '{"timestamp": "x", "type": "event_m').encode()
    r = read_rollout_bytes(data, "bad.jsonl")
    kinds = sorted((d.line, d.kind) for d in r.diagnostics)
    assert kinds == [(4, "skipped"), (6, "skipped"), (8, "skipped"), (10, "skipped"), (12, "skipped"),
                     (len(raw) + 1, "skipped")]
    assert any("truncated last line" in d.reason for d in r.diagnostics)
    t = codex_transcript(r)
    assert len(t.diagnostics) == 6 and len(t.main.requests) == 4 and len(t.main.compactions) == 1


def test_empty_binary_and_missing(tmp_path: Path) -> None:
    import pytest

    from sessiontools.errors import InputError

    assert read_rollout_bytes(b"\x00\x01", "b").diagnostics[0].kind == "fatal"
    assert read_rollout_bytes(b"\n\n", "e").diagnostics[0].kind == "fatal"
    with pytest.raises(InputError):
        load_rollout(tmp_path / "nope.jsonl")
    with pytest.raises(InputError):
        load_rollout(tmp_path)


def test_sniff_and_default_dir(tmp_path: Path) -> None:
    assert is_rollout(json.dumps(current_rollout()[0]).encode() + b"\n")
    assert is_rollout(b'{"id": "L", "timestamp": "t", "instructions": ""}\n')
    assert not is_rollout(b'{"type": "session", "id": "pi", "version": 3}\n')
    assert default_sessions_dir({"CODEX_HOME": "/c"}, "/h") == Path("/c/sessions")
    assert default_sessions_dir({}, "/h") == Path("/h/.codex/sessions")


def test_2025_count_before_items_as_0_4x_writes_them() -> None:
    """Codex 0.4x-0.50 rollouts write a response's token_count before its items (0.98+ after them).
    Each count's request then has as context everything before the count and as reply the first
    assistant item after it; the count just before `compacted` with no reply is the summarisation
    call (not an agent request), and the compaction's tokens_before is the last agent request's."""
    objs = [
        line("session_meta", {"id": "S9", "cwd": "/w", "cli_version": "0.47.0"}),
        line("response_item", user("list the files")),
        line("event_msg", count(usage(400, 0, 10), usage(400, 0, 10), 272000)),
        line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}),
        line("response_item", call("c1", "ls")),
        line("response_item", output("c1", "a.py b.py")),
        line("event_msg", count(usage(600, 384, 20), usage(1000, 384, 30), 272000)),
        line("response_item", assistant("two files")),
        line("event_msg", count(usage(700, 0, 50), usage(1700, 384, 80), 272000)),  # the summarisation call
        line("compacted", {"message": "the summary"}),
        line("response_item", user("next")),
        line("event_msg", count(usage(90, 0, 5), usage(1790, 384, 85), 272000)),
        line("response_item", assistant("ok")),
    ]
    p = codex_transcript(records_from_objects(objs)).main
    assert [r.usage.total for r in p.requests] == [410, 620, 95]
    assert p.skipped["compaction summarisation call"] == 1
    assert [m.text for m in p.context(p.requests[0])] == ["list the files"]
    first, second = p.requests[0], p.requests[1]
    assert p.messages[first.index].role == Role.ASSISTANT and p.messages[second.index].text == "two files"
    assert [m.role for m in p.context(second)] == [Role.USER, Role.ASSISTANT, Role.ASSISTANT, Role.TOOL]
    (c,) = p.compactions
    assert c.tokens_before == 620 and c.summary == "the summary"
    assert p.messages[p.requests[2].index].text == "ok"


def test_billed_calls_include_compaction_summaries_as_the_totals_say() -> None:
    """inspect's usage is every call the counts bill: the compaction's summarisation call too (it
    is no agent request of the path), so the sum equals the last total_token_usage."""
    objs = current_rollout()
    t = codex_transcript(records_from_objects(objs))
    assert len(t.billed) == len(t.main.requests) + 1
    final = usage(5200, 2880, 275)
    assert sum(r.usage.input + r.usage.cache_read for r in t.billed) == final["input_tokens"]
    assert sum(r.usage.cache_read for r in t.billed) == final["cached_input_tokens"]
    assert sum(r.usage.output for r in t.billed) == final["output_tokens"]
    assert {r.model for r in t.billed} == {"m1"}


def test_a_spawned_subagent_does_not_bill_its_parents_replayed_counts() -> None:
    """Codex 0.119+ starts a spawned subagent's rollout with the parent's counts, written in one
    second: they are the parent's calls (ccusage skips them too); the subagent's own calls follow."""
    p1, p2 = usage(1000, 0, 10), usage(1200, 900, 20)
    own = usage(500, 100, 30)
    ts = "2026-04-15T17:58:29.4{}Z"
    objs = [
        line("session_meta", {"id": "S2", "cwd": "/w", "cli_version": "0.119.0", "model_provider": "openai",
                              "source": {"subagent": {"thread_spawn": {"parent_thread_id": "P", "depth": 1}}}}),
        line("turn_context", {"turn_id": "T1", "model": "gpt-5.4", "cwd": "/w"}),
        line("event_msg", count(p1, p1), ts=ts.format("77")),
        line("event_msg", count(p2, usage(2200, 900, 30)), ts=ts.format("79")),
        line("response_item", user("explore")),
        line("event_msg", count(own, usage(2700, 1000, 60)), ts="2026-04-15T17:58:35.000Z"),
    ]
    t = codex_transcript(records_from_objects(objs))
    assert [(r.usage.input, r.usage.cache_read, r.usage.output) for r in t.billed] == [(400, 100, 30)]
    objs[0]["payload"].pop("source")  # not spawned: every count is its own
    assert len(codex_transcript(records_from_objects(objs)).billed) == 3


def test_a_summary_call_that_records_no_item_is_not_an_agent_request() -> None:
    """0.77 - 0.1xx write no item for the summarisation reply: the count right before `compacted` with no
    model item since the previous count is that call (not billed to the agent's path, not its tokens
    before); a user-role warning Codex writes itself mid-turn is Role.OTHER (it starts no turn)."""
    warn = user("Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead.")
    objs = [
        line("session_meta", {"id": "S9", "cli_version": "0.77.0"}),
        line("response_item", user("Task 1: edit a.py")),
        line("response_item", call("c1", "apply_patch <<'PATCH'")),
        line("event_msg", count(usage(1000, 0, 20), usage(1000, 0, 20))),
        line("response_item", warn),
        line("response_item", output("c1", "Success.")),
        line("event_msg", count(usage(1000, 0, 20), usage(1000, 0, 20))),  # repeated
        line("event_msg", count(usage(900, 0, 80), usage(1900, 0, 100))),  # the summarisation call
        line("event_msg", count(usage(0, 0, 0) | {"total_tokens": 300}, usage(1900, 0, 100))),
        line("compacted", {"message": PREFIX + "## Goal\n- edit a.py"}),
        line("event_msg", count(usage(0, 0, 0) | {"total_tokens": 300}, usage(1900, 0, 100))),  # again
        line("response_item", assistant("done")),
        line("event_msg", count(usage(400, 0, 5), usage(2300, 0, 105))),
    ]
    t = codex_transcript(records_from_objects(objs))
    p = t.main
    (c,) = p.compactions
    assert c.tokens_before == 1020 and c.tokens_after == 300
    assert [r.usage.total for r in p.requests] == [1020, 405]
    assert p.skipped["compaction summarisation call"] == 1
    assert [m.role for m in p.messages if "Warning: apply_patch" in m.text] == [Role.OTHER]
    assert sum(b.usage.total for b in t.billed) == 1020 + 980 + 405  # every billed call still counted
