"""`own_file_ops` (one message's file operations, as the compaction planning's prefix sums keep them)
is `extract_file_ops` of that message into an empty `FileOps`, None exactly when that stays empty."""

from __future__ import annotations

import pytest

from sessiontools.policies.pi.serialize import FileOps, extract_file_ops, own_file_ops
from sessiontools.read import load_session
from tests.conftest import SAMPLES

EDGE = [
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": "a"}},
                                      {"type": "toolCall", "name": "edit", "arguments": {"path": "b"}},
                                      {"type": "toolCall", "name": "write", "arguments": {"path": "a"}},
                                      {"type": "toolCall", "name": "bash", "arguments": {"path": "c"}},
                                      {"type": "toolCall", "name": "read", "arguments": {"path": ""}},
                                      {"type": "toolCall", "name": "read", "arguments": {}},
                                      {"type": "toolCall", "name": "read"},
                                      {"type": "toolCall", "arguments": {"path": "d"}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}}]},
    {"role": "assistant", "content": "text"},
    {"role": "toolResult", "nestedCalls": {"calls": [{"name": "read", "arguments": {"path": "n"}}, "x",
                                                     {"name": "write", "arguments": {"path": "m"}}]}},
    {"role": "user", "content": "read a"},
]


@pytest.mark.parametrize("version", ["0", "1"])
def test_own_file_ops_is_extract_file_ops_of_the_message_alone(version: str) -> None:
    msgs = [e.message for f in sorted(SAMPLES.glob("pi*.jsonl")) for e in load_session(f).entries
            if e.message is not None] + EDGE
    found = 0
    for m in msgs:
        want = FileOps()
        extract_file_ops(m, want, version)
        got = own_file_ops(m, version)
        if want.read or want.written or want.edited:
            found += 1
            assert got is not None and (list(got.read), list(got.written), list(got.edited)) == (
                list(want.read), list(want.written), list(want.edited)), m
        else:
            assert got is None, m
    assert found > 10
    ops = own_file_ops(EDGE[0], version)
    assert ops is not None and (list(ops.read), list(ops.written), list(ops.edited)) == (["a"], ["a"], ["b"])
