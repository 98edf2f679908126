"""The transcript walk (replay/walk.py) over the neutral transcript, with any Policy."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from sessiontools.policies.base import (
    Candidate,
    CheckPoint,
    CountView,
    Kept,
    Policy,
    PolicyName,
    PolicySettings,
)
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.read import load_session
from sessiontools.replay.records import CompactionReason
from sessiontools.replay.walk import simulate_path
from sessiontools.transcript.pi.neutral import pi_transcript
from tests.conftest import SAMPLES

MANIFEST = SAMPLES / "manifest.json"


def _names() -> list[str]:
    return sorted(json.loads(MANIFEST.read_text())) if MANIFEST.exists() else []


@pytest.mark.parametrize("name", _names())
def test_pi_policies_reproduce_recorded_compactions(name: str) -> None:
    """Pi's policy objects, replayed by the generic simulator at the recorded settings, put every
    recorded compaction where Pi did and add none."""
    st = json.loads(MANIFEST.read_text())[name]
    session = load_session(SAMPLES / f"{name}.jsonl")
    policy = pi_policy("pi-1" if session.pi_version == "1" else "pi-0")
    for path in pi_transcript(session, all_leaves=True).paths:
        run = simulate_path(path, policy, PolicySettings(st["window"], st["reserve"], st["keep"]))
        assert run.recorded_match.matched == run.recorded_match.recorded == len(path.compactions)
        assert len(run.compactions) == run.recorded_match.recorded


class EveryRequest(Policy):
    """A toy policy: checks before sampling, never reactive, compacts above a fixed count, keeps nothing."""

    name = PolicyName.CODEX
    check_points = frozenset({CheckPoint.BEFORE_SAMPLING})

    def threshold(self, settings: PolicySettings) -> int:
        return settings.get("limit", 0)

    def count(self, view: CountView) -> float:
        return (view.last_usage_total or 0.0) + sum(b / 4 for _, b in view.trailing)

    def fires(self, count: float, threshold: int) -> bool:
        return count >= threshold

    def keep(self, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        return Kept(())


def test_any_policy_runs_over_a_transcript() -> None:
    """A policy written only against policies.base runs: a low limit compacts at run starts, a huge
    one never; without a reactive rule an over-long request is a failed recovery."""
    path = pi_transcript(load_session(SAMPLES / "pi0-pair-a.jsonl")).main
    assert path is not None
    low = simulate_path(path, EveryRequest(), PolicySettings(10**6, extra=(("limit", 8000),)))
    assert low.compactions and all(c.reason == "threshold" for c in low.compactions)
    never = simulate_path(path, EveryRequest(), PolicySettings(10**6, extra=(("limit", 10**7),)))
    assert never.compactions == [] and never.overflows == 0
    tight = simulate_path(path, EveryRequest(), PolicySettings(12000, extra=(("limit", 10**7),)))
    assert tight.overflows > 0 and tight.failed_recoveries == tight.overflows and not tight.compactions


def test_hook_compactions_are_applied_as_recorded() -> None:
    """A hook-written compaction far below the threshold is applied where it was recorded; nothing is
    invented after it."""
    from sessiontools.testing import SessionBuilder
    from tests.replay.test_real_sessions import grow

    b = SessionBuilder()
    grow(b, 10, 5000, 3000)
    b.compaction("## Goal\\nhook summary", b.entries[-4]["id"], 32000)
    b.entries[-1]["fromHook"] = True
    grow(b, 10, 6000, 3000)
    path = pi_transcript(b.session()).main
    assert path is not None
    run = simulate_path(path, pi_policy("pi-0"), PolicySettings(64000, 16384, 20000))
    assert [c.reason for c in run.compactions] == [CompactionReason.USER] and run.overflows == 0 and run.late == 0
