"""Which compaction policies `replay` knows, which agents' transcripts each replays, and each agent's
default policy. Adding a policy is adding one `PolicyEntry` line to `POLICIES` (and, when it is an
agent's own rule, one line to `DEFAULT_POLICY`).

A policy says which agent's own entries it replays by an exact port (`Policy.exact_port_for`: Pi's
policies on Pi sessions, `replay.simulate`); every other pair (Codex rollouts, Claude Code
transcripts, Pi sessions under another agent's rule, Pi's rule over other agents' transcripts) goes
through the transcript walk (`replay.walk`) with the policy object made here. `registry_gaps` names
what an agent or a policy lacks in any registry (tests/replay/test_registries.py).
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


def _pi_default(t: Transcript) -> PolicyName:
    """Pi's own rule: the version that wrote the file (`pi_version` of its transcript)."""
    return PolicyName.PI_1 if t.settings.get("pi_version") == "1" else PolicyName.PI_0


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
    Agent.PI: _pi_default,
    Agent.CODEX: PolicyName.CODEX,
    Agent.CLAUDE_CODE: _claude_default,
}

PI_POLICIES = frozenset({PolicyName.PI_0, PolicyName.PI_1})

#: The agent whose CLI a policy is the rule of, and the transcript setting that records that CLI's
#: version: the policy follows the recorded version's rule on that agent's own files only.
OWN_AGENT: dict[PolicyName, Agent] = {
    PolicyName.PI_0: Agent.PI,
    PolicyName.PI_1: Agent.PI,
    PolicyName.CODEX: Agent.CODEX,
    PolicyName.CLAUDE_CODE: Agent.CLAUDE_CODE,
    PolicyName.CLAUDE_CODE_REACTIVE: Agent.CLAUDE_CODE,
}
VERSION_SETTING: dict[Agent, str] = {Agent.PI: "pi_version", Agent.CODEX: "cli_version", Agent.CLAUDE_CODE: "version"}


def has_exact_port(agent: str | Agent, policy: str | PolicyName | None) -> bool:
    """Whether `agent`'s files under `policy` (None: the agent's own rule) are replayed by the exact port
    of that agent's code on its own entries instead of the transcript walk: the policy says so
    (`Policy.exact_port_for`: Pi's `prepareCompaction`, `replay.session`). With no policy, every own
    rule of the agent (`OWN_AGENT`) answers alike (`registry_gaps` checks it)."""
    a = Agent(agent)
    names = [PolicyName(policy)] if policy is not None else [n for n, own in OWN_AGENT.items() if own is a]
    return bool(names) and all(make_policy(n).exact_port_for is a for n in names)


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


def registry_gaps() -> list[str]:
    """What each agent and each policy lacks, one line each (empty: every registry is complete).

    An agent needs a reader (`read.sources`), a transcript adapter (`transcript.load.ADAPTERS`), its
    own check-point estimate (`policies.checkpoint.OWN_ESTIMATES`), a default policy
    (`DEFAULT_POLICY`), at least one own rule (`OWN_AGENT`: its window rule, `Policy.recorded_window`
    and `Policy.default_window`, with the catalogue after them) whose version the file records
    (`VERSION_SETTING`), all its own rules agreeing on the exact port, and a policy that replays its
    files. A policy needs a maker (`POLICIES`) giving a `Policy` of that name, axes starting with the
    window, a finite count and an own agent."""
    from sessiontools.policies.base import CountView
    from sessiontools.policies.checkpoint import OWN_ESTIMATES
    from sessiontools.read.sources import FALLBACK, READERS
    from sessiontools.transcript.load import ADAPTERS

    out = []
    readers = {r.agent for r in (*READERS, FALLBACK)}
    for a in Agent:
        def gap(what: str, where: str, a: Agent = a) -> None:
            out.append(f"agent {a.value}: no {what} ({where})")

        if a not in readers:
            gap("reader", "read.sources.READERS")
        if a not in ADAPTERS:
            gap("transcript adapter", "transcript.load.ADAPTERS")
        if a not in OWN_ESTIMATES:
            gap("own check-point estimate", "policies.checkpoint.OWN_ESTIMATES")
        if DEFAULT_POLICY.get(a) is None:
            gap("default policy", "replay.registry.DEFAULT_POLICY")
        own = [n for n, o in OWN_AGENT.items() if o is a]
        if not own:
            gap("own rule (its window rule)", "replay.registry.OWN_AGENT")
        if a not in VERSION_SETTING:
            gap("version setting", "replay.registry.VERSION_SETTING")
        if len({make_policy(n).exact_port_for for n in own if n in POLICIES}) > 1:
            gap("single walk for its own rules", "Policy.exact_port_for")
        if not any(a in e.agents for e in POLICIES.values()):
            gap("policy replaying its files", "replay.registry.POLICIES")
    for n in PolicyName:
        entry = POLICIES.get(n)
        if entry is None:
            out.append(f"policy {n.value}: no maker (replay.registry._MAKERS)")
            continue
        p = entry.make(None, None)
        if p.name != n:
            out.append(f"policy {n.value}: its maker gives {p.name}")
        if not p.axes or p.axes[0].key != "context_window":
            out.append(f"policy {n.value}: no axes starting with the window (Policy.axes)")
        count = p.count(CountView(1000.0, [(40, 40)], [(40, 40)]))
        if not isinstance(count, int | float) or count != count or count < 1000:
            out.append(f"policy {n.value}: no count (Policy.count gives {count!r})")
        if n not in OWN_AGENT:
            out.append(f"policy {n.value}: no own agent (replay.registry.OWN_AGENT)")
    return out
