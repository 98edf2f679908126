"""Where codex-rs's estimate of the encrypted reasoning (`get_non_last_reasoning_items_tokens`) stops, per
release: at the newest user-role message. Which messages count as one changed:

- 0.64 - 0.116 (`rposition(role == "user")`, codex-rs b519267): any user-role message, the initial
  context Codex writes as user messages included;
- 0.117 on (`rposition(is_user_turn_boundary)`, codex-rs 267499bed): a real prompt, or a user message
  that is not initial context;
- in both, a user message Codex writes inside a turn (the shell `apply_patch` warning, which the reader
  gives Role.OTHER because it starts no turn) ends it: the lab's R probe on the real 0.77 CLI compacts
  1 of 4 times where it should without this.
- 0.63 has no such term (the R probe: 2 of 2 only without it, 0 with it).
"""

from __future__ import annotations

from sessiontools.policies.base import CountView
from sessiontools.policies.codex import codex_policy, past_reasoning
from sessiontools.policies.codex_rules import rule_for
from tests.replay.test_codex_real_shapes import Rollout, replay

WARNING = "Warning: apply_patch was requested via shell. Use the apply_patch tool instead of exec_command."
CONTEXT = "<environment_context><cwd>/w</cwd></environment_context>"


def test_the_rows_name_the_releases_measured_and_read() -> None:
    assert not rule_for("0.63.0").counts_past_reasoning
    assert rule_for("0.64.0").counts_past_reasoning and rule_for("0.64.0").reasoning_scope_any_user
    assert not rule_for("0.64.0").default_any_model  # 0.64 still as 0.63 otherwise (probes C, D, K, P)
    assert rule_for("0.116.0").reasoning_scope_any_user
    assert not rule_for("0.117.0").reasoning_scope_any_user
    assert rule_for("0.171.0").counts_past_reasoning


def warned_rollout(version: str) -> Rollout:
    """One turn: 40,000 tokens' worth of reasoning, a shell apply_patch, Codex's warning (a user message),
    then a response at 210,000: over 244,800 only when the reasoning before the warning is counted."""
    r = Rollout(version)
    r.msg("user", "Task 1: patch the parser")
    r.reasoning(40_000)
    r.tool("c1", 150_000)
    r.msg("user", WARNING)
    r.reasoning(1_000)
    r.tool("c2", 210_000)
    r.remote_compaction()
    r.tool("c3", 12_000)
    r.answer(13_000)
    return r


def test_the_apply_patch_warning_ends_the_scope() -> None:
    path = warned_rollout("0.77.0").path()
    msgs = [m for m in path.messages if m.line < path.compactions[0].line]
    assert past_reasoning(msgs) == 40_000
    assert past_reasoning(msgs, any_user=True) == 40_000
    for version in ("0.77.0", "0.105.0", "0.171.0"):
        run = replay(warned_rollout(version), version)
        assert (run.recorded_match.matched, run.recorded_match.extra) == (1, 0), version
    assert replay(warned_rollout("0.63.0"), "0.63.0").recorded_match.matched == 0  # no term: late


def test_initial_context_ends_the_scope_only_before_0_117() -> None:
    r = Rollout("0.110.0")
    r.msg("user", "Task 1: patch the parser")
    r.reasoning(30_000)
    r.answer(100_000)
    r.msg("user", CONTEXT, after=60)  # re-written initial context, before the next prompt
    msgs = list(r.path().messages)
    assert past_reasoning(msgs, any_user=True) == 30_000
    assert past_reasoning(msgs) == 0  # the newest real prompt is Task 1: its own reasoning is in its total
    assert codex_policy("0.110.0").count(CountView(100_000.0, (), (), msgs)) >= 130_000
    assert codex_policy("0.121.0").count(CountView(100_000.0, (), (), msgs)) < 130_000
