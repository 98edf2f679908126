"""Claude Code usage as billed: one usage per response with the final output count, every branch,
sidechain and subagent file counted once; every compact_boundary counted (synthetic transcripts
shaped as Claude Code 2.0.76 - 2.1.x writes them)."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontools.analysis.inspect_transcript import inspect_transcript
from sessiontools.read.claude_code import parse_bytes
from sessiontools.transcript.claude_code import claude_transcript, load_claude_transcript
from sessiontools.transcript.claude_usage import usage_of

SID = "s-usage"


def _line(uuid, parent, type_="user", side=False, **kw):  # type: ignore[no-untyped-def]
    d = {"parentUuid": parent, "isSidechain": side, "userType": "external", "cwd": "/w", "sessionId": SID,
         "version": "2.0.76", "type": type_, "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z"}
    d.update(kw)
    return d


def _user(uuid, parent, text, side=False):  # type: ignore[no-untyped-def]
    return _line(uuid, parent, "user", side, message={"role": "user", "content": text})


def _block(uuid, parent, mid, rid, out, block, side=False, inp=3, read=1000, write=200, stop=None, hour=0):  # type: ignore[no-untyped-def]
    u = {"input_tokens": inp, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
         "output_tokens": out}
    if hour:
        u["cache_creation"] = {"ephemeral_5m_input_tokens": write - hour, "ephemeral_1h_input_tokens": hour}
    return _line(uuid, parent, "assistant", side, requestId=rid,
                 message={"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                          "content": [block], "stop_reason": stop, "usage": u})


def _text(t):  # type: ignore[no-untyped-def]
    return {"type": "text", "text": t}


def _bytes(lines) -> bytes:  # type: ignore[no-untyped-def]
    return b"".join(json.dumps(x, separators=(",", ":")).encode() + b"\n" for x in lines)


def _response(first_uuid, parent, mid, rid, outs, **kw):  # type: ignore[no-untyped-def]
    """One response written as one line per content block, output a running count."""
    lines, prev = [], parent
    for k, out in enumerate(outs):
        uuid = f"{first_uuid}.{k}"
        stop = "end_turn" if k == len(outs) - 1 else None
        lines.append(_block(uuid, prev, mid, rid, out, _text(f"part {k}"), stop=stop, **kw))
        prev = uuid
    return lines, prev


def test_one_usage_per_response_with_the_final_output_count() -> None:
    r1, last1 = _response("a1", "u1", "msg_1", "req_1", [2, 2, 57], hour=150)
    r2, last2 = _response("a2", "u2", "msg_2", "req_2", [8, 130])
    lines = [_user("u1", None, "go"), *r1, _user("u2", last1, "more"), *r2]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert [r.usage.output for r in t.main.requests] == [57, 130]  # the first line had 2 and 8
    assert [r.usage.output for r in t.billed] == [57, 130]
    assert t.billed[0].usage.cache_write_1h == 150 and t.billed[1].usage.cache_write_1h == 0
    rep = inspect_transcript(t)
    assert rep["requests"] == 2
    assert rep["usage"] == {"input": 6, "output": 187, "cache_read": 2000, "cache_write": 400}


def test_responses_off_the_resumed_path_and_sidechains_are_billed_once() -> None:
    """A rewind leaves a branch off the resumed path: its response is billed though replay does not
    walk it; a sidechain replaying a parent's message under a new request id is that response."""
    a, la = _response("a", "u1", "msg_a", "req_a", [5, 40])
    branch, _ = _response("b", la, "msg_b", "req_b", [9, 70])  # abandoned branch
    resumed, lr = _response("c", la, "msg_c", "req_c", [1, 11])
    side, _ = _response("s", None, "msg_s", "req_s", [3, 33], side=True)
    replay = _block("s2", None, "msg_a", "req_other", 40, _text("replayed"), side=True)
    lines = [_user("u1", None, "go"), *a, _user("x1", la, "try this")]
    lines[-1]["uuid"] = "x1"
    branch[0]["parentUuid"] = "x1"
    lines += [*branch, _user("y1", la, "no, that")]
    resumed[0]["parentUuid"] = "y1"
    lines += [*resumed, *side, replay]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert [r.id for r in t.main.requests] == ["msg_a", "msg_c"]
    assert sorted(r.id for r in t.billed) == ["msg_a", "msg_b", "msg_c", "msg_s"]
    assert {r.id: r.usage.output for r in t.billed} == {"msg_a": 40, "msg_b": 70, "msg_c": 11, "msg_s": 33}
    assert inspect_transcript(t)["usage"]["output"] == 154


