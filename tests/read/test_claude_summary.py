"""The C's summary of a Claude Code session (`read.claude_code.summary`, sessiontools/read/_claude.c)
against the ordinary way: `inspect`'s JSON byte for byte, over the samples, the probes, the bad
fixtures, the benchmark's corpus, real files when this machine has them, and fuzzed files (odd
values in every field, cut lines and files, lone surrogates, huge numbers, unknown types, duplicated
ids and uuids, escapes, relinked progress lines, sidechains, compactions). Where the C is not sure
it says None and the session goes the ordinary way: each test also counts how many sessions the C
summed up itself, so a C that gave up on everything would fail them too."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read.claude_code import summary as summary_mod
from sessiontools.read.claude_code.load import load_claude_session, parse_bytes
from sessiontools.read.claude_code.summary import ClaudeSummary, summarize
from sessiontools.read.sources import expand_sources, load_source
from tests.conftest import BAD, ROOT, SAMPLES
from tests.robust.mutate import BASES, ODD_VALUES, dumps, field_paths, line_object, mutated, one_line_per_kind

CLAUDE = sorted((SAMPLES / "claude-code").glob("*.jsonl"))
PROBES = sorted((ROOT / "tests" / "fixtures" / "claude_probes").glob("*.jsonl.gz"))
CORPUS = ROOT / "bench" / "corpus-claude-code"
#: Real transcripts downloaded by earlier sessions (never committed): read when present.
REAL = [Path(p) for p in ("/tmp/agents/real/claude", "/tmp/b-claude", "/tmp/B/real", "/tmp/B/real2")]


def _native() -> None:
    if summary_mod.claude_summary is None:
        pytest.skip("the C extension is not built on this machine")


def _json(source: Any) -> bytes:
    return orjson.dumps(inspect_source(source))


def _same(datas: list[bytes], limit: int | None = 5_000_000) -> bool:
    """inspect's JSON of a session (its file's bytes, then its subagent files') is the same from the
    C's summary as the ordinary way; True when the C summed it up (False: it said not sure)."""
    paths = ["s.jsonl", *(f"s/subagents/agent-{i}.jsonl" for i in range(1, len(datas)))]
    f = parse_bytes(datas[0], paths[0], max_line_bytes=limit, texts=False)
    f.subagents = [parse_bytes(d, p, max_line_bytes=limit, texts=False) for d, p in zip(datas[1:], paths[1:], strict=True)]
    s = summarize(datas, paths, limit)
    if s is None:
        return False
    assert _json(s) == _json(f)
    assert repr(s.diagnostics) == repr(f.diagnostics)  # (what `read.parallel` counts of a file)
    return True


def _fixtures() -> list[bytes]:
    return ([f.read_bytes() for f in CLAUDE] + [gzip.decompress(f.read_bytes()) for f in PROBES]
            + [f.read_bytes() for f in sorted(BAD.rglob("*.jsonl"))])


def test_every_sample_probe_and_bad_fixture() -> None:
    _native()
    summed = sum(_same([data]) for data in _fixtures())
    assert summed >= len(CLAUDE) + len(PROBES)  # (every clean one: the bad ones may go the ordinary way)


def test_a_session_with_its_subagent_files() -> None:
    _native()
    files = [f.read_bytes() for f in CLAUDE]
    assert _same(files[:3]) and _same([files[3], files[3]])  # (the same file twice: one billing)


def _sessions(folder: Path, every: int = 1) -> list[Path]:
    return [Path(f) for f in expand_sources([folder])][::every]


def _session_datas(f: Path) -> list[bytes]:
    from sessiontools.read.claude_code.load import subagent_files

    return [f.read_bytes(), *(s.read_bytes() for s in subagent_files(f))]


def test_the_benchmark_corpus() -> None:
    _native()
    if not CORPUS.is_dir():
        pytest.skip("bench/corpus-claude-code not made (python -m bench.corpus_claude)")
    files = _sessions(CORPUS, 3)
    assert sum(_same(_session_datas(f)) for f in files) == len(files)


@pytest.mark.parametrize("folder", REAL, ids=lambda p: p.name)
def test_real_transcripts(folder: Path) -> None:
    """A sample of each folder (all of them once by hand: see the closing note)."""
    _native()
    if not folder.is_dir():
        pytest.skip(f"{folder}: not on this machine")
    files = _sessions(folder, 40)
    summed = 0
    for f in files:
        datas = _session_datas(f)
        if b'"sessionId"' not in datas[0][:65536]:
            continue  # (not a Claude Code transcript: another tool's file in the backup)
        summed += _same(datas)
    assert summed >= len(files) // 2


