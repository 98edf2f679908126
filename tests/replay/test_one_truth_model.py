"""Issue 24 (a): one truth model for every agent (`replay.truth_model`), fitted on a path's messages
(`fit_neutral_truth`) by the one fit, attribution, summary rule and record; the file's own agent's
policy counts the messages (`Policy.truth_count`; Pi: `estimateTokens`). Pi's entry-keyed adapter
(`replay.truth`) is gone: the bench's Node side is given this model's truth, summed per entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.policies.registry import own_policy
from sessiontools.read.sources import load_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.transcript.load import transcript_of
from tests.conftest import SAMPLES

EVERY_SAMPLE = sorted(p for p in SAMPLES.rglob("*.jsonl"))
PI_SAMPLES = sorted(SAMPLES.glob("p*.jsonl")) + sorted(SAMPLES.glob("v1*.jsonl"))


def _check(got: list[float], want: list[float], contexts: list[list[object]]) -> list[int]:
    """The requests whose truth is not their recorded prompt. Each must follow a shrink: an earlier
    request whose context extends the one before it while its prompt is lower (no attribution prices
    both: the new messages would need negative tokens), with no fresh context (a compaction, an
    edit) between them. The attribution takes each growth from the recorded prompt (`attribute`)."""
    off = [k for k, (g, w) in enumerate(zip(got, want, strict=True)) if abs(g - w) > 1]
    shrunk = False
    after_shrink = set()
    for k in range(len(want)):
        prefix = k > 0 and contexts[k][:len(contexts[k - 1])] == contexts[k - 1]
        shrunk = prefix and (shrunk or want[k] < want[k - 1])
        if shrunk:
            after_shrink.add(k)
    assert set(off) <= after_shrink, sorted(set(off) - after_shrink)[:5]
    return off


@pytest.mark.parametrize("sample", EVERY_SAMPLE, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_every_recorded_context_costs_its_recorded_prompt(sample: Path) -> None:
    """For every sample of every agent, under the one model as the transcript walk fits it: overhead +
    the tokens of a recorded request's messages is its recorded prompt, but after a shrunk prompt in
    the same context (`_check`)."""
    t = transcript_of(load_source(sample))
    path = t.paths[0]
    truth = fit_neutral_truth(path, None, None, own_policy(t, path))
    got = [truth.overhead + sum(truth.message_tokens(path.messages[i]) for i in r.context_indices())
           for r in path.requests]
    _check(got, [float(r.usage.prompt) for r in path.requests], [list(r.context_indices()) for r in path.requests])


@pytest.mark.parametrize("sample", PI_SAMPLES, ids=lambda p: p.name)
def test_a_pi_message_is_counted_by_pis_estimate(sample: Path) -> None:
    """On a Pi file each message is counted by Pi's `estimateTokens` of its own object, the
    system message a 1.x compaction carries included (the entry-keyed fit this replaced left it out
    on every 1.x sample)."""
    from sessiontools.tokens.chars4 import estimate_tokens

    s = load_source(sample)
    t = transcript_of(s)
    path = t.paths[0]
    truth = fit_neutral_truth(path, None, None, own_policy(t, path), tokenizer="chars4")
    raw = [m for m in path.messages if isinstance(m.raw, dict)]
    assert raw and all(truth.counted[m.index] == estimate_tokens(m.raw, s.pi_version) for m in raw)


def test_the_two_names_are_one_model() -> None:
    from sessiontools.replay.neutral import NeutralTruth
    from sessiontools.replay.truth_model import TruthModel

    assert NeutralTruth is TruthModel
