"""Pi's rule over a transcript (the walk every other agent's file takes under `pi-0`/`pi-1`) keeps what
Pi's `findCutPoint` keeps: it walks back summing Pi's own estimate of each message (chars/4 of what
Pi counts), not the truth, to keepRecentTokens. On Pi's own samples the transcript walk then makes the
exact port's compactions (same reason, parent and first kept entry) where the truth models agree."""

from __future__ import annotations

import pytest

from sessiontools.policies.base import Candidate, PolicySettings
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.read.sources import load_source
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.session import replay_source
from sessiontools.replay.walk import replay_settings, simulate_path
from sessiontools.transcript.load import transcript_of
from sessiontools.transcript.model import Message, Role, Unit, UnitKind
from tests.conftest import SAMPLES


def _message(i: int, role: Role, chars: int) -> Message:
    return Message(i, f"m{i}", i + 1, role, (Unit(UnitKind.TEXT, "x" * chars),))


def test_keep_sums_pis_estimate_not_the_truth() -> None:
    """Four messages of 400 chars (100 tokens by Pi's estimate), each with a truth of 1,000 tokens:
    keepRecentTokens 250 keeps the newest three by Pi's count (one by the truth's)."""
    roles = (Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT)
    cands = [Candidate(i, r.value, True, 1000.0, _message(i, r, 400)) for i, r in enumerate(roles)]
    kept = pi_policy("pi-0").keep(cands, PolicySettings(16000, 3000, 250))
    assert kept.indices == (1, 2, 3)


@pytest.mark.parametrize("name", ["pi0-pair-a", "pi0-pair-b"])
def test_transcript_walk_makes_the_exact_ports_compactions(name: str) -> None:
    """W 16k, reserve 4k, keep 6k: eleven compactions, as Pi's exact walk made them (before Pi's estimate
    was summed, the transcript walk's first kept entries differed from the second compaction on; the
    exact walk is gone, its answers are in tests/replay/test_walk_reference.py), the same on the
    neutral transcript's walk as on the replay's."""
    s = load_source(SAMPLES / f"{name}.jsonl")
    (pr,) = replay_source(s, windows=[16000], reserves=[4000], keeps=[6000], policy="pi-0")
    path = transcript_of(s).paths[0]
    p = pi_policy("pi-0")
    walked = simulate_path(path, p, replay_settings(p, 16000, 4000, 6000), fit_neutral_truth(path))

    def key(run):  # type: ignore[no-untyped-def]
        return [(c.reason.value, c.parent_entry_id, c.first_kept_entry_id) for c in run.compactions]

    assert len(pr.runs[0].compactions) == 11
    assert key(walked) == key(pr.runs[0])


def test_no_cut_point_after_the_budget_falls_back_as_pi_does() -> None:
    """keepRecentTokens is reached inside trailing tool results, after the last valid cut point:
    Pi 1.x (`findProjectedCutPoint`) cuts at the last valid cut point, 0.x (`findCutPoint`) keeps its
    first one."""
    roles = (Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL)
    cands = [Candidate(i, r.value, r != Role.TOOL, 1.0, _message(i, r, 400)) for i, r in enumerate(roles)]
    settings = PolicySettings(16000, 3000, 150)
    assert pi_policy("pi-1").keep(cands, settings).indices == (3, 4, 5)
    assert pi_policy("pi-0").keep(cands, settings).indices == (0, 1, 2, 3, 4, 5)


@pytest.mark.parametrize(("version", "length_clears"), [("pi-0", True), ("pi-1", False)])
def test_pis_recovery_flag_is_one_state_for_both_walks(version: str, length_clears: bool) -> None:
    """`Policy.recovery` is Pi's `_overflowRecoveryAttempted` (agent-session.js 0.73.1, 1.6.0): set when
    Pi compacts to retry, cleared by a user message and by a reply that is not an error (1.6.0: nor
    `length`); the exact walk and the transcript walk both ask it."""
    rec = pi_policy(version).recovery()
    assert rec.may_retry()
    rec.retrying()
    assert not rec.may_retry()
    rec.replied("error")
    assert not rec.may_retry()
    rec.replied("length")
    assert rec.may_retry() == length_clears
    rec.retrying()
    rec.run_started()
    assert rec.may_retry()
    rec.retrying()
    rec.replied("stop")
    assert rec.may_retry()


def test_a_policy_that_is_not_reactive_never_retries() -> None:
    from sessiontools.policies.registry import make_policy

    codex = make_policy("codex").recovery()
    assert not codex.may_retry()
    codex.run_started()
    assert not codex.may_retry()
    cc = make_policy("claude-code").recovery()
    cc.retrying()
    assert cc.may_retry()  # Claude Code's reactive compaction retries after every rejection