def test_through_load_source_and_without_the_c(monkeypatch: pytest.MonkeyPatch) -> None:
    _native()
    session = CLAUDE[0]
    s = load_source(session, selective=True)
    assert isinstance(s, ClaudeSummary)
    with monkeypatch.context() as m:
        m.setattr(summary_mod, "claude_summary", None)
        plain = load_source(session, selective=True)
    assert not isinstance(plain, ClaudeSummary) and _json(plain) == _json(s)
    assert _json(load_claude_session(session, texts=False)) == _json(s)


def _lines(path: Path = BASES["claude"]) -> list[str]:
    return path.read_text().splitlines()


def test_every_odd_value_in_every_field() -> None:
    """Each field path of each line of the base file set to each odd value (wrong types, huge and
    negative numbers, lone surrogates, empty strings, ...), one at a time."""
    _native()
    lines = _lines()
    checked = summed = 0
    for index, obj in one_line_per_kind(lines):
        one = [lines[0], lines[index - 1], lines[index]]  # (with its parent line, most often)
        for k, path in enumerate(field_paths(obj)):
            for value in ODD_VALUES[k % 2::2]:
                summed += _same([("\n".join(mutated(one, 2, path, value)) + "\n").encode()])
                checked += 1
    assert checked > 300 and summed > checked // 10


@pytest.mark.parametrize("cut", [0.05, 0.21, 0.37, 0.5, 0.73, 0.99])
def test_cut_files(cut: float) -> None:
    _native()
    for data in (f.read_bytes() for f in CLAUDE[:5]):
        _same([data[: int(len(data) * cut)]])


def _edits(lines: list[str], rng: random.Random) -> list[str]:
    """One random edit of a file's lines: a line copied, dropped, moved, cut, doubled in place,
    its type changed, an id made equal to another line's, its keys escaped or spaced, garbage."""
    out = list(lines)
    i, j = rng.randrange(len(out)), rng.randrange(len(out))
    op = rng.randrange(12)
    obj, other = line_object(out[i]), line_object(out[j])
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else None
    if op == 0:
        out.insert(j, out[i])  # a duplicated line (uuid and message id)
    elif op == 1:
        del out[i]
    elif op == 2:
        out.insert(j, out.pop(i))
    elif op == 3:
        out[i] = out[i][: rng.randrange(len(out[i]) + 1)]
    elif op == 4:
        out[i] = out[i] + out[j]  # two lines glued
    elif op == 5:
        obj["type"] = rng.choice(["progress", "made-up", "system", "user", "assistant", "attachment", "summary"])
        out[i] = dumps(obj)
    elif op == 6 and msg is not None and isinstance(other.get("message"), dict):
        msg["id"] = other["message"].get("id")  # another response's id (a streamed response's lines)
        obj["requestId"] = other.get("requestId") if rng.random() < 0.5 else obj.get("requestId")
        out[i] = dumps(obj)
    elif op == 7:
        obj["uuid" if rng.random() < 0.5 else "parentUuid"] = other.get("uuid")
        out[i] = dumps(obj)
    elif op == 8:
        out[i] = out[i].replace('"type":', '"ty\\u0070e":', 1) if rng.random() < 0.5 else out[i].replace(":", ": ", 3)
    elif op == 9:
        obj["isSidechain"] = not obj.get("isSidechain")
        out[i] = dumps(obj)
    elif op == 10:
        out[i] = rng.choice(["", "   ", "{", "[]", "null", '{"type": 5}', "\x00", '"x"'])
    else:
        obj["cwd"] = rng.choice(["C:\\Users\\x", "\u00e9t\u00e9", "a\"b", "\ud83d\ude00"])
        obj["timestamp"] = rng.choice([obj.get("timestamp"), "2025-01-01T00:00:00.000Z", "\\u0032"])
        out[i] = dumps(obj)
    return out


