"""The lean Codex reading of `inspect` (`read_rollout_bytes(lean=True)`, issue 28: response items
projected by the C scanner, `selective.LEAN_SPEC`; messages without units, `lean_item_message`)
gives the records, the diagnostics and the `inspect` output of the ordinary way: over every sample
rollout, every odd value in every field of every kind of response item, a summarisation call whose
reply is a tool call (its text read from the whole item), and where no compiler built the extension."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.analysis.inspect_transcript import inspect_transcript
from sessiontools.read.codex import load as codex_load
from sessiontools.read.codex.load import ITEM_TYPES, read_rollout_bytes
from sessiontools.read.codex.records import ResponseItem
from sessiontools.transcript.codex import codex_transcript
from sessiontools.transcript.codex_items import item_message, lean_item_message
from tests.conftest import SAMPLES
from tests.read.test_native_project import _JSON, _TEXT, _native
from tests.robust.mutate import ODD_VALUES, field_paths, mutated

ROLLOUTS = sorted((SAMPLES / "codex").glob("*.jsonl"))


def _records(rollout: Any) -> list[Any]:
    """The records with each response item's whole item (a lean reading's from `full_item`)."""
    out = []
    for r in rollout.records:
        item = None
        if type(r) is ResponseItem:
            item = (rollout.full_item(r.line) if rollout.full_item is not None else None) or r.payload
        out.append((type(r).__name__, r, item, getattr(r, "data", None)))
    return out


def _same(data: bytes) -> int:
    """The lean and the ordinary reading agree (records, diagnostics, inspect); how many response
    items the lean one projected."""
    _native()  # (a skip only without a C compiler)
    whole = read_rollout_bytes(data, "r.jsonl")
    lean = read_rollout_bytes(data, "r.jsonl", lean=True)
    assert whole.full_item is None
    assert _records(lean) == _records(whole)
    assert (lean.diagnostics, lean.schema) == (whole.diagnostics, whole.schema)
    assert inspect_transcript(codex_transcript(lean)) == inspect_transcript(codex_transcript(whole))
    return len(lean.full_item.lines) if lean.full_item is not None else 0


def test_every_sample_rollout_reads_the_same_and_most_items_are_projected() -> None:
    projected = items = 0
    for f in ROLLOUTS:
        data = f.read_bytes()
        projected += _same(data)
        items += sum(b'"type":"response_item"' in line for line in data.splitlines()[1:])
    assert items > 100 and projected > 0.9 * items  # (the lean path is taken: this compares something)


def test_a_projection_holds_no_long_field() -> None:
    data = (SAMPLES / "codex" / "codex-pair-a.jsonl").read_bytes()
    lean = read_rollout_bytes(data, "r.jsonl", lean=True)
    kinds = set()
    for r in lean.records:
        if type(r) is ResponseItem and lean.full_item(r.line) is not None:
            kinds.add(r.kind)
            assert not {"output", "arguments", "input", "encrypted_content", "summary"} & r.payload.keys()
            assert all(block.keys() <= {"type"} for block in r.payload.get("content") or ())  # (no texts)
    assert {"message", "function_call", "function_call_output"} <= kinds


@pytest.mark.parametrize("rollout", ROLLOUTS[:3], ids=lambda p: p.name)
def test_every_odd_value_in_every_field_of_an_item_reads_the_same(rollout: Any) -> None:
    lines = rollout.read_text().splitlines()
    checked = 0
    kinds: set[Any] = set()
    for index, line in enumerate(lines):
        obj = orjson.loads(line)
        kind = (obj.get("payload") or {}).get("type"), (obj.get("payload") or {}).get("role")
        if index == 0 or obj.get("type") != "response_item" or kind in kinds:
            continue
        kinds.add(kind)  # one line of each kind of item
        one = [lines[0], line]
        for path in field_paths(obj):
            for value in ODD_VALUES:
                _same(("\n".join(mutated(one, 1, path, value)) + "\n").encode())
                checked += 1
    assert len(kinds) >= 3 and checked > 300


def _line(kind: str, payload: dict[str, Any], second: int) -> bytes:
    return orjson.dumps({"timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "type": kind, "payload": payload,
                         "ordinal": second}) + b"\n"  # (0.171's lines: its request follows its reply)


def _count(total: int, second: int) -> bytes:
    usage = {"input_tokens": total - 10, "cached_input_tokens": 0, "output_tokens": 10,
             "reasoning_output_tokens": 0, "total_tokens": total}
    return _line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": usage, "last_token_usage": usage, "model_context_window": 1000}}, second)


def test_a_summarisation_call_whose_reply_is_a_tool_call_is_dropped_both_ways() -> None:
    """The reply's text (a tool call's `name arguments`, not built by the lean reading) is read from
    the whole item: the call is dropped as the ordinary way drops it."""
    head = _line("session_meta", {"id": "s", "cli_version": "0.120.0", "base_instructions": {"text": "sys"}}, 0)
    turn = _line("turn_context", {"model": "gpt-5", "turn_id": "t"}, 1)
    user = _line("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "hi"}]}, 2)
    call = _line("response_item", {"type": "function_call", "name": "shell", "arguments": '{"cmd":"ls"}',
                                   "call_id": "c1"}, 3)
    compacted = _line("compacted", {"message": 'shell {"cmd":"ls"}', "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}, 5)
    data = head + turn + user + _count(100, 3) + user + call + _count(300, 4) + compacted + _count(50, 6)
    assert _same(data) == 3
    doc = inspect_transcript(codex_transcript(read_rollout_bytes(data, "r.jsonl", lean=True)))
    assert doc["skipped_replies"] == {"compaction summarisation call": 1}
    assert doc["compactions"][0]["tokens_before"] == 100


_ITEMS = [{"type": kind, "role": role, "id": "i", "call_id": call, "content": content}
          for kind in [*sorted(ITEM_TYPES), "unknown_kind", "ContextCompaction"]
          for role in ("user", "assistant", "developer", None)
          for call in ("c", None, 5)
          for content in (None, "text", [{"type": "input_text", "text": "Warning: apply_patch was requested via x"}])]


@pytest.mark.parametrize("item", _ITEMS[::7] + _ITEMS[1::11])
def test_a_lean_message_has_the_ordinary_ones_place_id_and_role(item: dict[str, Any]) -> None:
    lean, whole = lean_item_message(item, 3, 7, "ts"), item_message(item, 3, 7, "ts")
    if lean is None:  # a user message: read whole (its texts decide its role)
        assert (item["type"], item["role"]) == ("message", "user")
        return
    assert (lean.index, lean.id, lean.line, lean.role, lean.timestamp, lean.units) == (
        whole.index, whole.id, whole.line, whole.role, whole.timestamp, ())


def test_without_the_extension_the_lean_reading_is_the_ordinary_one(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ROLLOUTS[0].read_bytes()
    expected = inspect_transcript(codex_transcript(read_rollout_bytes(data, "r.jsonl")))
    monkeypatch.setattr(codex_load, "project_lines", None)
    lean = read_rollout_bytes(data, "r.jsonl", lean=True)
    assert lean.full_item is None
    assert inspect_transcript(codex_transcript(lean)) == expected


@pytest.mark.parametrize("line", [
    b'{"timestamp":"2026-01-01T00:00:01Z","payload":{"type":"message","role":"user"}}',  # no type
    b'{"type":"response_item","payload":{"role":"user","content":[{"text":"x"}]}}',  # an item without one
    b'{"type":"response_item","payload":{"type":"message","role":"user","content":{"text":"x"}}}',
    b'{"type":"response_item","payload":{"type":"message","content":[{"type":"input_text","text":5}]}}',
    b'{"type":"response_item","payload":{"type":"function_call_output","output":[{"type":"x","text":5}]}}',
    b'{"type":"response_item","payload":{"type":"message","content":"a","content":"b"}}',
])
def test_lines_a_projection_must_not_take_read_as_the_ordinary_way_does(line: bytes) -> None:
    head = b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}\n'
    for data in (head + line + b"\n", head + line):
        _same(data)


def test_every_cut_of_a_rollout_reads_the_same() -> None:
    """A rollout cut anywhere (a truncated last line, as a crash leaves one) reads the same both ways."""
    data = ROLLOUTS[0].read_bytes()
    head = data[: data.index(b"\n", 40_000) + 1] if len(data) > 40_000 else data
    for k in range(1, 61):
        _same(head[: len(head) * k // 61])


_ITEM_KEYS = ["type", "role", "id", "call_id", "content", "output", "arguments", "input", "name", "summary",
              "encrypted_content", "text", "message", "info", "usage"]
_ITEM_VALUES = _JSON | st.sampled_from(["message", "user", "assistant", "function_call", "function_call_output",
                                         "reasoning", "compaction", "Warning: apply_patch was requested via x"])
_BLOCKS = st.lists(st.dictionaries(st.sampled_from(["type", "text", "image_url"]) | _TEXT, _ITEM_VALUES, max_size=3),
                   max_size=3)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(_ITEM_KEYS) | _TEXT, _ITEM_VALUES | _BLOCKS, max_size=7), st.booleans())
def test_generated_items_read_the_same(payload: dict[str, Any], ascii_only: bool) -> None:
    head = b'{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}\n'
    line = json.dumps({"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "payload": payload},
                      ensure_ascii=ascii_only, separators=(",", ":")).encode("utf-8", "surrogatepass")
    _same(head + line + b"\n" + line + b"\n")

