"""Issue 12, cause 3, for every agent: the generic simulator's truth fit (Codex, Claude Code, other
rules over Pi files) is the one rule (`replay.truth_model.fit_overhead_ratio`): few
requests are shrunk toward the prior and the ratio stays within physical bounds. Before, it was a
near-unshrunk least squares, so two requests could give any ratio."""

from __future__ import annotations

import dataclasses

from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.truth_model import RATIO_BOUNDS
from sessiontools.transcript.load import load_transcript
from tests.conftest import SAMPLES


def _codex_path():  # type: ignore[no-untyped-def]
    (path,) = load_transcript(SAMPLES / "codex" / "codex-overflow.jsonl").paths
    assert len(path.requests) >= 2
    return path


def test_two_requests_cannot_give_an_impossible_ratio() -> None:
    path = _codex_path()
    first, second = path.requests[:2]
    # The second prompt recorded 60x larger than the first for a context only a little larger.
    usage = dataclasses.replace(second.usage, input=first.usage.prompt * 60, cache_read=0, cache_write=0)
    two = dataclasses.replace(path, requests=(first, dataclasses.replace(second, usage=usage)))
    truth = fit_neutral_truth(two)
    assert truth.n == 2 and truth.prior_dominated
    assert RATIO_BOUNDS[0] <= truth.ratio <= RATIO_BOUNDS[1]
    assert 0 <= truth.overhead <= first.usage.prompt


def test_enough_requests_are_decided_by_the_data() -> None:
    path = _codex_path()
    truth = fit_neutral_truth(path)
    assert truth.n == len(path.requests)
    assert truth.prior_dominated == (len(path.requests) < 8)
