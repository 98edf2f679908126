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
