"""The common records of a lean Codex reading fed to the transcript's builder in C
(`read._native.codex_feed`, sessiontools/read/_codex_path.c, issue 28) give the transcript (messages,
requests, compactions, overflows, billed requests, settings) and the `inspect` output that
`_Builder.feed` alone gives: over every sample rollout and Codex probe, the synthetic bench rollouts,
and generated rollouts that mix every record the C takes with those it leaves to Python (session metas,
user and summary messages, compactions and Codex's estimate after them, overflows, repeated and zero
counts, usage records that match or not, counts beyond 63 bits, roles and types that are no str)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.analysis.inspect_transcript import inspect_transcript
from sessiontools.read.codex.load import read_rollout_bytes
from sessiontools.transcript import codex
from tests.conftest import ROOT, SAMPLES
from tests.read.test_native_project import _native

ROLLOUTS = sorted((SAMPLES / "codex").glob("*.jsonl"))
PROBES = sorted((ROOT / "tests" / "fixtures" / "codex_probes").glob("*.jsonl.gz"))


def _taken(data: bytes) -> int:
    """How many records the C takes from the start of a lean reading of `data` on, in all."""
    rollout = read_rollout_bytes(data, "r.jsonl", lean=True)
    b = codex._Builder(rollout, lean=True)
    taken = i = 0
    records = rollout.records
    while i < len(records):
        j = codex._codex_feed(b, records, i, codex._KINDS)
        taken += j - i
        if j < len(records):
            b.feed(records[j])
        i = j + 1
    return taken


def _same(data: bytes, monkeypatch: Any) -> None:
    _native()  # (a skip only without a C compiler)
    rollout = read_rollout_bytes(data, "r.jsonl", lean=True)
    fast = codex.codex_transcript(rollout)
    with monkeypatch.context() as m:
        m.setattr(codex, "_codex_feed", None)
        slow = codex.codex_transcript(rollout)
    assert fast == slow
    assert [m.raw for p in fast.paths for m in p.messages] == [m.raw for p in slow.paths for m in p.messages]
    assert inspect_transcript(fast) == inspect_transcript(slow)


@pytest.mark.parametrize("path", ROLLOUTS + PROBES, ids=lambda p: p.name)
def test_every_sample_and_probe_builds_the_same(path: Path, monkeypatch: Any) -> None:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    _same(data, monkeypatch)


def test_bench_rollouts_build_the_same_and_the_c_takes_most_records(monkeypatch: Any) -> None:
    from bench.corpus_codex import session  # (the generator of bench/corpus-codex, with compactions)

    for n in range(3):
        (data,) = session(random.Random(n), n, 400_000).files.values()
        _same(data, monkeypatch)
        assert _taken(data) > 0.9 * data.count(b"\n")  # (the C path is taken: this compares something)


def _usage(i: int, c: int, o: int) -> dict[str, Any]:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0,
            "total_tokens": i + o}


_PREFIX = "Another language model started to solve this problem and produced a summary of its thinking process."


def _line(kind: str, payload: Any, k: int) -> bytes:
    return orjson.dumps({"timestamp": f"2026-01-01T00:00:{k % 60:02d}.000Z", "ordinal": k, "type": kind,
                         "payload": payload})


def _payload(choice: int, a: int, b: int) -> tuple[str, Any]:
    """One line of a generated rollout: `choice` picks its kind, `a` and `b` its values."""
    items = ["function_call", "function_call_output", "custom_tool_call", "reasoning", "local_shell_call",
             "web_search_call", "compaction", "ghost_snapshot", "tool_search_output"]
    roles = ["assistant", "developer", "system", "user", "other", None, 5]
    total = _usage(a * 100, a * 10, a) if a else _usage(0, 0, 0)
    table: list[tuple[str, Any]] = [
        ("response_item", {"type": items[a % len(items)], "call_id": f"c{b}" if b % 3 else None, "id": f"i{a}",
                           "name": "exec", "arguments": "{}", "output": "ok"}),
        ("response_item", {"type": "message", "role": roles[a % len(roles)],
                           "content": [{"type": "output_text", "text": _PREFIX if b % 5 == 0 else f"t{b}"}]}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "model_context_window": b * 1000,
                                                       "last_token_usage": _usage(b * 10, b, a % 3)}}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": _usage(
            2**63 if b == 7 else 0, 0, 0)}}),
        ("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),
        ("token_usage_record", {"response_id": f"r{a}", "usage": _usage(b * 10, b, a % 3)}),
        ("turn_context", {"model": ["gpt-5", "", None, "o3"][a % 4], "turn_id": "t"}),
        ("event_msg", {"type": ["task_started", "task_complete", "turn_aborted"][a % 3],
                       "model_context_window": [None, 0, 272000][b % 3],
                       "turn_attribution": {"turn_trigger": ["user", "compact"][b % 2]},
                       "error": {"message": "full", "codex_error_info": "context_window_exceeded"} if b % 2 else None}),
        ("event_msg", {"type": "error", "message": "context window exceeded" if a % 2 else "boom"}),
        ("event_msg", {"type": "item_completed", "item": {"type": ["ContextCompaction", "AgentMessage"][a % 2]}}),
        ("compacted", {"message": _PREFIX + " analysis:\nsummary " + str(b) if a % 3 else "",
                       "replacement_history": [
                           {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "kept"}]},
                           {"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": _PREFIX + " s"}]}][: a % 3]}),
        ("response_item", {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "summary " + str(b)}]}),
        ("session_meta", {"id": f"s{a}", "cli_version": "0.171.0", "model_provider": ["openai", None][b % 2],
                          "base_instructions": {"text": "sys" if a % 2 else ""}}),
        ("response_item", {"type": 7}),
    ]
    return table[choice % len(table)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 13), st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=60))
def test_generated_rollouts_build_the_same(lines: list[tuple[int, int, int]]) -> None:
    head = _line("session_meta", {"id": "s", "cli_version": "0.171.0", "model_provider": "openai",
                                  "base_instructions": {"text": "system"}}, 0)
    data = b"\n".join([head] + [_line(*_payload(c, a, b), k) for k, (c, a, b) in enumerate(lines, 1)]) + b"\n"
    with pytest.MonkeyPatch.context() as m:
        _same(data, m)
