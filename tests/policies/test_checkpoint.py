"""policies/checkpoint.py: the context view the check points read, and the estimate it gives."""

from __future__ import annotations

import pytest

from sessiontools.policies.checkpoint import ContextView
from sessiontools.transcript.model import Message, Role


def _messages(n: int) -> tuple[Message, ...]:
    return tuple(Message(i, f"m{i}", i + 1, Role.USER, ()) for i in range(n))


@pytest.mark.parametrize("ranges", [(), ((0, 3),), ((2, 4), (4, 4), (6, 9)), ((5, 6), (0, 2), (7, 10))])
def test_context_view_reads_as_the_copied_list(ranges: tuple[tuple[int, int], ...]) -> None:
    messages = _messages(10)
    copied = [messages[i] for a, b in ranges for i in range(a, b)]
    view = ContextView(messages, ranges)
    assert len(view) == len(copied) and list(view) == copied
    for k in range(-len(copied), len(copied)):
        assert view[k] is copied[k]
    for s in (slice(None), slice(1, None), slice(-2, None), slice(0, 0), slice(None, None, -1)):
        assert view[s] == copied[s]
    with pytest.raises(IndexError):
        view[len(copied)]


def test_claude_code_count_has_the_measured_factor() -> None:
    """Claude Code's own count is usage + ceil(chars / 4 x 4/3) of the messages after the reply's first
    line (measured on 2.1.332: without the factor 13 of 35 recorded compactions fall below T), not
    usage + bytes / 4."""
    from sessiontools.policies.base import CountView
    from sessiontools.policies.claude_code import claude_code_policy

    # the lab's model (not a family 2.1.332 lists: 3 bytes per token); a listed family counts chars / 4
    assert claude_code_policy("claude-code", model="claude-opus-5-5").count(CountView(1000.0, [(4000, 4000)])) == 1000 + 1334
    assert claude_code_policy("claude-code", model="claude-opus-4-6").count(CountView(1000.0, [(4000, 4000)])) == 1000 + 1000
