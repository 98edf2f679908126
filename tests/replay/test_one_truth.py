"""Issue 24, one truth model: one attribution of recorded usage to messages for every agent
(`replay.truth_model.attribute`), the truth of the recorded context is its recorded usage, and the
transcript walk reproduces what the agent recorded where the file gives it no request to check at."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.records import CompactionReason
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.load import load_transcript
from tests.conftest import SAMPLES

CLAUDE = SAMPLES / "claude-code"
CODEX = SAMPLES / "codex"


@pytest.mark.parametrize("name", ["claude-code/claude-manual", "claude-code/claude-reactive",
                                  "claude-code/claude-threshold-14", "claude-code/claude-threshold-15",
                                  "codex/codex-pair-a", "codex/codex-pair-b", "codex/codex-overflow"])
def test_every_recorded_context_costs_its_recorded_prompt(name: str) -> None:
    """Overhead + the attributed tokens of a recorded request's context is its recorded prompt, across
    compactions too (the messages not known yet share what the prompt leaves). Before, the transcript
    walk's attribution kept the first share of each message and refitted the overhead as a median:
    codex-pair-a was off at 42 of 42 requests, claude-reactive at 14 of 14."""
    (path, *_) = load_transcript(SAMPLES / f"{name}.jsonl").paths
    truth = fit_neutral_truth(path)
    for r in path.requests:
        got = truth.overhead + sum(truth.message_tokens(path.messages[i]) for i in r.context_indices())
        assert got == pytest.approx(r.usage.prompt, abs=1), r.index


def test_both_truth_models_use_the_one_attribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pi file's truth fit and a Codex file's both attribute by `replay.truth_model.attribute`."""
    import sessiontools.replay.truth_model as truth_mod
    from sessiontools.read import load_session
    from tests.replay.walked import pi_truth

    calls: list[str] = []
    real = truth_mod.attribute

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append("called")
        return real(*a, **kw)

    monkeypatch.setattr(truth_mod, "attribute", spy)
    s = load_session(SAMPLES / "pi0-pair-a.jsonl")
    pi_truth(s)
    fit_neutral_truth(load_transcript(CODEX / "codex-pair-a.jsonl").paths[0])
    assert calls == ["called", "called"]


def _ending_with_its_last_compaction(name: str, tmp_path: Path) -> Path:
    """The file cut after its last compaction (boundary and summary): no request follows it."""
    lines = (CLAUDE / f"{name}.jsonl").read_text().splitlines()
    cut = max(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    summary = next(i for i in range(cut + 1, len(lines)) if '"isCompactSummary"' in lines[i])
    out = tmp_path / f"{name}-cut.jsonl"
    out.write_text("\n".join(lines[:summary + 1]) + "\n")
    return out


@pytest.mark.parametrize("name", ["claude-2.0.77", "claude-2.1.12", "claude-2.1.63"])
def test_a_compaction_that_ends_the_file_is_reproduced(name: str, tmp_path: Path) -> None:
    """Claude Code checks before sampling; a file that ends with its automatic compaction holds no
    request after it, yet the agent checked there. The walk checks there too (before: the last
    recorded compaction of each of these cut files was missed)."""
    t = load_transcript(_ending_with_its_last_compaction(name, tmp_path))
    (tr,) = replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                              claude={"autocompact_pcts": [14]})
    rm = tr.runs[0].recorded_match
    assert rm.recorded == rm.matched >= 2 and rm.extra == 0


def test_truth_at_a_check_point_of_the_recorded_context_starts_from_its_recorded_prompt() -> None:
    """While the simulated context is the recorded one, the truth at a check point is the newest
    recorded prompt plus the messages since: never below that prompt (before: the model's sum, 10,777
    tokens at the second compaction of claude-2.1.12 whose newest recorded prompt was 21,406)."""
    t = load_transcript(CLAUDE / "claude-2.1.12.jsonl")
    (tr,) = replay_transcript(t, windows=None, reserves=[0], keeps=[0], policy=None,
                              claude={"autocompact_pcts": [14]})
    run = tr.runs[0]
    assert run.recorded_match.matched == 3
    for c in run.compactions:
        before = [p for p in run.requests if p.base_index <= c.parent_base_index and not p.overflow]
        assert c.truth_at_trigger >= before[-1].truth


def test_a_user_compaction_where_the_policy_compacts_is_applied_once() -> None:
    """The provider rejected a request and the user compacted right there (real Claude Code files:
    "Prompt is too long", then /compact). The user's compaction is applied (its kept messages and
    summary) and the reactive policy makes none on top of it (before: an overflow compaction and the
    user's at the same point, counted as an extra)."""
    import dataclasses

    from sessiontools.policies.base import PolicySettings
    from sessiontools.policies.claude_code import claude_code_policy
    from sessiontools.replay.walk import simulate_path
    from sessiontools.transcript.model import Overflow, Trigger

    (path, *_) = load_transcript(CLAUDE / "claude-reactive.jsonl").paths
    first = path.compactions[0]
    rejected = Overflow(first.index - 1, path.messages[first.index - 1].line, "Prompt is too long")
    by_user = dataclasses.replace(path, overflows=(rejected,), compactions=tuple(
        dataclasses.replace(c, trigger=Trigger.MANUAL) for c in path.compactions))
    run = simulate_path(by_user, claude_code_policy("claude-code-reactive"), PolicySettings(13000),
                        fit_neutral_truth(by_user))
    assert [c.reason for c in run.compactions] == [CompactionReason.USER] * len(path.compactions)
    assert run.recorded_match.extra == 0 and run.provider_rejections + run.overflows == 1