def test_subagent_files_are_billed_with_their_session(tmp_path: Path) -> None:
    main, last = _response("a", "u1", "msg_1", "req_1", [4, 44])
    sub, _ = _response("q", None, "msg_q", "req_q", [6, 66], side=True)
    f = tmp_path / "p" / "sess.jsonl"
    (tmp_path / "p" / "sess" / "subagents").mkdir(parents=True)
    f.write_bytes(_bytes([_user("u1", None, "go"), *main]))
    (tmp_path / "p" / "sess" / "subagents" / "agent-q.jsonl").write_bytes(_bytes(sub))
    t = load_claude_transcript(f)
    assert sorted((r.id, r.usage.output) for r in t.billed) == [("msg_1", 44), ("msg_q", 66)]
    assert any(p.sidechain for p in t.paths)
    assert load_claude_transcript(f, subagents=False).billed[0].usage.output == 44


def test_every_compact_boundary_is_counted_equal_pre_tokens_too() -> None:
    """Six boundaries in the file are six compactions, on the resumed path or off it (a rewind to
    before a compaction leaves that compaction on a branch); two with equal preTokens are two."""
    lines = [_user("u0", None, "start")]
    prev = "u0"
    fork_at = None
    for k in range(6):
        if k == 4:
            fork_at = prev
        r, prev = _response(f"r{k}", prev, f"msg_{k}", f"req_{k}", [1, 10])
        lines += r
        meta = {"trigger": "auto" if k != 2 else "manual", "preTokens": 150_000 if k in (3, 4) else 140_000 + k}
        lines.append(_line(f"b{k}", None, "system", subtype="compact_boundary", content="Conversation compacted",
                           logicalParentUuid=prev, compactMetadata=meta))
        summary = _line(f"s{k}", f"b{k}", "user", isCompactSummary=True, message={
            "role": "user", "content": "This session is being continued from a previous conversation. Summary: x"})
        lines.append(summary)
        prev = f"s{k}"
    # resume from before the fifth compaction: boundaries 4 and 5 end up off the resumed path
    r, _ = _response("late", fork_at, "msg_late", "req_late", [2, 20])
    lines += r
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    on = [c.line for c in t.main.compactions]
    off = [c.line for c in t.off_path_compactions]
    assert len(on) + len(off) == 6 == t.settings["compact_boundaries"]
    assert off  # the fork really leaves some off the path
    rep = inspect_transcript(t)
    assert len(rep["compactions"]) + len(rep["other_branch_compactions"]) == 6
    pre = [c["tokens_before"] for c in rep["compactions"] + rep["other_branch_compactions"]]
    assert pre.count(150_000) == 2


def test_usage_of_takes_the_one_hour_part_and_rejects_nothing_else() -> None:
    u = usage_of({"input_tokens": 1, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 2,
                  "output_tokens": 3, "cache_creation": {"ephemeral_1h_input_tokens": 12}})
    assert u is not None and (u.input, u.cache_read, u.cache_write, u.output, u.cache_write_1h) == (1, 2, 10, 3, 10)
    assert usage_of({"input_tokens": 0, "output_tokens": 0}) is None
    assert usage_of("x") is None


