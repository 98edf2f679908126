"""How `replay` runs the policies of `policies.registry` (the one registry of policies, which agents'
transcripts each replays and each agent's own rule, re-exported here): which pairs go through an
exact port, which agents a `--policy` reads, and each policy's settings axes.

Pi sessions replayed with a Pi policy go through the exact port (`replay.simulate`, `EXACT_PORTS`);
every other pair (Codex rollouts, Claude Code transcripts, Pi sessions under another agent's rule)
goes through the transcript walk (`replay.walk`) with the policy object made here.
"""

from __future__ import annotations

from sessiontools.policies.base import Axis, PolicyName
from sessiontools.policies.registry import (  # the one registry of policies; re-exported for replay's callers
    DEFAULT_POLICY,
    EVERY_AGENT,
    OWN_AGENT,
    POLICIES,
    VERSION_SETTING,
    PolicyEntry,
    cli_version,
    make_policy,
)
from sessiontools.read.agents import Agent

__all__ = ["DEFAULT_POLICY", "EVERY_AGENT", "EXACT_PORTS", "OWN_AGENT", "PI_POLICIES", "POLICIES", "VERSION_SETTING",
           "PolicyEntry", "cli_version", "has_exact_port", "make_policy", "policy_axes", "replay_agents"]

PI_POLICIES = frozenset({PolicyName.PI_0, PolicyName.PI_1})

#: The (agent, policies) pairs replayed by an exact port of the agent's own code on its own entries
#: instead of the transcript walk (`replay.walk`): Pi's `prepareCompaction` (`replay.simulate`). The
#: one place that chooses: a Pi session under a Pi policy cannot reach the transcript walk
#: (`replay.session.replay_source`, `replay.transcripts.replay_transcript`).
EXACT_PORTS: dict[Agent, frozenset[PolicyName]] = {Agent.PI: PI_POLICIES}


def has_exact_port(agent: str | Agent, policy: str | PolicyName | None) -> bool:
    """Whether `agent`'s files under `policy` (None: the agent's own) go through an exact port."""
    ports = EXACT_PORTS.get(Agent(agent))
    if ports is None:
        return False
    return policy is None and DEFAULT_POLICY.get(Agent(agent)) is None or policy is not None and PolicyName(policy) in ports


def replay_agents(policy: str | None) -> frozenset[Agent]:
    """The agents whose files `replay --policy POLICY` reads (no policy: those with a default)."""
    if policy is None:
        return frozenset(DEFAULT_POLICY)
    return POLICIES[PolicyName(policy)].agents


def policy_axes(name: str | PolicyName) -> tuple[Axis, ...]:
    """The settings axes of a policy (`Policy.axes`), for grids, tables, heatmaps and gate messages."""
    n = PolicyName(name)
    got = _AXES.get(n)
    if got is None:
        got = _AXES[n] = make_policy(n).axes
    return got


_AXES: dict[PolicyName, tuple[Axis, ...]] = {}
