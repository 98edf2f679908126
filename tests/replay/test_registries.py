"""Registry completeness (issue 24): every agent has a label, a reader, a transcript adapter,
a default policy (whose `Policy.checkpoint` is its own estimate), an own rule (its window rule) and a policy replaying its files; every policy has a
maker, axes starting with the window, a count and an own agent. Removing any one entry makes
`registry_gaps` name exactly what is missing, so adding a fourth agent without one fails here."""

from __future__ import annotations

import pytest

from sessiontools.policies import registry as policies
from sessiontools.policies.base import PolicyName
from sessiontools.read import sources
from sessiontools.read.agents import AGENT_LABELS, Agent
from sessiontools.replay import registry
from sessiontools.replay.registry import registry_gaps
from sessiontools.transcript.load import ADAPTERS


def test_every_registry_is_complete() -> None:
    assert registry_gaps() == []


@pytest.mark.parametrize(("table", "key", "message"), [
    (AGENT_LABELS, Agent.CLAUDE_CODE, "agent claude-code: no label (read.agents.AGENT_LABELS)"),
    (ADAPTERS, Agent.CODEX, "agent codex: no transcript adapter (transcript.load.ADAPTERS)"),
    (policies.DEFAULT_POLICY, Agent.PI, "agent pi: no default policy (policies.registry.DEFAULT_POLICY)"),
    (policies.VERSION_SETTING, Agent.CODEX, "agent codex: no version setting"),
])
def test_a_missing_agent_entry_is_named(monkeypatch: pytest.MonkeyPatch, table: dict, key: Agent, message: str) -> None:
    monkeypatch.delitem(table, key)
    gaps = registry_gaps()
    assert len(gaps) == 1 and gaps[0].startswith(message), gaps


def test_a_missing_reader_and_own_rule_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "READERS", [r for r in sources.READERS if r.agent != Agent.CODEX])
    monkeypatch.delitem(policies.OWN_AGENT, PolicyName.CODEX)
    gaps = registry_gaps()
    assert "agent codex: no reader (read.sources.READERS)" in gaps
    assert "agent codex: no own rule (its window rule) (policies.registry.OWN_AGENT)" in gaps
    assert "policy codex: no own agent (policies.registry.OWN_AGENT)" in gaps


def test_a_missing_policy_maker_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(policies.POLICIES, PolicyName.CLAUDE_CODE_REACTIVE)
    assert registry_gaps() == ["policy claude-code-reactive: no maker (policies.registry._MAKERS)"]


@pytest.mark.parametrize(("table", "key"), [(registry.SUMMARIZERS, Agent.CODEX), (registry.NO_SUMMARIZER, Agent.CLAUDE_CODE)])
def test_an_agent_without_a_summariser_or_a_reason_is_named(monkeypatch: pytest.MonkeyPatch, table: dict,
                                                             key: Agent) -> None:
    """Every agent has a summariser for `resummarize` or says why it has none."""
    monkeypatch.delitem(table, key)
    assert registry_gaps() == [f"agent {key.value}: no summariser, nor a reason it has none "
                               "(replay.registry.SUMMARIZERS / NO_SUMMARIZER)"]


def test_an_incomplete_summariser_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A summariser lacking a member of the `Summarizer` interface is named (here: what it keeps of a reply)."""
    full = registry.summarizers()

    class Partial:
        what = "Codex rollout"
        request_type = full[Agent.CODEX].request_type

        def __getattr__(self, name: str) -> object:
            if name == "reply_text":
                raise AttributeError(name)
            return getattr(full[Agent.CODEX], name)

    monkeypatch.setattr(registry, "summarizers", lambda: {**full, Agent.CODEX: Partial()})
    assert registry_gaps() == ["agent codex: no complete summariser (sessiontools.policies.codex_resummarize.REWRITER)"]


def test_each_request_gets_its_agents_reply_rule() -> None:
    """The endpoint keeps of a reply what the request's own agent keeps (`replay.registry.reply_text`):
    Pi's text blocks joined by newlines, Codex's last assistant message."""
    from sessiontools.policies.codex_request import CodexRequest
    from sessiontools.policies.pi.summarize import RequestKind, SummaryRequest

    blocks = [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "x"}, {"type": "text", "text": "b"}]
    pi = registry.reply_text(SummaryRequest(RequestKind.INITIAL, "s", "u", 10))
    assert pi(blocks) == "a\nb"
    items = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "old"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "new"}]}]
    assert registry.reply_text(CodexRequest({}, {}))(items) == "new"
    with pytest.raises(TypeError):
        registry.reply_text(object())


def test_an_agent_without_a_summary_template_entry_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent says which summary template its compaction prompt asks for (None: free-form), and
    the entry agrees with `SECTIONED_SUMMARIES`."""
    monkeypatch.delitem(policies.SUMMARY_TEMPLATES, Agent.CODEX)
    assert registry_gaps() == ["agent codex: no summary template, nor None for free-form summaries "
                               "(policies.registry.SUMMARY_TEMPLATES)"]
    monkeypatch.setitem(policies.SUMMARY_TEMPLATES, Agent.CODEX, None)
    monkeypatch.setitem(policies.SECTIONED_SUMMARIES, Agent.CODEX, True)
    assert registry_gaps() == ["agent codex: no agreement of its summary template and SECTIONED_SUMMARIES "
                               "(policies.registry)"]


def test_drift_reads_the_registrys_template() -> None:
    """Drift's section names are the template's (Pi's prompt's), not a second copy."""
    from sessiontools.analysis.drift import sections
    from sessiontools.policies.pi.template import PI_TEMPLATE

    assert policies.reference_template() is PI_TEMPLATE is sections.TEMPLATE
    assert sections.TEMPLATE_SECTIONS == tuple(PI_TEMPLATE.sections.values())
    assert sections.BRANCH_SECTIONS == sections.TEMPLATE_SECTIONS[:-1]  # no Critical Context
