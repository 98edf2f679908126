"""Issue 24, one walk: on every Pi sample under each Pi policy, the transcript walk (`replay.walk`, Pi's
`prepareCompaction` by `policies.pi.compactor`) and Pi's exact walk (`replay.simulate`) give the same
run record on EVERY field (`lab.walk_parity`: compactions with place, tokens and kind, failed ones,
overflows, rejections, peak, check points, late/early, thrash, costs, cache classes, each request's
truth, source and count, the recorded points), except the runs in `KNOWN` (strict: a fix takes its
run off the list). Session 7 measured 181 of 456 runs identical over the samples' small grid
(W 16k/24k/32k x reserve 3000/4000 x keep 2000/4000, chars/4) before closing the causes, 452 after.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.walk_parity import compare
from tests.conftest import SAMPLES

PI_SAMPLES = sorted(SAMPLES.glob("*.jsonl"))
SETTINGS = ((16000, 24000, 32000), (3000,), (4000,))
#: (sample, policy, window): the fields where the walks still differ, and why.
KNOWN = {
    # A declined compaction's note names the entry after which Pi checked: the exact walk the base
    # entry before the request (an omission edit), the walk the context's last message.
    ("pi1-two-overflows", "pi-1", 16000): {"no_compaction[6]", "no_compaction[8]"},
}


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("sample", PI_SAMPLES, ids=lambda p: p.stem)
def test_the_two_walks_give_the_same_run_record(sample: Path, policy: str) -> None:
    for (w, _, _), fields, _ in compare(sample, policy, "chars4", "small", SETTINGS):
        assert set(fields) == KNOWN.get((sample.stem, policy, w), set()), (sample.stem, policy, w, fields[:8])


def test_the_comparison_sees_a_difference() -> None:
    """The comparison can fail: a changed field of either record is reported by its path."""
    from lab.walk_parity import diff

    a = {"compactions": [{"tokens_before": 1}], "metrics": {"peak_truth_tokens": 5}}
    b = {"compactions": [{"tokens_before": 2}], "metrics": {"peak_truth_tokens": 5}}
    assert list(diff(a, b)) == ["compactions[0].tokens_before"]
    assert list(diff(a, {**a, "compactions": []})) == ["compactions#len"]
