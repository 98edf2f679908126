"""policies/checkpoint.py: the context view the check points read, and the estimate it gives."""

from __future__ import annotations

import math

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


# -- one definition of each agent's own count (issue 24) ----------------------------------------------


def _walk_counts(name: str, policy_name: str) -> list[tuple[int, float]]:
    """(request index, the transcript walk's own count before it) at every check point before a request
    while the walk's context is the recorded one (the policy never fires: a window no count reaches)."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay.neutral import fit_neutral_truth
    from sessiontools.replay.registry import make_policy
    from sessiontools.replay.walk import _Walk, replay_settings
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(load_source(name))
    path = t.paths[0]
    first = path.compactions[0].index if path.compactions else len(path.messages)  # the contexts agree until then
    policy = make_policy(policy_name)
    walk = _Walk(path, policy, replay_settings(policy, 10**9), fit_neutral_truth(path))
    seen: list[tuple[int, float]] = []
    check = walk.check

    def spy(upto: int) -> float:
        count = check(upto)
        nxt = walk.work[upto] if upto < len(walk.work) else None
        if nxt is not None and nxt < first:
            seen.append((nxt, count))
        return count

    walk.check = spy  # type: ignore[method-assign]
    walk.walk()
    return seen


@pytest.mark.parametrize(("name", "policy"), [("codex/codex-pair-a.jsonl", "codex"),
                                              ("claude-code/claude-reactive.jsonl", "claude-code"),
                                              ("claude-code/claude-threshold-15.jsonl", "claude-code")])
def test_estimate_error_and_replay_judge_the_same_count(name: str, policy: str) -> None:
    """estimate-error's own estimate (`own_estimate`) is the replay's policy count (`Policy.count` over
    `Policy.size`) at every request both see: one definition per agent, no second copy to drift."""
    from sessiontools.policies.checkpoint import ContextView, own_estimate
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.load import transcript_of
    from tests.conftest import SAMPLES

    f = SAMPLES / name
    if not f.exists():
        pytest.skip(f"{f} is absent")
    t = transcript_of(load_source(f))
    path = t.paths[0]
    by_index = {r.index: r for r in path.requests}
    own = {r.index: own_estimate(t.agent, path, r, ContextView(path.messages, r.context)).tokens for r in path.requests}
    walk = [(i, c) for i, c in _walk_counts(str(f), policy) if i in by_index]
    assert len(walk) >= 3, "too few requests compared"
    assert [own[i] for i, _ in walk] == [math.ceil(c) for _, c in walk]


def test_claude_code_count_has_the_measured_factor() -> None:
    """Claude Code's own count is usage + ceil(chars / 4 x 4/3) of the messages after the reply's first
    line (measured on 2.1.332: without the factor 13 of 35 recorded compactions fall below T), not
    usage + bytes / 4."""
    from sessiontools.policies.base import CountView
    from sessiontools.policies.claude_code import claude_code_policy

    # the lab's model (not a family 2.1.332 lists: 3 bytes per token); a listed family counts chars / 4
    assert claude_code_policy("claude-code", model="claude-opus-5-5").count(CountView(1000.0, [(4000, 4000)])) == 1000 + 1334
    assert claude_code_policy("claude-code", model="claude-opus-4-6").count(CountView(1000.0, [(4000, 4000)])) == 1000 + 1000
