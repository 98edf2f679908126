"""Drift reads each summary against its own agent's template (`policies.registry.summary_template`
through `SUMMARY_TEMPLATES`), not one reference template: a second sectioned agent (here a made-up
template registered for Codex) gets its own expected sections, exact headings and format names,
while Pi's summaries keep Pi's and free-form agents are mapped onto the reference."""

from __future__ import annotations

import pytest

from sessiontools.analysis.drift.summary import parse_summary
from sessiontools.policies import registry
from sessiontools.policies.summary_template import SummaryTemplate
from sessiontools.read.agents import Agent

_ROLES = ("goal", "constraints", "progress", "done", "in_progress", "blocked", "decisions", "next_steps", "critical")
OTHER = SummaryTemplate(
    agent="Other",
    sections={r: n for r, n in zip(_ROLES, ("Aim", "Rules", "Status", "Status/Finished", "Status/Ongoing",
                                            "Status/Stuck", "Choices", "Then", "Must Know"), strict=True)},
    branch_roles=_ROLES[:-1],
    turn_sections={"turn": "Turn", "turn_request": "Turn/Ask", "turn_progress": "Turn/So Far",
                   "turn_context": "Turn/Need"},
    strict_top={"aim": "goal", "rules": "constraints", "status": "progress", "choices": "decisions",
                "then": "next_steps", "must know": "critical"},
    strict_progress={"finished": "done", "ongoing": "in_progress", "stuck": "blocked"},
    strict_turn={"ask": "turn_request", "so far": "turn_progress", "need": "turn_context"},
    turn_marker="**Turn (split):**", branch_preamble="Elsewhere:\n\n",
    structured_format="other-structured", split_turn_format="other-split-turn", branch_format="other-branch",
    complete_label="other",
)
TEXT = "## Aim\nShip it.\n\n## Rules\n- no network\n\n## Status\n### Finished\n- [x] read\n\n## Then\n1. test\n"


@pytest.fixture
def other_template(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.SUMMARY_TEMPLATES, Agent.CODEX, lambda: OTHER)
    monkeypatch.setitem(registry.SECTIONED_SUMMARIES, Agent.CODEX, True)


def test_a_summary_is_read_against_its_own_agents_template(other_template: None) -> None:
    p = parse_summary(TEXT, agent="codex")
    assert p.view.template is OTHER and p.summary_format == "other-structured" and p.promises_sections
    assert p.expected_sections == tuple(OTHER.sections.values())
    assert {"Aim", "Rules", "Status", "Status/Finished", "Then"} <= p.strict_sections
    assert p.sections_missing == ["Status/Ongoing", "Status/Stuck", "Choices", "Must Know"]
    assert [it.section for it in p.items] == ["Aim", "Rules", "Status/Finished", "Then"]
    split = parse_summary(TEXT + "\n---\n\n**Turn (split):**\n\n## Ask\n- fix it\n\n## So Far\n- half\n", agent="codex")
    assert split.split_turn and split.summary_format == "other-split-turn"
    assert {"Turn/Ask", "Turn/So Far"} <= split.strict_sections and "Turn/Need" in split.sections_missing


def test_pi_keeps_pis_template_and_free_form_agents_the_reference(other_template: None) -> None:
    pi = parse_summary(TEXT, agent="pi")
    assert pi.view.template is registry.reference_template() and pi.summary_format == "free-form"
    assert "Aim" in pi.sections and not pi.strict_sections  # Pi's headings are absent: Pi's free-form
    claude = parse_summary("## Goal\nShip it.\n", agent="claude-code")
    assert claude.view.template is registry.reference_template() and claude.summary_format == "free-form"
    assert "Goal" in claude.sections


def test_the_reference_is_used_for_an_unknown_agent() -> None:
    assert parse_summary("## Goal\nx\n", agent=None).view.template is registry.reference_template()
    assert registry.summary_template("no-such-agent") is registry.reference_template()


def test_a_second_sectioned_agent_is_no_registry_gap_but_a_reference_without_template_is(
        other_template: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontools.replay.registry import registry_gaps

    assert registry_gaps() == []  # two templates: each agent's summaries read against their own
    monkeypatch.setitem(registry.SUMMARY_TEMPLATES, Agent.PI, None)
    monkeypatch.setitem(registry.SECTIONED_SUMMARIES, Agent.PI, False)
    assert registry_gaps() == ["summary templates: drift's reference agent has none "
                               "(policies.registry.REFERENCE_TEMPLATE_AGENT)"]