def _shaped() -> list[list[str]]:
    """Base files holding what the samples seldom do: progress lines in the uuid chain, a boundary
    with preserved messages, a sidechain with parallel tool results, rendered attachments, a
    synthetic reply, a compact summary marked by its text, a legacy summary-first file."""
    lines = _lines(CLAUDE[0])
    rows = [json.loads(x) for x in lines if x.strip()]
    talk = [r for r in rows if r.get("type") in ("user", "assistant")]
    last = talk[-1]
    base = {"sessionId": last.get("sessionId"), "timestamp": last.get("timestamp"), "isSidechain": False,
            "version": "2.1.99", "cwd": "/w"}

    def user(uuid: str, parent: str | None, content: Any, **kw: Any) -> dict[str, Any]:
        return {**base, "type": "user", "uuid": uuid, "parentUuid": parent,
                "message": {"role": "user", "content": content}, **kw}

    def reply(uuid: str, parent: str, mid: str, out: int, **kw: Any) -> dict[str, Any]:
        usage = {"input_tokens": 10, "output_tokens": out, "cache_read_input_tokens": 5,
                 "cache_creation_input_tokens": 2, "cache_creation": {"ephemeral_1h_input_tokens": 1}}
        return {**base, "type": "assistant", "uuid": uuid, "parentUuid": parent, "requestId": "r-" + mid,
                "message": {"id": mid, "model": kw.pop("model", "claude-sonnet-4-5"), "role": "assistant",
                            "content": [{"type": "tool_use", "id": "t" + uuid, "name": "Bash", "input": {}}],
                            "usage": usage}, **kw}

    tool = [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]
    side = {"isSidechain": True}
    extra = [
        user("o1", "gone", "orphan"), {"type": "made-up", "x": 1},
        {**base, "type": "progress", "uuid": "p1", "parentUuid": last["uuid"]},
        reply("y0", "p1", "m0", 1, model="<synthetic>"),  # (preserved below, but never sent: not kept)
        user("u1", "y0", "  \n<command-name>/x</command-name>"),
        reply("a1", "u1", "m1", 1), reply("a2", "a1", "m1", 7),
        user("t1", "a1", tool), user("t2", "a2", tool),
        reply("e1", "t2", "m5", 3, model="claude-opus-4-1"), reply("e2", "e1", "m5", 3),  # a tie: the first line's
        {**base, "type": "api-request", "uuid": "q1", "parentUuid": "e2"},
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "e2", "compactMetadata": {"trigger": "auto", "preTokens": 170000,
                                                        "preservedMessages": {"uuids": ["y0", "t1", "zz", 5, "u1"]}}},
        user("s1", "b1", [{"type": "text", "text": "\u2003This session is being continued from a previous conversation"}]),
        {**base, "type": "attachment", "uuid": "at1", "parentUuid": "s1",
         "attachment": {"type": "queued_command", "prompt": "more", "origin": {"kind": "human"}}},
        {**base, "type": "attachment", "uuid": "at1b", "parentUuid": "at1",
         "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "and this"}]}},
        {**base, "type": "attachment", "uuid": "at2", "parentUuid": "at1b",
         "attachment": {"type": "queued_command", "prompt": "more", "commandMode": "task-notification"}},
        reply("a3", "at2", "m3", 4, model="<synthetic>", isApiErrorMessage=True),
        user("u2", "a3", [{"type": "text", "text": "go"}], isMeta=True),
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b2", "parentUuid": "u2",
         "compactMetadata": {"trigger": "manual", "preTokens": 9,
                             "preservedSegment": {"headUuid": "u1", "tailUuid": "u2"}}},
        user("c1", "u2", "task", **side), reply("c2", "c1", "m9", 3, **side), reply("c3", "c2", "m9", 5, **side),
        user("c4", "c2", tool, **side), user("c5", "c3", tool, **side),
        reply("c6", "c2", "m1", 50, **side),  # (a leaf beside tool results: a path of its own)
        {"type": "summary", "summary": "a title", "leafUuid": "c5"},
        user("u3", "b2", "last"),
    ]
    legacy = [dumps(x) for x in (  # (a summary first, no boundary: the legacy format)
        user("l0", None, "This session is being continued from a previous conversation. Summary: x"),
        user("l1", "l0", "hi"), reply("l2", "l1", "mL", 5), user("l3", "l2", tool), reply("l4", "l3", "mM", 2))]
    return [[*lines, *(dumps(x) for x in extra)], legacy]


def test_the_shaped_files_are_summed_up_by_the_c() -> None:
    _native()
    for lines in _shaped():
        assert _same([("\n".join(lines) + "\n").encode()])


def test_fuzzed_files() -> None:
    """Random edits (`_edits`, a fixed seed) of the shaped files and the samples, one to three at a time."""
    _native()
    rng = random.Random(28)
    bases = [*_shaped(), *(_lines(f) for f in CLAUDE[:4])]
    summed = 0
    for n in range(600):
        lines = bases[n % len(bases)]
        for _ in range(1 + n % 3):
            lines = _edits(lines, rng) or lines
        datas = [("\n".join(lines) + rng.choice(["\n", ""])).encode()]
        if n % 5 == 0:
            datas.append(("\n".join(bases[(n + 1) % len(bases)]) + "\n").encode())  # a subagent file
        summed += _same(datas, rng.choice([None, 5_000_000, 2_000]))
    assert summed > 100


def test_huge_numbers_and_escapes_in_the_counts() -> None:
    _native()
    lines = _lines(CLAUDE[1])
    i = next(k for k, x in enumerate(lines) if '"usage"' in x)
    for text in ['"output_tokens":1e3', '"output_tokens":123456789012345678901', '"output_tokens":-0',
                 '"output_tokens":100000001', '"output_tokens":1.0', '"output_tokens":null', '"out\\u0070ut_tokens":9']:
        edited = list(lines)
        edited[i] = edited[i].replace('"output_tokens":', text + ',"x":', 1)
        _same([("\n".join(edited) + "\n").encode()])
