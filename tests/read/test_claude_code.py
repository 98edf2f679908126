"""The Claude Code reader on small synthetic transcripts written here (shapes as 2.1.332 writes them)."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontools.read.claude_code import (
    default_projects_dir,
    looks_like_claude_code,
    parse_bytes,
)
from sessiontools.read.sources import expand_sources
from sessiontools.transcript.claude_code import claude_transcript, load_claude_transcript, summary_text
from sessiontools.transcript.model import Role, Trigger, UnitKind

SID = "s-1"


def _line(uuid: str | None, parent: str | None, type_: str = "user", **kw) -> dict:
    d = {"type": type_, "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": SID,
         "timestamp": "2026-01-01T00:00:00Z", "version": "2.1.332", "cwd": "/w"}
    d.update(kw)
    return d


def _user(uuid, parent, content, **kw):
    return _line(uuid, parent, "user", message={"role": "user", "content": content}, **kw)


def _asst(uuid, parent, mid, blocks, usage=(10, 100, 50, 5), model="claude-x", **kw):
    u = {"input_tokens": usage[0], "cache_read_input_tokens": usage[1], "cache_creation_input_tokens": usage[2],
         "output_tokens": usage[3]}
    return _line(uuid, parent, "assistant", message={"id": mid, "role": "assistant", "model": model,
                                                     "content": blocks, "usage": u, "stop_reason": "end_turn"}, **kw)


def _tool_use(tid, name="Read", **inp):
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def _result(tid, text):
    return [{"type": "tool_result", "tool_use_id": tid, "content": text}]


def _bytes(lines: list) -> bytes:
    return b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines)


def _summary_text(s: str) -> str:
    return (f"This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n{s}"
            "\n\nIf you need specific details from before compaction, read the full transcript at: /x.jsonl\n"
            "Continue the conversation from where it left off without asking the user any further questions.")


def _basic() -> list:
    return [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SID},
        _user("u1", None, "Task 1: read a.py"),
        _line("a0", "u1", "attachment", attachment={"type": "date", "date": "2026-01-01"}),
        _asst("a1", "a0", "msg_1", [{"type": "text", "text": "Reading."}]),
        _asst("a2", "a1", "msg_1", [_tool_use("t1", file_path="/w/a.py")]),  # same response, same usage
        _user("r1", "a2", _result("t1", "1\tprint(1)")),
        _asst("a3", "r1", "msg_2", [_tool_use("t2", file_path="/w/b.py")], usage=(0, 200, 30, 7)),
        _asst("a4", "a3", "msg_2", [_tool_use("t3", file_path="/w/c.py")], usage=(0, 200, 30, 7)),
        _user("r2", "a3", _result("t2", "b")),  # parallel results: each on its own tool_use line
        _user("r3", "a4", _result("t3", "c")),
        _asst("a5", "r3", "msg_3", [{"type": "text", "text": "Done."}], usage=(0, 300, 40, 9)),
        {"type": "last-prompt", "lastPrompt": "Task 1", "leafUuid": "a5", "sessionId": SID},
    ]


def test_usage_is_deduplicated_and_side_results_are_on_the_path() -> None:
    t = claude_transcript(parse_bytes(_bytes(_basic()), "x.jsonl"))
    assert t.format == "claude-code-2.1" and t.session_id == SID and t.diagnostics == []
    m = t.main
    assert m is not None and len(t.paths) == 1
    assert [x.id for x in m.messages] == ["u1", "a1", "a2", "r1", "a3", "a4", "r2", "r3", "a5"]
    assert [x.role for x in m.messages][:4] == [Role.USER, Role.ASSISTANT, Role.ASSISTANT, Role.TOOL]
    assert [r.id for r in m.requests] == ["msg_1", "msg_2", "msg_3"]
    assert [r.index for r in m.requests] == [1, 4, 8]
    assert m.requests[1].usage.prompt == 230 and m.requests[1].usage.cache_write == 30
    assert m.requests[2].context == ((0, 8),)
    assert m.messages[2].units[0].kind is UnitKind.TOOL_CALL
    assert m.messages[2].units[0].text == 'Read {"file_path": "/w/a.py"}'


def test_compaction_with_preserved_segment_and_context_after_it() -> None:
    lines = _basic() + [
        _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="a5", content="Conversation compacted",
              compactMetadata={"trigger": "auto", "preTokens": 12345, "postTokens": 4000,
                               "preservedSegment": {"headUuid": "a3", "anchorUuid": "s1", "tailUuid": "a5"},
                               "preservedMessages": {"anchorUuid": "s1", "uuids": ["a3", "a4", "r2", "r3", "a5"]}}),
        _user("s1", "b1", _summary_text("## Goal\n- read a.py"), isCompactSummary=True),
        _line("f1", "s1", "attachment", attachment={"type": "file", "filename": "/w/a.py"}),
        _user("u2", "f1", "Task 2: more"),
        _asst("a6", "u2", "msg_4", [{"type": "text", "text": "OK."}], usage=(0, 50, 50, 3)),
    ]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    m = t.main
    assert m is not None and [x.id for x in m.messages][-3:] == ["s1", "u2", "a6"]
    (c,) = m.compactions
    assert c.index == 9 and c.trigger is Trigger.THRESHOLD and c.tokens_before == 12345 and c.tokens_after == 4000
    assert c.summary == "## Goal\n- read a.py" and c.kept == ((4, 9),) and c.line == 13
    assert m.messages[9].role is Role.SUMMARY
    assert m.requests[-1].context == ((9, 10), (4, 9), (10, 11))
    # the provider limit tells a reactive compaction apart
    t2 = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"), provider_limit=12000)
    assert t2.main.compactions[0].trigger is Trigger.OVERFLOW
    manual = [dict(x) for x in lines]
    manual[12] = {**manual[12], "compactMetadata": {**manual[12]["compactMetadata"], "trigger": "manual"}}
    assert claude_transcript(parse_bytes(_bytes(manual))).main.compactions[0].trigger is Trigger.MANUAL


def test_bad_lines_are_reported_and_reading_goes_on(tmp_path: Path) -> None:
    lines = _basic()
    data = _bytes(lines[:3]) + b"{not json\n" + b"[1, 2]\n" + _bytes([{"no": "type"}, {"type": "user", "uuid": "z"},
                                                                        lines[1], {"type": "brand-new", "x": 1}])
    data += _bytes(lines[3:]) + b'{"type": "user", "uuid": "tr'  # truncated last line
    f = parse_bytes(data, "bad.jsonl")
    reasons = [(d.line, d.kind, d.reason) for d in f.diagnostics]
    assert (4, "skipped", "not JSON") in reasons
    assert (5, "skipped", "not a JSON object (list)") in reasons
    assert (6, "skipped", "no 'type'") in reasons
    assert (7, "skipped", "user line without a 'message' object") in reasons
    assert any(r[0] == 8 and "duplicate uuid u1" in r[2] for r in reasons)
    assert any(r[0] == 9 and r[1] == "notice" and "brand-new" in r[2] for r in reasons)
    assert reasons[-1][2] == "truncated last line (not JSON)"
    t = claude_transcript(f)
    assert len(t.main.requests) == 3  # everything that could be read is read
    p = tmp_path / "bad.jsonl"
    p.write_bytes(data)
    before = p.read_bytes()
    assert len(load_claude_transcript(p).diagnostics) == len(f.diagnostics)
    assert p.read_bytes() == before  # inputs are never written


def test_sidechains_are_separate_paths() -> None:
    side = [
        _user("x1", "a2", "Subagent: look at c.py", isSidechain=True, agentId="ag1"),
        _asst("x2", "x1", "msg_s1", [_tool_use("ts", file_path="/w/c.py")], isSidechain=True),
        _user("x3", "x2", _result("ts", "c"), isSidechain=True),
        _asst("x4", "x3", "msg_s2", [{"type": "text", "text": "c is small"}], isSidechain=True),
    ]
    lines = _basic()
    lines = lines[:6] + side + lines[6:]
    t = claude_transcript(parse_bytes(_bytes(lines)))
    assert [p.sidechain for p in t.paths] == [False, True]
    main, sub = t.paths
    assert not any(m.id and m.id.startswith("x") for m in main.messages)
    assert [m.id for m in sub.messages] == ["x1", "x2", "x3", "x4"]  # the subagent starts at its prompt
    assert [r.id for r in sub.requests] == ["msg_s1", "msg_s2"] and sub.requests[1].context == ((0, 3),)
    assert [r.id for r in main.requests] == ["msg_1", "msg_2", "msg_3"]


def test_subagent_files_are_sidechains_of_their_session(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-w"
    (project / SID / "subagents").mkdir(parents=True)
    (project / f"{SID}.jsonl").write_bytes(_bytes(_basic()))
    sub = [_user("y1", None, "Explore c.py", isSidechain=True),
           _asst("y2", "y1", "msg_y", [{"type": "text", "text": "c"}], isSidechain=True),
           _user("y3", "gone", "orphan", isSidechain=True)]
    (project / SID / "subagents" / "agent-a1.jsonl").write_bytes(_bytes(sub))
    files = list(expand_sources([tmp_path / "projects"]))
    assert files == [project / f"{SID}.jsonl"]  # the subagent file is read with its session
    t = load_claude_transcript(files[0])
    assert [p.sidechain for p in t.paths] == [False, True, True]
    assert [r.id for r in t.paths[1].requests] == ["msg_y"]
    assert any("parentUuid gone is not in the file" in d.reason and d.kind == "notice" for d in t.diagnostics)
    explicit = project / SID / "subagents" / "agent-a1.jsonl"
    assert list(expand_sources([explicit])) == [explicit]
    assert len(load_claude_transcript(files[0], subagents=False).paths) == 1


def test_legacy_file_that_begins_with_the_summary_and_synthetic_overflow() -> None:
    lines = [
        {"type": "summary", "summary": "Fix the parser", "leafUuid": "l9"},
        _user("s0", None, _summary_text("## Goal\n- old work")),
        _user("u1", "s0", "go on"),
        _asst("e1", "u1", "msg_e", [{"type": "text", "text": "Prompt is too long"}], usage=(0, 0, 0, 0),
              model="<synthetic>", isApiErrorMessage=True),
        _asst("a1", "e1", "msg_a", [{"type": "text", "text": "ok"}]),
    ]
    t = claude_transcript(parse_bytes(_bytes(lines)))
    assert t.format == "claude-code-legacy" and t.settings["titles"] == ["Fix the parser"]
    m = t.main
    (c,) = m.compactions
    assert c.index == 0 and c.trigger is Trigger.UNKNOWN and c.tokens_before is None and c.summary == "## Goal\n- old work"
    (o,) = m.overflows
    assert o.index == 2 and o.provider_tokens is None
    assert [r.id for r in m.requests] == ["msg_a"] and m.skipped["synthetic"] == 1
    assert m.requests[0].context == ((0, 2),)  # the synthetic error message is not sent


def test_summary_text_and_locations(tmp_path: Path) -> None:
    assert summary_text(_summary_text("S\nmore")) == "S\nmore"
    assert summary_text("no marker") == "no marker"
    assert default_projects_dir({"CLAUDE_CONFIG_DIR": "/c"}, Path("/h")) == Path("/c/projects")
    assert default_projects_dir({}, Path("/h")) == Path("/h/.claude/projects")
    assert looks_like_claude_code(_bytes(_basic()))
    assert not looks_like_claude_code(b'{"type":"session","version":3,"id":"x"}\n')


def test_parallel_results_written_in_reverse_order() -> None:
    lines = [
        _user("u1", None, "Task 1"),
        _asst("a1", "u1", "msg_1", [_tool_use("t1", file_path="/w/a")]),
        _asst("a2", "a1", "msg_1", [_tool_use("t2", file_path="/w/b")]),
        _user("r2", "a2", _result("t2", "b")),  # the second call's result first ...
        _user("r1", "a1", _result("t1", "a")),  # ... and the next request hangs off the first's
        _asst("a3", "r1", "msg_2", [{"type": "text", "text": "done"}]),
    ]
    m = claude_transcript(parse_bytes(_bytes(lines))).main
    assert [x.id for x in m.messages] == ["u1", "a1", "a2", "r2", "r1", "a3"]
    assert m.requests[-1].context == ((0, 5),)


def test_lines_parented_on_progress_lines_stay_on_the_conversation() -> None:
    """Claude Code 2.0.x writes `progress` lines in the uuid chain and parents the next conversation
    line on them; the conversation must not be cut there (real files lost every request after the
    first progress line, with one 'not in the file' notice each)."""
    def progress(uuid, parent):
        return _line(uuid, parent, "progress", data={"type": "hook_progress"}, toolUseID="t1")

    lines = [
        _user("u1", None, "Task: read a.py"),
        _asst("a1", "u1", "msg_1", [_tool_use("t1", file_path="/w/a.py")]),
        progress("p1", "a1"),
        progress("p2", "p1"),
        _user("r1", "p2", _result("t1", "x")),
        _asst("a2", "r1", "msg_2", [{"type": "text", "text": "Done."}], usage=(0, 200, 30, 7)),
        progress("p3", "a2"),
        _user("u2", "p3", "Next"),
        _asst("a3", "u2", "msg_3", [{"type": "text", "text": "OK."}], usage=(0, 300, 30, 7)),
    ]
    t = claude_transcript(parse_bytes(_bytes(lines), "x.jsonl"))
    assert t.diagnostics == []
    m = t.main
    assert m is not None and len(t.paths) == 1
    assert [x.id for x in m.messages] == ["u1", "a1", "r1", "a2", "u2", "a3"]
    assert [r.id for r in m.requests] == ["msg_1", "msg_2", "msg_3"]
    # a progress line whose own parent is missing still starts a chain, as before
    lone = [progress("p0", "gone"), _user("u1", "p0", "hi"), _asst("a1", "u1", "msg_1", [])]
    t2 = claude_transcript(parse_bytes(_bytes(lone), "x.jsonl"))
    assert [r.id for r in t2.main.requests] == ["msg_1"]


def test_other_tools_jsonl_with_a_session_id_is_not_claude_code() -> None:
    """Another tool's JSONL whose lines carry a `sessionId` (shaped like OpenClaw's trajectory traces:
    dotted event types) is not a Claude Code transcript: it was read as one with 0 entries and a
    notice per line type. A transcript that begins with a line without `sessionId` (a
    file-history snapshot) is still recognised by the lines after it."""
    from sessiontools.read.agents import Agent
    from sessiontools.read.sources import detect_agent

    trace = _bytes([{"traceSchema": "t", "schemaVersion": 1, "sessionId": "s", "seq": k, "type": t, "data": {}}
                    for k, t in enumerate(["session.started", "prompt.submitted", "model.completed"])])
    assert not looks_like_claude_code(trace)
    assert detect_agent(trace) is not Agent.CLAUDE_CODE
    snap = _bytes([{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}, *_basic()[1:]])
    assert looks_like_claude_code(snap)
    assert detect_agent(snap) is Agent.CLAUDE_CODE


def _context_by_definition(b, i):  # type: ignore[no-untyped-def]
    """Request context as the module docstring defines it, rebuilt from every index (the original code)."""
    from sessiontools.transcript.model import merge_ranges, ranges_of

    if b.window is None:
        return ranges_of([j for j in range(i) if j not in b.unsent])
    s, kept = b.window
    return merge_ranges(((s, s + 1), *kept, *ranges_of([j for j in range(s + 1, i) if j not in b.unsent])))


def test_request_contexts_built_incrementally_match_the_definition(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Synthetic replies (never sent) between requests, before and after a compaction: each request's
    context, extended from the previous one's, is what rebuilding it from every index gives."""
    import random

    from bench.corpus_claude import session
    from sessiontools.transcript import claude_builder

    def synthetic(uuid: str, parent: str) -> dict:
        return _asst(uuid, parent, f"msg_{uuid}", [{"type": "text", "text": "No response requested."}],
                     usage=(0, 0, 0, 0), model="<synthetic>")

    lines = [_user("u1", None, "one"), synthetic("x1", "u1"), _user("u2", "x1", "two"),
             _asst("a1", "u2", "m1", [{"type": "text", "text": "A"}]), synthetic("x2", "a1"), synthetic("x3", "x2"),
             _user("u3", "x3", "three"), _asst("a2", "u3", "m2", [{"type": "text", "text": "B"}]),
             _line("b1", None, "system", subtype="compact_boundary", logicalParentUuid="a2",
                   compactMetadata={"trigger": "auto", "preTokens": 9, "preservedMessages": {"uuids": ["u3", "a2"]}}),
             _user("s1", "b1", _summary_text("S"), isCompactSummary=True), synthetic("x4", "s1"),
             _user("u4", "x4", "four"), _asst("a3", "u4", "m3", [{"type": "text", "text": "C"}]),
             synthetic("x5", "a3"), _user("u5", "x5", "five"), _asst("a4", "u5", "m4", [{"type": "text", "text": "D"}])]
    files = [parse_bytes(_bytes(lines)), parse_bytes(session(random.Random(2), 0, 600_000).files["s0000.jsonl"])]
    got = [[r.context for p in claude_transcript(f).paths for r in p.requests] for f in files]
    monkeypatch.setattr(claude_builder.Builder, "_context", _context_by_definition)
    want = [[r.context for p in claude_transcript(f).paths for r in p.requests] for f in files]
    assert got == want and len(got[0]) == 4 and len(got[1]) > 20
    # messages: u1 x1 u2 a1 x2 x3 u3 a2 | s1(8) x4 u4 a3 x5 u5 a4 (the x are synthetic, the boundary no message)
    assert got[0] == [((0, 1), (2, 3)), ((0, 1), (2, 4), (6, 7)), ((8, 9), (6, 8), (10, 11)),
                      ((8, 9), (6, 8), (10, 12), (13, 14))]


