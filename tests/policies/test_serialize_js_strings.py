"""serializeConversation prints a tool call's name as a JavaScript template literal does
(values checked against Pi 1.6.0's own serializeConversation)."""

from __future__ import annotations

import pytest

from sessiontools.policies.pi.serialize import serialize_conversation


@pytest.mark.parametrize(("call", "text"), [
    ({"type": "toolCall", "arguments": {"path": "x"}}, 'undefined(path="x")'),  # no name key: `${undefined}`
    ({"type": "toolCall", "name": None, "arguments": {}}, "null()"),
    ({"type": "toolCall", "name": {"a": 1}, "arguments": {}}, "[object Object]()"),
    ({"type": "toolCall", "name": [1, None, "b", [2, 3]], "arguments": {}}, "1,,b,2,3()"),
])
def test_tool_call_name_as_javascript_prints_it(call: dict, text: str) -> None:
    for version in ("0", "1"):
        assert serialize_conversation([{"role": "assistant", "content": [call]}], version) == (
            f"[Assistant tool calls]: {text}")
