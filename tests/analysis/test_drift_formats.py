"""Summary formats and section structure (issue 12, cause 8): headings come from a markdown parser,
stray `# ` lines do not re-level Pi's sections, and missing sections are reported only for a format
that promises them (Pi structured, split turn, branch), not for hook-written or other agents' ones."""

from __future__ import annotations

from sessiontools.analysis.drift import DONE, GOAL, diff_summaries, parse_summary
from sessiontools.testing import SessionBuilder
from sessiontools.transcript.model import (
    Agent,
    Compaction,
    Message,
    Role,
    Transcript,
    TranscriptPath,
    Trigger,
    Unit,
    UnitKind,
)

PI_TEXT = """## Goal
- Ship the parser

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Ran the build
{pasted}
- [x] Wrote `src/parse.py`

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- **Parser**: markdown-it

## Next Steps
1. Release

## Critical Context
- (none)
"""


def test_hash_line_inside_a_list_item_is_not_a_heading() -> None:
    """`  # comment` continuing a list item (pasted shell output) is part of the item, not a level-1 heading."""
    p = parse_summary(PI_TEXT.format(pasted="  # build output follows\n  ok: 3 files"))
    assert p.format == "pi" and p.sections_missing == []
    assert any("build output follows" in it.text for it in p.sections[DONE])


def test_stray_top_level_heading_does_not_demote_pi_sections() -> None:
    """An unfenced `# Building project` line (tool output pasted as is) does not make `## Goal` a sub-heading."""
    p = parse_summary(PI_TEXT.format(pasted="\n# Building project\n"))
    assert p.sections_missing == [] and p.format == "pi"
    assert [it.text for it in p.sections[GOAL]] == ["Ship the parser"]


def test_hash_lines_in_fenced_code_inside_a_list_are_code() -> None:
    """A fenced block indented inside a list item keeps its `#` lines (markdown-it sees the fence)."""
    p = parse_summary(PI_TEXT.format(pasted="    ```sh\n    # install\n    npm i\n    ```"))
    assert p.format == "pi" and "Progress/Done" in p.sections


def _hook_session() -> SessionBuilder:
    b = SessionBuilder()
    u = b.user("one")
    b.assistant("a")
    b.add("compaction", summary="Everything so far: the user wants a parser.", firstKeptEntryId=u,
          tokensBefore=1000, fromHook=True)
    u2 = b.user("two")
    b.assistant("b")
    b.compaction(PI_TEXT.format(pasted=""), u2, 2000)
    return b


def test_hook_summary_promises_no_sections() -> None:
    """A `fromHook` compaction is format `hook`, written by "hook", with no missing sections reported."""
    r = diff_summaries([_hook_session().session()])
    s1, s2 = r.chains[0].chain
    assert (s1.writer, s1.parsed.summary_format, s1.parsed.sections_missing) == ("hook", "hook", [])
    assert s1.parsed.compliance == 0.0  # still visible as a compliance figure
    assert (s2.writer, s2.parsed.summary_format) == ("agent", "pi-structured")
    assert r.metrics()["missing_sections"] == 0


def test_pi_summary_without_any_pi_heading_is_free_form_and_partial_is_reported() -> None:
    """Pi-written text with no Pi heading is free-form (not promised); one with some is reported."""
    b = SessionBuilder()
    u = b.user("one")
    b.compaction("# Notes\nThe user wants a parser.", u, 1000)
    u2 = b.user("two")
    b.compaction("## Goal\n- parser\n\n## Next Steps\n1. ship", u2, 2000)
    r = diff_summaries([b.session()])
    s1, s2 = r.chains[0].chain
    assert s1.parsed.summary_format == "free-form" and s1.parsed.sections_missing == []
    assert s2.parsed.summary_format == "pi-structured" and "Key Decisions" in s2.parsed.sections_missing


def test_split_turn_formats() -> None:
    """A split-turn compaction is `pi-split-turn`; Pi's own "No prior history." part promises no history sections."""
    turn = ("\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nDo it\n\n## Progress So Far\n- a\n\n"
            "## Context Needed to Continue\n- b")
    p = parse_summary("No prior history." + turn)
    assert p.summary_format == "pi-split-turn" and p.sections_missing == [] and p.format == "pi"
    q = parse_summary(PI_TEXT.format(pasted="") + turn)
    assert q.summary_format == "pi-split-turn" and q.sections_missing == []
    r = parse_summary("## Goal\n- x" + turn)
    assert "Key Decisions" in r.sections_missing and "Turn Context/Original Request" not in r.sections_missing


