"""How `replay` runs the policies of `policies.registry` (the one registry of policies, which agents'
transcripts each replays and each agent's own rule; import its tables from there): which agents a
`--policy` reads, each policy's settings axes and each agent's summariser.

Every pair (Pi sessions under Pi's rules, Codex rollouts, Claude Code transcripts, any agent's rule
over another's transcript) goes through the one walk (`replay.walk`) with the policy object made
here. `registry_gaps` names what an agent or a policy lacks in any registry
(tests/replay/test_registries.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sessiontools.policies.base import Axis, PolicyName
from sessiontools.policies.registry import (
    DEFAULT_POLICY,
    OWN_AGENT,
    POLICIES,
    REFERENCE_TEMPLATE_AGENT,
    SECTIONED_SUMMARIES,
    SUMMARY_TEMPLATES,
    VERSION_SETTING,
    make_policy,
)
from sessiontools.read.agents import Agent

if TYPE_CHECKING:
    from sessiontools.replay.summarizer import Summarizer

__all__ = ["policy_axes", "registry_gaps", "replay_agents", "reply_text", "summarizer_of",
           "summarizers", "unsupported"]


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


#: Each agent's part of `resummarize` (the module in `policies/` whose `REWRITER` implements
#: `replay.summarizer.Rewriter`; the one driver, `replay.resummarize`, makes it a `Summarizer`), or why
#: it has none.
SUMMARIZERS: dict[Agent, str] = {
    Agent.PI: "sessiontools.policies.pi.resummarize",
    Agent.CODEX: "sessiontools.policies.codex_resummarize",
}
NO_SUMMARIZER: dict[Agent, str] = {
    Agent.CLAUDE_CODE: "Claude Code compactions are not supported: the pinned CLI (2.1.332) assembles its compact "
                       "prompt inside its bundle at run time, and no faithful port of it exists here",
}


def summarizers() -> dict[Agent, Summarizer]:
    """Every agent's summariser, in `Agent` order (imported on first use)."""
    from sessiontools.replay.resummarize import summarizer

    got = _SUMMARIZERS
    for a in Agent:
        if a in SUMMARIZERS and a not in got:
            got[a] = summarizer(SUMMARIZERS[a])
    return {a: got[a] for a in Agent if a in got}


_SUMMARIZERS: dict[Agent, Summarizer] = {}


def summarizer_of(source: Any) -> Summarizer | None:
    """The summariser of `source`'s agent (any reader's session; one with no `agent` is the fallback
    reader's), None when it has none (`unsupported` says why)."""
    from sessiontools.read.sources import FALLBACK

    agent = Agent(getattr(source, "agent", None) or FALLBACK.agent)
    return summarizers().get(agent)


def unsupported(source: Any) -> str | None:
    """None when `source` can be resummarized; else the reason, in words."""
    from sessiontools.read.sources import FALLBACK

    agent = Agent(getattr(source, "agent", None) or FALLBACK.agent)
    if agent in NO_SUMMARIZER:
        return NO_SUMMARIZER[agent]
    s = summarizer_of(source)
    return s.unsupported(source) if s is not None else f"no summariser for {agent.value} (replay.registry.SUMMARIZERS)"


def reply_text(request: Any) -> Callable[[list[Any]], str]:
    """What the agent whose summariser sends `request` keeps of a reply's content (by the request's
    type, `Summarizer.request_type`)."""
    for s in summarizers().values():
        if isinstance(request, s.request_type):
            return s.reply_text
    raise TypeError(f"no summariser sends a {type(request).__name__} (replay.registry.SUMMARIZERS)")


def registry_gaps() -> list[str]:
    """What each agent and each policy lacks, one line each (empty: every registry is complete).

    An agent needs a label (`read.agents.AGENT_LABELS`, its name in tables and messages), a reader
    (`read.sources`), a transcript adapter (`transcript.load.ADAPTERS`), its
    default policy
    (`DEFAULT_POLICY`), at least one own rule (`OWN_AGENT`: its window rule, `Policy.recorded_window`
    and `Policy.default_window`, with the catalogue after them) whose version the file records
    (`VERSION_SETTING`), a policy that replays its
    files, a summary template or None (`SUMMARY_TEMPLATES`, agreeing with `SECTIONED_SUMMARIES`; one
    template in all, the one drift reads), and a summariser with every `replay.summarizer.Summarizer` member (`SUMMARIZERS`) or the
    reason it has none (`NO_SUMMARIZER`), not both. A policy needs a maker (`POLICIES`) giving a `Policy` of that name, axes starting with the
    window, a finite count and an own agent."""
    from sessiontools.policies.base import CountView
    from sessiontools.read.agents import AGENT_LABELS
    from sessiontools.read.sources import FALLBACK, READERS
    from sessiontools.transcript.load import ADAPTERS

    out = []
    readers = {r.agent for r in (*READERS, FALLBACK)}
    for a in Agent:
        def gap(what: str, where: str, a: Agent = a) -> None:
            out.append(f"agent {a.value}: no {what} ({where})")

        if a not in AGENT_LABELS:
            gap("label", "read.agents.AGENT_LABELS")
        if a not in readers:
            gap("reader", "read.sources.READERS")
        if a not in ADAPTERS:
            gap("transcript adapter", "transcript.load.ADAPTERS")
        if DEFAULT_POLICY.get(a) is None:
            gap("default policy", "policies.registry.DEFAULT_POLICY")
        own = [n for n, o in OWN_AGENT.items() if o is a]
        if not own:
            gap("own rule (its window rule)", "policies.registry.OWN_AGENT")
        if a not in VERSION_SETTING:
            gap("version setting", "policies.registry.VERSION_SETTING")
        if not any(a in e.agents for e in POLICIES.values()):
            gap("policy replaying its files", "policies.registry.POLICIES")
        if a not in SUMMARY_TEMPLATES:
            gap("summary template, nor None for free-form summaries", "policies.registry.SUMMARY_TEMPLATES")
        elif (SUMMARY_TEMPLATES[a] is not None) != SECTIONED_SUMMARIES.get(a, False):
            gap("agreement of its summary template and SECTIONED_SUMMARIES", "policies.registry")
        if (a in SUMMARIZERS) == (a in NO_SUMMARIZER):
            gap("summariser, nor a reason it has none", "replay.registry.SUMMARIZERS / NO_SUMMARIZER")
        elif a in SUMMARIZERS and not _summarizer_complete(a):
            gap("complete summariser", f"{SUMMARIZERS[a]}.REWRITER")
    if SUMMARY_TEMPLATES.get(REFERENCE_TEMPLATE_AGENT) is None:
        out.append("summary templates: drift's reference agent has none (policies.registry.REFERENCE_TEMPLATE_AGENT)")
    for n in PolicyName:
        entry = POLICIES.get(n)
        if entry is None:
            out.append(f"policy {n.value}: no maker (policies.registry._MAKERS)")
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
            out.append(f"policy {n.value}: no own agent (policies.registry.OWN_AGENT)")
    return out


def _summarizer_complete(a: Agent) -> bool:
    """Whether `a`'s summariser has every member of `replay.summarizer.Summarizer`."""
    from sessiontools.replay.summarizer import Summarizer

    s = summarizers()[a]
    members = [m for m in vars(Summarizer) if not m.startswith("_")] + list(Summarizer.__annotations__)
    return all(hasattr(s, m) for m in members) and isinstance(s.request_type, type) and bool(s.what)
