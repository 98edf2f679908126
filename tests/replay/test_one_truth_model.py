"""Issue 24 (a): one truth model for every agent (`replay.truth_model`). Pi's exact walk fits it on a
workload's entries (`fit_truth`), the transcript walk on a path's messages (`fit_neutral_truth`),
both by the one fit, attribution, summary rule and record; the file's own agent's policy counts the
messages (`Policy.truth_count`; Pi: `estimateTokens`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontools.policies.registry import own_policy
from sessiontools.read.sources import load_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.truth import fit_truth, recorded_contexts
from sessiontools.transcript.load import transcript_of
from sessiontools.transcript.pi import SessionTree
from sessiontools.transcript.pi.workload import build_workload
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
def test_pis_recorded_contexts_cost_their_recorded_prompts_in_the_exact_walk(sample: Path) -> None:
    """The same over Pi's exact walk's fit, by entry (the contexts of Pi's incremental builder)."""
    s = load_source(sample)
    wl = build_workload(SessionTree(s).path().entries, s.pi_version)
    truth = fit_truth(wl)
    pos = {id(e): i for i, e in enumerate(wl.path)}
    wanted = {pos[id(wl.base[r.base_index])]: float(r.recorded_prompt) for r in wl.requests
              if r.recorded_prompt is not None}
    ctx = recorded_contexts(wl.path, wl.pi_version, wanted, truth.counted)
    got = [truth.overhead + sum(truth.entry_tokens(e) for e in lst[:n]) for _, lst, n, _ in ctx]
    _check(got, [wanted[at] for at, _, _, _ in ctx], [[id(e) for e in lst[:n]] for _, lst, n, _ in ctx])


@pytest.mark.parametrize("sample", PI_SAMPLES, ids=lambda p: p.name)
def test_one_pi_session_has_one_truth_whichever_walk_asks(sample: Path) -> None:
    """A Pi session's truth per message is the same in Pi's exact walk (by entry) and in the
    transcript walk (by message): the same overhead, ratio, summary size and record, and each
    entry's tokens the sum of its messages'. Before, the two fits differed on every 1.x sample (the
    exact walk did not count the system message a 1.x compaction carries, the transcript walk counted
    chars/4 of the text instead of Pi's estimate, and the two summary rules differed)."""
    s = load_source(sample)
    p = SessionTree(s).path()
    exact = fit_truth(build_workload(p.entries, s.pi_version))
    t = transcript_of(s)
    path = t.paths[0]
    walk = fit_neutral_truth(path, None, None, own_policy(t, path))
    assert (walk.overhead, walk.ratio, walk.summary_tokens) == pytest.approx(
        (exact.overhead, exact.ratio, exact.summary_tokens), rel=1e-12, abs=1e-9)
    assert walk.to_dict()["requests_fitted"] == exact.to_dict()["requests_fitted"]
    assert walk.to_dict()["notes"] == exact.to_dict()["notes"]
    by_entry: dict[str | None, list[float]] = {}
    for m in path.messages:
        by_entry.setdefault(m.id, []).append(walk.message_tokens(m))
    entries = {e.id: e for e in p.entries}
    assert by_entry and all(sum(v) == pytest.approx(exact.entry_tokens(entries[k]), abs=1e-6)
                            for k, v in by_entry.items())


def test_the_two_names_are_one_model() -> None:
    from sessiontools.replay.neutral import NeutralTruth
    from sessiontools.replay.truth import TruthModel

    assert NeutralTruth is TruthModel
