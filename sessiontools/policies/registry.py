"""Which compaction policies exist, which agents' transcripts each replays, and each agent's own
rule: the one registry of policies. Adding a policy is adding one `_MAKERS` line (and, when it is an
agent's own rule, one `DEFAULT_POLICY` line); `replay.registry` adds how replay runs them (the
exact ports) and `own_policy` gives the rule a file's own agent followed, for every command that
judges the agent's own count (replay and estimate-error alike).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sessiontools.names import POLICY_ORDER
from sessiontools.policies.base import Policy, PolicyName
from sessiontools.policies.summary_template import SummaryTemplate
from sessiontools.read.agents import Agent
from sessiontools.transcript.model import Transcript, TranscriptPath


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
    from sessiontools.policies.claude_code_recorded import default_policy

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

#: An agent's own rule by the rule version its reader decided for the file, where a command names it
#: (Pi: "0" or "1", from the file's format or --pi-version); it comes before `DEFAULT_POLICY`.
VERSIONED_POLICY: dict[Agent, dict[str, PolicyName]] = {
    Agent.PI: {"0": PolicyName.PI_0, "1": PolicyName.PI_1},
}

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


#: Whether the agent's own compaction prompt asks for Pi's structured sections (Goal, Constraints &
#: Preferences, Progress, Key Decisions, Next Steps, Critical Context): `diff-summaries` judges its
#: summaries for them. The others' prompts ask for other structures: their summaries are free-form.
SECTIONED_SUMMARIES: dict[Agent, bool] = {
    Agent.PI: True,
    Agent.CODEX: False,
    Agent.CLAUDE_CODE: False,
}


def _pi_template() -> SummaryTemplate:
    from sessiontools.policies.pi.template import PI_TEMPLATE

    return PI_TEMPLATE


#: Each agent's summary template (the sections its compaction prompt asks for), None: its prompt asks
#: for none (its summaries are free-form). Every agent has an entry (`replay.registry.registry_gaps`).
SUMMARY_TEMPLATES: dict[Agent, Callable[[], SummaryTemplate] | None] = {
    Agent.PI: _pi_template,
    Agent.CODEX: None,
    Agent.CLAUDE_CODE: None,
}


def _pi_cuts() -> Callable[..., Any]:
    from sessiontools.policies.pi.cuts import cut_answer

    return cut_answer


#: `cut`: the agents whose policy says what it would keep and summarise at chosen points of a session
#: (Pi's `prepareCompaction`), each a maker of its `cut_answer(session, ats, *, leaf, reserve,
#: keep_recent, rule_version)`. The others have no such command (their readers refuse the file first).
CUTTERS: dict[Agent, Callable[[], Callable[..., Any]]] = {
    Agent.PI: _pi_cuts,
}


def _pi_system_merge() -> Callable[[Any], Any]:
    from sessiontools.policies.pi.usage import current_system_message

    return current_system_message


#: The agents that send a context's system messages merged into one (Pi 1.x, as pi-ai does), each a
#: maker of its merge (the raw system messages of a context -> the one message sent, or None);
#: estimate-error measures that one message (`analysis.estimate.source.Source.merges_systems`).
SYSTEM_MERGERS: dict[Agent, Callable[[], Callable[[Any], Any]]] = {
    Agent.PI: _pi_system_merge,
}


#: The agent whose template is drift's reference: free-form summaries' headings are mapped onto its
#: sections by keyword, and the measures over pairs are written in its section names.
REFERENCE_TEMPLATE_AGENT = Agent.PI


def reference_template() -> SummaryTemplate:
    """Drift's reference template (`REFERENCE_TEMPLATE_AGENT`'s; each sectioned agent's summaries are
    read against their own, `summary_template`)."""
    maker = SUMMARY_TEMPLATES[REFERENCE_TEMPLATE_AGENT]
    assert maker is not None, "the reference agent has a template (registry_gaps)"
    return maker()


def summary_template(agent: str | Agent | None) -> SummaryTemplate:
    """The template `agent`'s summaries are read against: its own prompt's (`SUMMARY_TEMPLATES`), or,
    for an agent whose summaries are free-form (or none known), the reference template whose sections
    free-form headings are mapped onto."""
    try:
        maker = SUMMARY_TEMPLATES.get(Agent(agent)) if agent is not None else None
    except ValueError:
        maker = None
    return maker() if maker is not None else reference_template()


def promises_sections(agent: str | Agent | None) -> bool:
    """Whether `agent`'s summaries are written to Pi's sectioned prompt (None: not known, the text
    decides: a summary with one of Pi's headings is read as following that prompt)."""
    return agent is None or SECTIONED_SUMMARIES.get(Agent(agent), False)


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


def own_policy_name(t: Transcript, rule_version: str | None = None) -> PolicyName:
    """The rule `t`'s own agent followed: its `VERSIONED_POLICY` for `rule_version` (the version its
    reader decided) where it has one, else its `DEFAULT_POLICY`."""
    by_version = VERSIONED_POLICY.get(t.agent)
    if rule_version and by_version and rule_version in by_version:
        return by_version[rule_version]
    default = DEFAULT_POLICY[t.agent]
    assert default is not None, t.agent  # registry_gaps: every agent has one
    return default(t) if callable(default) else default


def own_policy(t: Transcript, path: TranscriptPath | None = None, rule_version: str | None = None) -> Policy:
    """The policy object of the rule `t`'s own agent followed on `path` (the CLI version the file
    records, the path's newest model): the one whose `Policy.count` replay runs and whose
    `Policy.checkpoint` estimate-error judges."""
    name = own_policy_name(t, rule_version)
    req = next((r for r in reversed(path.requests) if r.model), None) if path is not None else None
    return make_policy(name, cli_version(name, t), req.model if req else None)
