"""`serialized_length` (the replay's per-message size of the summariser's input) is the length of
Pi's `serializeConversation(convertToLlm([m]))` as the port builds it, for every message we have."""

from __future__ import annotations

import pytest

from sessiontools.policies.pi.serialize import (
    TOOL_RESULT_MAX_CHARS,
    convert_to_llm,
    serialize_conversation,
    serialized_length,
    utf16_head,
)
from sessiontools.read import load_session
from tests.conftest import SAMPLES, shared_sessions


def _messages() -> list[dict]:
    out = []
    for f in [*sorted(SAMPLES.glob("*.jsonl")), *shared_sessions()]:
        out += [e.message for e in load_session(f).entries if e.message is not None]
    return out


EDGE = [
    {"role": "toolResult", "content": [{"type": "text", "text": "é" * (TOOL_RESULT_MAX_CHARS + 5)}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "a" * (TOOL_RESULT_MAX_CHARS - 1) + "😀" + "b" * 9}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "😀" * TOOL_RESULT_MAX_CHARS}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "x" * TOOL_RESULT_MAX_CHARS}]},
    {"role": "toolResult", "content": [{"type": "text", "text": ""}, {"type": "image"}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "x" * (TOOL_RESULT_MAX_CHARS + 1)}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "x" * 1500}, {"type": "text", "text": "y" * 1500}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "x" * 1500}, "not a block", {"type": "text", "text": "y"}]},
    {"role": "toolResult", "content": [{"type": "image"}, {"type": "text", "text": "ok"}, {"type": "text"}]},
    {"role": "toolResult", "content": []},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]},
    {"role": "user", "content": [{"type": "text", "text": ""}]},
    {"role": "user", "content": "plain string"},
    {"role": "user", "content": [{"type": "text", "text": None}, {"type": "text", "text": 3}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "a"},
                                      {"type": "text", "text": None},
                                      {"type": "toolCall", "name": "read", "arguments": {"path": "x", "1": [1.5, None]}},
                                      {"type": "toolCall", "arguments": {}}]},
    {"role": "assistant", "content": "not a list"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "only thinking"}]},
    {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 2},
    {"role": "custom", "content": "hello"},
    {"role": "branchSummary", "summary": "s"},
    {"role": "compactionSummary", "summary": "t"},
    {"role": "system", "content": "sys"},
]


@pytest.mark.parametrize("version", ["0", "1"])
def test_serialized_length_is_the_length_of_the_serialized_message(version: str) -> None:
    msgs = _messages() + EDGE
    assert len(msgs) > 100
    for m in msgs:
        assert serialized_length(m, version) == len(serialize_conversation(convert_to_llm([m], version), version)), m


@pytest.mark.parametrize("keep_pairs", [False, True])
def test_utf16_head_reads_only_the_head(keep_pairs: bool) -> None:
    def full(text: str, units: int) -> str:  # the whole text encoded, as before
        raw = text.encode("utf-16-le", "surrogatepass")
        cut = raw[: 2 * units]
        if keep_pairs and len(cut) >= 2 and len(raw) > len(cut):
            last = int.from_bytes(cut[-2:], "little")
            nxt = int.from_bytes(raw[len(cut): len(cut) + 2], "little")
            if 0xD800 <= last <= 0xDBFF and 0xDC00 <= nxt <= 0xDFFF:
                cut = cut[:-2]
        return cut.decode("utf-16-le", "surrogatepass")

    for text in ["é" * 10, "a😀b" * 5, "😀" * 7, "é😀", "ab😀", "😀"]:
        for units in range(0, 16):
            assert utf16_head(text, units, keep_pairs=keep_pairs) == full(text, units), (text, units)
