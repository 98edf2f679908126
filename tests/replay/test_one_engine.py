"""Issue 24: one answer per (session, policy, setting), whichever entry asks. The disagreement measured
(pi0-chinese at W 16k: 6 vs 3 compactions; pi0-two-overflows: 8 vs 0) came from two walks; here every
Pi sample under each Pi policy, at W 16k/24k/32k and in a small grid, gives the same run through the
public calls (`replay_records`, `replay_source`, whose grid shares its reading, truth fit and per-grid
state, `replay.path_grid`) and the one walk itself on a fresh fit and no shared grid
(`simulate_path(path, policy, setting, fit_neutral_truth(...))`)."""

from __future__ import annotations

import pytest

from sessiontools.policies.registry import make_policy, own_policy
from sessiontools.read.sources import load_source
from sessiontools.replay import replay_records, replay_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.session import run_record
from sessiontools.replay.walk import replay_settings, simulate_path
from sessiontools.transcript.pi.neutral import pi_transcript
from tests.conftest import SAMPLES

WINDOWS = (16000, 24000, 32000)
RESERVES = (3000, 6000)
KEEPS = (4000, 8000)
PI_SAMPLES = sorted(p for p in SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("path", PI_SAMPLES, ids=lambda p: p.stem)
def test_every_entry_gives_the_same_run(path, policy: str) -> None:  # type: ignore[no-untyped-def]
    src = load_source(path)
    (grid,) = replay_source(src, windows=list(WINDOWS), reserves=list(RESERVES), keeps=list(KEEPS), policy=policy)
    by_setting = {(r.settings.context_window, r.settings.reserve_tokens, r.settings.keep_recent_tokens): r
                  for r in grid.runs}
    assert len(by_setting) == len(WINDOWS) * len(RESERVES) * len(KEEPS)
    t = pi_transcript(src, pi_version=policy[-1])
    (tp,) = t.paths
    pol = make_policy(policy)
    for (w, r, k), run in by_setting.items():
        fresh = fit_neutral_truth(tp, None, None, own_policy(t, tp))  # a fresh fit: no shared state
        alone = simulate_path(tp, pol, replay_settings(pol, w, r, k), fresh)
        assert alone == run, (w, r, k)
        (pr,) = replay_source(src, windows=[w], reserves=[r], keeps=[k], policy=policy)
        assert pr.runs == [run]
        (public,) = replay_records(src, windows=[w], reserves=[r], keeps=[k], policy=policy, leaf=None,
                                   all_leaves=False, summary_tokens=None)
        assert public.to_dict() == run_record(grid, run)