def test_every_first_line_shape_is_recognised_by_content() -> None:
    """Files that start with a file-history snapshot, a summary title, a mode line, or a first user
    message of 20 KB and more (cut by the end of the sniffed head) are Claude Code transcripts;
    before, a large first message pushed the sniffing past its 8 KiB window and the file was read as
    "not a Pi session". The head the CLI sniffs is 64 KiB (`read.sources.SNIFF_BYTES`)."""
    from sessiontools.read.agents import Agent
    from sessiontools.read.sources import SNIFF_BYTES, detect_agent

    body = _basic()[1:]
    big = _user("u1", None, "x" * 20_000 + " Task 1")
    huge = _user("u1", None, "y" * 200_000)
    snap = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"trackedFileBackups": {}},
            "isSnapshotUpdate": False}
    title = {"type": "summary", "summary": "A title", "leafUuid": "a5"}
    mode = {"type": "permission-mode", "permissionMode": "default", "sessionId": SID}
    shapes = {
        "big first message": [big, *body[1:]],
        "snapshot, then a big message": [snap, big, *body[1:]],
        "first line longer than the head": [huge, *body[1:]],
        "summary title first": [title, *body],
        "snapshot first": [snap, *body],
        "mode line first": [mode, *body],
    }
    for name, lines in shapes.items():
        head = _bytes(lines)[:SNIFF_BYTES]
        assert looks_like_claude_code(head), name
        assert detect_agent(head) is Agent.CLAUDE_CODE, name
    # and the whole file reads with every request (the big message is the first message)
    t = claude_transcript(parse_bytes(_bytes(shapes["snapshot, then a big message"])))
    assert [r.id for r in t.main.requests] == ["msg_1", "msg_2", "msg_3"]
    # what is not Claude Code stays so, however it is cut
    pi = b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/w"}\n'
    assert not looks_like_claude_code(pi)
    pi_entry = json.dumps({"type": "message", "id": "a", "parentId": None, "message": {"content": "z" * 70_000}})
    assert not looks_like_claude_code(pi_entry.encode()[:SNIFF_BYTES])
