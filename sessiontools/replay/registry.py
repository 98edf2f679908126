"""Which compaction policies `replay` knows, which agents' transcripts each replays, and each agent's
default policy. Adding a policy is adding one `PolicyEntry` line to `POLICIES` (and, when it is an
agent's own rule, one line to `DEFAULT_POLICY`).

Pi sessions replayed with a Pi policy go through the exact port (`replay.simulate`, `EXACT_PORTS`);
every other pair (Codex rollouts, Claude Code transcripts, Pi sessions under another agent's rule)
goes through the transcript walk (`replay.walk`) with the policy object made here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sessiontools.names import POLICY_ORDER
from sessiontools.policies.base import Axis, Policy, PolicyName
from sessiontools.read.agents import Agent
from sessiontools.transcript.model import Transcript


def _pi0(version: str | None = None, model: str | None = None) -> Policy:
    from sessiontools.policies.pi.policy import pi_policy

    return pi_policy(PolicyName.PI_0)


def _pi1(version: str | None = None, model: str | None = None) -> Policy:
    from sessiontools.policies.pi.policy import pi_policy

    return pi_policy(PolicyName.PI_1)


def _codex(version: str | None = None, model: str | None = None) -> Policy:
    from sessiontools.policies.codex import codex_policy

    return codex_policy(version, model)


def _claude_code(version: str | None = None, model: str | None = None) -> Policy:
    from sessiontools.policies.claude_code import claude_code_policy

    return claude_code_policy(PolicyName.CLAUDE_CODE, version, model)


def _claude_code_reactive(version: str | None = None, model: str | None = None) -> Policy:
    from sessiontools.policies.claude_code import claude_code_policy

    return claude_code_policy(PolicyName.CLAUDE_CODE_REACTIVE, version, model)


def _claude_default(t: Transcript) -> PolicyName:
    from sessiontools.policies.claude_code import default_policy

    return default_policy(t)


@dataclass(frozen=True, slots=True)
class PolicyEntry:
    """A policy replay implements: how to make it and whose transcripts it replays."""

    name: PolicyName
    make: Callable[[str | None, str | None], Policy]  # (CLI version, model) -> that version's rule
    agents: frozenset[Agent]


EVERY_AGENT = frozenset(Agent)

_MAKERS: dict[PolicyName, Callable[[str | None, str | None], Policy]] = {
    PolicyName.PI_0: _pi0,
    PolicyName.PI_1: _pi1,
    PolicyName.CODEX: _codex,
    PolicyName.CLAUDE_CODE: _claude_code,
    PolicyName.CLAUDE_CODE_REACTIVE: _claude_code_reactive,
}
#: Every policy, in `names.POLICY_ORDER` (the order `--policy` lists them).
POLICIES: dict[PolicyName, PolicyEntry] = {n: PolicyEntry(n, _MAKERS[n], EVERY_AGENT) for n in POLICY_ORDER}

#: An agent's own rule, used when --policy is not given (Pi: the version that wrote the file; Claude
#: Code: chosen from the file, threshold or reactive).
DEFAULT_POLICY: dict[Agent, PolicyName | Callable[[Transcript], PolicyName] | None] = {
    Agent.PI: None,
    Agent.CODEX: PolicyName.CODEX,
    Agent.CLAUDE_CODE: _claude_default,
}

PI_POLICIES = frozenset({PolicyName.PI_0, PolicyName.PI_1})

#: The agent whose CLI a policy is the rule of, and the transcript setting that records that CLI's
#: version: the policy follows the recorded version's rule on that agent's own files only.
OWN_AGENT: dict[PolicyName, Agent] = {
    PolicyName.CODEX: Agent.CODEX,
    PolicyName.CLAUDE_CODE: Agent.CLAUDE_CODE,
    PolicyName.CLAUDE_CODE_REACTIVE: Agent.CLAUDE_CODE,
}
VERSION_SETTING: dict[Agent, str] = {Agent.CODEX: "cli_version", Agent.CLAUDE_CODE: "version"}

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


def cli_version(name: str | PolicyName, t: Transcript, override: str | None = None) -> str | None:
    """The CLI version whose rule `name` follows on `t`: `override` (--cli-version), else the version the
    file records when `t` is that policy's own agent's, else None (the newest measured rule)."""
    n = PolicyName(name)
    if OWN_AGENT.get(n) is None:
        return None
    if override:
        return override
    if OWN_AGENT[n] is not t.agent:
        return None
    v = t.settings.get(VERSION_SETTING[t.agent])
    return v if isinstance(v, str) and v else None


def make_policy(name: str | PolicyName, version: str | None = None, model: str | None = None) -> Policy:
    """The policy `name` under CLI `version`'s rule (None: the newest measured) for `model`."""
    return POLICIES[PolicyName(name)].make(version, model)


def policy_axes(name: str | PolicyName) -> tuple[Axis, ...]:
    """The settings axes of a policy (`Policy.axes`), for grids, tables, heatmaps and gate messages."""
    n = PolicyName(name)
    got = _AXES.get(n)
    if got is None:
        got = _AXES[n] = make_policy(n).axes
    return got


_AXES: dict[PolicyName, tuple[Axis, ...]] = {}