def test_a_gateway_response_without_request_id_keeps_its_final_line_and_top_level_cache_write() -> None:
    """Claude Code behind ANTHROPIC_BASE_URL (MiniMax, GLM): no `requestId`, the first line of a response
    has only the four counts, the final one adds a `cache_creation` breakdown of zeros that contradicts
    its own `cache_creation_input_tokens`. What the provider billed is the final line's top-level counts
    (input and cache read repeat on every line, output is the running count). ccusage 20.0.24 instead
    takes the breakdown as the cache write and keeps the line with the most tokens by that sum, so it
    keeps the final line of one response (its cache write read as 0) and the first of another (output
    0); that rule reproduced ccusage's totals on 92 of 92 real gateway files (lab), and is not ours."""
    def gw(uuid, parent, mid, out, write, final):  # type: ignore[no-untyped-def]
        d = _block(uuid, parent, mid, None, out, _text("t"), inp=105, read=16000, write=write,
                   stop="end_turn" if final else None)
        del d["requestId"]
        d["message"]["model"] = "MiniMax-M2.1"
        if final:
            d["message"]["usage"]["cache_creation"] = {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}
        return d
    lines = [_user("u1", None, "go"), gw("a1", "u1", "m1", 0, 120, False), gw("a2", "a1", "m1", 188, 120, True),
             _user("u2", "a2", "more"), gw("b1", "u2", "m2", 0, 313, False), gw("b2", "b1", "m2", 26, 313, True)]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert [(r.usage.output, r.usage.cache_write, r.usage.cache_write_1h) for r in t.billed] == [(188, 120, 0), (26, 313, 0)]
    assert inspect_transcript(t)["usage"] == {"input": 210, "output": 214, "cache_read": 32000, "cache_write": 433}
    # ccusage's reading of the same lines: 188 + 0 output, 0 + 313 cache write


def test_a_prompt_answered_above_200k_means_claude_code_ran_at_1m() -> None:
    """Claude Code's windows are 200k and 1M: a request answered with a prompt above 200k shows the
    1M one, whatever the model id says (a gateway's id, the 1M beta), and replay defaults to it (real
    2.1.167 files at 203k - 414k were 'overflow' extras at 200k)."""
    from sessiontools.policies.claude_code import claude_code_policy
    from sessiontools.replay.transcripts import default_window

    def session(read):  # type: ignore[no-untyped-def]
        r, _ = _response("a1", "u1", "msg_1", "req_1", [5, 40], read=read)
        return claude_transcript(parse_bytes(_bytes([_user("u1", None, "go"), *r]), "x.jsonl"))

    big, small = session(205_000), session(150_000)
    assert big.settings["largest_answered_prompt"] == 3 + 205_000 + 200
    pol = claude_code_policy("claude-code", "2.0.76", "claude-sonnet-4-5-20250929")
    assert pol.recorded_window(big.settings) == 1_000_000 and pol.recorded_window(small.settings) is None
    assert default_window(big, big.main, pol) == 1_000_000 and default_window(small, small.main, pol) == 200_000


def test_a_gateway_response_whose_first_line_counts_the_prompt_uncached_keeps_the_final_split() -> None:
    """Another gateway shape (a 2.1.49 file serving a Claude id, `msg_` ids, no `requestId`): the first
    line reports the whole prompt as uncached input with output 1, the final one the same prompt as
    input + cache write with the final output. We keep the final line (ccdrift 0.30.1, which keeps
    each count's largest value over a response's lines, agrees on output and cache write); ccusage
    and cctrack keep the line with the most tokens, here the first (input 26,748, cache write 0)."""
    def gw(uuid, parent, inp, out, write):  # type: ignore[no-untyped-def]
        d = _block(uuid, parent, "msg_20", None, out, _text("t"), inp=inp, read=0, write=write)
        del d["requestId"]
        d["message"]["model"] = "claude-sonnet-4-6"
        return d
    lines = [_user("u1", None, "go"), gw("a1", "u1", 26748, 1, 0), gw("a2", "a1", 2890, 166, 23858)]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert [(r.usage.input, r.usage.output, r.usage.cache_write) for r in t.billed] == [(2890, 166, 23858)]
    assert t.billed[0].usage.prompt == 26748  # the same prompt either way
