"""One definition of each agent's own count (issue 24): estimate-error's agent estimate (`est_pi`,
`Policy.checkpoint` of the file's own policy) is the count replay's walk judges at the same check
point, on a sample of every agent. No second registry to drift."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES


def _estimate_error_counts(f: Path) -> dict[int, int]:
    """estimate-error's own estimate of each request of the file's first path, by file line."""
    from sessiontools.analysis.estimate.measure import MessageMeasurer
    from sessiontools.analysis.estimate.rows import session_rows
    from sessiontools.analysis.estimate.source import transcript_source
    from sessiontools.read.sources import load_source

    frame = session_rows(transcript_source(load_source(f)), MessageMeasurer({})).frame
    return dict(zip(frame["line"].to_list(), frame["est_pi"].to_list(), strict=True))


def _walk_counts(f: Path) -> list[tuple[int, float]]:
    """(file line of the request, the transcript walk's own count before it) at every check point
    before a request while the walk's context is the recorded one (a window no count reaches: the
    policy never fires), under the file's own policy and CLI version."""
    from sessiontools.policies.registry import own_policy
    from sessiontools.read.sources import load_source
    from sessiontools.replay.neutral import fit_neutral_truth
    from sessiontools.replay.walk import _Walk, replay_settings
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(load_source(f))
    path = t.paths[0]
    first = path.compactions[0].index if path.compactions else len(path.messages)  # the contexts agree until then
    policy = own_policy(t, path)
    walk = _Walk(path, policy, replay_settings(policy, 10**9), fit_neutral_truth(path))
    line = {r.index: r.line for r in path.requests}
    seen: list[tuple[int, float]] = []
    check = walk.check

    def spy(upto: int, *args: Any, **kw: Any) -> float:
        count = check(upto, *args, **kw)
        nxt = walk.work[upto] if upto < len(walk.work) else None
        if nxt is not None and nxt < first and nxt in line:
            seen.append((line[nxt], count))
        return count

    walk.check = spy  # type: ignore[method-assign]
    walk.plain = False  # every check point through `check` (a plain span, `replay.walk_plain`, scores its own)
    walk.walk()
    return seen


def _pi_counts(f: Path) -> list[tuple[int, float]]:
    """(file line of the request, the one walk's count of Pi's `estimateContextTokens` of the context
    before it) for each request before the file's first compaction (a window no count reaches): 1.x
    checks before each request of a run but its first (`BETWEEN_TURNS`, `_walk_counts`); 0.x checks at
    run ends only, so its count (`Policy.count` of the walk's view) is taken before every request."""
    from sessiontools.policies.registry import own_policy
    from sessiontools.read.sources import load_source
    from sessiontools.replay.neutral import fit_neutral_truth
    from sessiontools.replay.walk import _Walk, replay_settings
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(load_source(f))
    if t.settings.get("pi_version") == "1":
        return _walk_counts(f)
    path = t.paths[0]
    first = path.compactions[0].index if path.compactions else len(path.messages)
    policy = own_policy(t, path)
    walk = _Walk(path, policy, replay_settings(policy, 10**9, 16384, 20000), fit_neutral_truth(path))
    seen: list[tuple[int, float]] = []
    request = walk.request

    def spy(req: Any, *args: Any) -> None:
        if req.index < first and hasattr(req, "line"):
            seen.append((req.line, policy.count(walk.view(walk.pos_of.get(req.index, 0)))))
        request(req, *args)

    walk.request = spy  # type: ignore[method-assign]
    walk.plain = False  # every request through `request` (a plain span, `replay.walk_plain`, applies its own)
    walk.walk()
    return seen


@pytest.mark.parametrize("name", ["pi0-pair-a.jsonl", "pi1-pair-a.jsonl", "pi1-branches.jsonl",
                                  "codex/codex-pair-a.jsonl", "codex/codex-pair-b.jsonl", "codex/codex-0.63-limit.jsonl",
                                  "claude-code/claude-threshold-14.jsonl", "claude-code/claude-2.1.63.jsonl",
                                  "claude-code/claude-threshold-15.jsonl", "claude-code/claude-2.1.12.jsonl"])
def test_estimate_error_judges_the_count_replay_walks_with(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    f = SAMPLES / name
    if not f.exists():
        pytest.skip(f"{f} is absent")
    own = _estimate_error_counts(f)
    walk = _pi_counts(f) if name.startswith("pi") else _walk_counts(f)
    assert len(walk) >= 3, "too few requests compared"
    assert [own[line] for line, _ in walk] == [math.ceil(c) for _, c in walk]


@pytest.mark.parametrize("name", ["claude-code/claude-2.1.12.jsonl", "codex/codex-0.63-limit.jsonl"])
def test_the_own_count_follows_the_version_the_file_records(name: str) -> None:
    """A file is judged by the rule of the CLI version it records (the policy replay makes for it),
    and estimate-error's estimate is that policy's checkpoint at every request."""
    from sessiontools.policies.checkpoint import ContextView
    from sessiontools.policies.registry import (
        VERSION_SETTING,
        cli_version,
        make_policy,
        own_policy,
        own_policy_name,
    )
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.load import transcript_of

    f = SAMPLES / name
    if not f.exists():
        pytest.skip(f"{f} is absent")
    t = transcript_of(load_source(f))
    path = t.paths[0]
    name_ = own_policy_name(t)
    recorded = t.settings[VERSION_SETTING[t.agent]]
    assert cli_version(name_, t) == recorded
    model = next(r.model for r in reversed(path.requests) if r.model)
    expected = make_policy(name_, recorded, model)
    got = own_policy(t, path)
    assert type(got) is type(expected) and vars(got) == vars(expected)
    own = _estimate_error_counts(f)
    assert [own[r.line] for r in path.requests] == [
        expected.checkpoint(path, r, ContextView(path.messages, r.context)).tokens for r in path.requests]