def _other_agent(agent: Agent) -> Transcript:
    msgs = (
        Message(0, "u1", 1, Role.USER, (Unit(UnitKind.USER, "build it"),)),
        Message(1, "c1", 2, Role.SUMMARY, (Unit(UnitKind.SUMMARY, "## Goal\n- build it"),)),
        Message(2, "u2", 3, Role.USER, (Unit(UnitKind.USER, "more"),)),
        Message(3, "c2", 4, Role.SUMMARY, (Unit(UnitKind.SUMMARY, "## Goal\n- build it\n- more"),)),
    )
    comps = (Compaction(1, 2, Trigger.THRESHOLD, 100, summary="## Goal\n- build it", id="c1"),
             Compaction(3, 4, Trigger.MANUAL, 200, summary="## Goal\n- build it\n- more", id="c2"))
    path = TranscriptPath("c2", msgs, (), comps, ())
    return Transcript(agent, "x.jsonl", "sid", "test", [path])


def test_other_agents_summaries_work_with_no_drift_change() -> None:
    """Claude Code and Codex compactions in the neutral model give a chain, a pair and free-form formats."""
    for agent in (Agent.CLAUDE_CODE, Agent.CODEX):
        r = diff_summaries([_other_agent(agent)])
        c = r.chains[0]
        assert c.agent == agent.value and [s.entry_id for s in c.chain] == ["c1", "c2"]
        assert [s.parsed.summary_format for s in c.chain] == ["free-form", "free-form"]
        assert len(c.pairs) == 1 and c.pairs[0].count("added") == 1 and r.metrics()["missing_sections"] == 0


def test_facts_are_agent_neutral() -> None:
    """A Claude Code-shaped transcript (Read/Bash tool calls, is_error results) gives facts like Pi's."""
    msgs = (
        Message(0, "u1", 1, Role.USER, (Unit(UnitKind.USER, "Fix bug #12. Never change the API."),)),
        Message(1, "a1", 2, Role.ASSISTANT, (Unit(UnitKind.TOOL_CALL, 'Read{"file_path":"/w/src/app.ts"}'),
                                             Unit(UnitKind.TOOL_CALL, 'Bash{"command":"npm test"}'))),
        Message(2, "t1", 3, Role.TOOL, (Unit(UnitKind.TOOL_RESULT, "export const x = 1"),)),
        Message(3, "t2", 4, Role.TOOL, (Unit(UnitKind.TOOL_RESULT, "npm ERR! 2 failing\nmore"),),
                raw={"type": "tool_result", "is_error": True}),
        Message(4, "u2", 5, Role.USER, (Unit(UnitKind.USER, "go on"),)),
        Message(5, "c1", 6, Role.SUMMARY, (Unit(UnitKind.SUMMARY, "Fixing bug #12 in app.ts"),)),
    )
    comp = Compaction(5, 6, Trigger.THRESHOLD, 100, summary="Fixing bug #12 in app.ts", id="c1", kept=((4, 5),))
    t = Transcript(Agent.CLAUDE_CODE, "cc.jsonl", "sid", "claude-code-2", [TranscriptPath("c1", msgs, (), (comp,), ())],
                   settings={"cwd": "/w"})
    (x,) = diff_summaries([t]).chains[0].facts.summaries
    got = {k: (v.in_span, v.retained, [f.value for f in v.lost]) for k, v in x.categories.items()}
    assert got == {"files": (1, 1, []), "identifiers": (1, 1, []), "errors": (1, 0, ["npm ERR! 2 failing"]),
                   "constraints": (1, 0, ["Never change the API."])}


def test_unreadable_summary_is_not_measured() -> None:
    """A compaction with no readable summary (encrypted, remote) gets no fact row instead of losing everything."""
    msgs = (
        Message(0, "u1", 1, Role.USER, (Unit(UnitKind.USER, "You must keep #12 open."),)),
        Message(1, "c1", 2, Role.SUMMARY, ()),
        Message(2, "u2", 3, Role.USER, (Unit(UnitKind.USER, "Never rename #13."),)),
        Message(3, "c2", 4, Role.SUMMARY, (Unit(UnitKind.SUMMARY, "Never rename #13."),)),
    )
    comps = (Compaction(1, 2, Trigger.THRESHOLD, 100, summary=None, writer="provider", id="c1"),
             Compaction(3, 4, Trigger.THRESHOLD, 200, summary="Never rename #13.", id="c2"))
    t = Transcript(Agent.CODEX, "r.jsonl", "sid", "codex", [TranscriptPath("c2", msgs, (), comps, ())])
    c = diff_summaries([t]).chains[0]
    assert [x.summary.entry_id for x in c.facts.summaries] == ["c2"]
    (x,) = c.facts.summaries
    assert (x.categories["constraints"].in_span, x.categories["constraints"].retained) == (1, 1)
    assert c.chain[0].parsed.summary_format == "free-form"
