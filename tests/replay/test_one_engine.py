"""Issue 24: one answer per (session, policy, setting), whichever entry asks. The disagreement measured
(pi0-chinese at W 16k: 6 vs 3 compactions; pi0-two-overflows: 8 vs 0) came from two walks; here every
Pi sample under each Pi policy, at W 16k/24k/32k and in a small grid, gives the same run through the
public calls (`replay_records`, `replay_source`), the session replay (`replay_session`, whose grid
shares its reading, truth fit and per-grid state) and the walk itself on a fresh fit
(`simulate(build_workload(...), fit_truth(...), ...)`)."""

from __future__ import annotations

import pytest

from sessiontools.read import load_session
from sessiontools.read.sources import load_source
from sessiontools.replay import (
    build_workload,
    fit_truth,
    replay_records,
    replay_session,
    simulate,
)
from sessiontools.replay.session import pi_settings, run_record
from sessiontools.transcript.pi import SessionTree
from tests.conftest import SAMPLES

WINDOWS = (16000, 24000, 32000)
RESERVES = (3000, 6000)
KEEPS = (4000, 8000)
PI_SAMPLES = sorted(p for p in SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("policy", ["pi-0", "pi-1"])
@pytest.mark.parametrize("path", PI_SAMPLES, ids=lambda p: p.stem)
def test_every_entry_gives_the_same_run(path, policy: str) -> None:  # type: ignore[no-untyped-def]
    session = load_session(path)
    (grid,) = replay_session(session, windows=list(WINDOWS), reserves=list(RESERVES), keeps=list(KEEPS),
                             policy=policy)
    by_setting = {(r.settings.context_window, r.settings.reserve_tokens, r.settings.keep_recent_tokens): r
                  for r in grid.runs}
    assert len(by_setting) == len(WINDOWS) * len(RESERVES) * len(KEEPS)
    wl = build_workload(SessionTree(session).path().entries, "1" if policy == "pi-1" else "0")
    src = load_source(path)
    for (w, r, k), run in by_setting.items():
        alone = simulate(wl, fit_truth(wl), pi_settings(w, r, k, policy))  # a fresh fit: no shared state
        assert alone == run, (w, r, k)
        (pr,) = replay_session(session, windows=[w], reserves=[r], keeps=[k], policy=policy)
        assert pr.runs == [run]
        (public,) = replay_records(src, windows=[w], reserves=[r], keeps=[k], policy=policy, leaf=None,
                                   all_leaves=False, summary_tokens=None)
        assert public == run_record(grid, run)
