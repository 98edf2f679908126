"""The sections drift reads summaries by: the template of the agent whose prompt asks for sections
(`policies.registry.reference_template`: the names of each role, the exact headings, the markers),
and the keywords that map free-form headings onto them."""

from __future__ import annotations

import re

from sessiontools.policies.registry import reference_template

#: The template summaries are read against.
TEMPLATE = reference_template()

GOAL = TEMPLATE.section("goal")
CONSTRAINTS = TEMPLATE.section("constraints")
PROGRESS = TEMPLATE.section("progress")
DONE = TEMPLATE.section("done")
IN_PROGRESS = TEMPLATE.section("in_progress")
BLOCKED = TEMPLATE.section("blocked")
DECISIONS = TEMPLATE.section("decisions")
NEXT_STEPS = TEMPLATE.section("next_steps")
CRITICAL = TEMPLATE.section("critical")
FILES = "Files"
UNTITLED = "(untitled)"

TURN = TEMPLATE.section("turn")
TURN_REQUEST = TEMPLATE.section("turn_request")
TURN_PROGRESS = TEMPLATE.section("turn_progress")
TURN_CONTEXT = TEMPLATE.section("turn_context")

#: Sections of the template's compaction format.
TEMPLATE_SECTIONS: tuple[str, ...] = tuple(TEMPLATE.sections.values())
#: Sections of its branch-summary format.
BRANCH_SECTIONS: tuple[str, ...] = tuple(TEMPLATE.section(r) for r in TEMPLATE.branch_roles)
#: Sections of the turn-prefix part of a split-turn compaction (its `turn` parent excluded).
TURN_SECTIONS: tuple[str, ...] = (TURN_REQUEST, TURN_PROGRESS, TURN_CONTEXT)

#: Where a fuzzy match may move an item between sections (to-dos travel between these).
PROGRESS_GROUP = frozenset({PROGRESS, DONE, IN_PROGRESS, BLOCKED, NEXT_STEPS})
#: Sections a finished item is "reopened" into.
REOPEN_SECTIONS = frozenset({IN_PROGRESS, BLOCKED, NEXT_STEPS})

#: Minimum Dice similarity of word tokens for two items to count as the same item, changed.
FUZZY_THRESHOLD = 0.6

TURN_MARKER = TEMPLATE.turn_marker
BRANCH_PREAMBLE = TEMPLATE.branch_preamble

STRICT_TOP = {h: TEMPLATE.section(r) for h, r in TEMPLATE.strict_top.items()}
STRICT_PROGRESS = {h: TEMPLATE.section(r) for h, r in TEMPLATE.strict_progress.items()}
STRICT_TURN = {h: TEMPLATE.section(r) for h, r in TEMPLATE.strict_turn.items()}
KEYWORDS = tuple(
    (re.compile(p), s)
    for p, s in (
        (r"\bdecisions?\b", DECISIONS),
        (r"\bnext steps?\b|\bremaining\b|\bto-?dos?\b|\bpending\b|\bupcoming\b", NEXT_STEPS),
        (r"\bblock(?:ed|ers?)\b|\bopen (?:issues|problems)\b", BLOCKED),
        (r"\bin progress\b|\bcurrent (?:task|tasks|work|state|status|progress|focus)\b|\bongoing\b", IN_PROGRESS),
        (r"\bdone\b|\bcompleted?\b|\bfinished\b|\baccomplish", DONE),
        (r"\bprogress\b", PROGRESS),
        (r"\bgoals?\b|\bobjectives?\b|\bpurpose\b", GOAL),
        (r"\bconstraints?\b|\bpreferences?\b|\brequirements?\b", CONSTRAINTS),
        (r"\bcritical context\b|\bimportant (?:context|notes|details)\b|\bkey context\b", CRITICAL),
        (r"\bfiles?\b", FILES),
    )
)
TURN_KEYWORDS = tuple(
    (re.compile(p), s)
    for p, s in (
        (r"\brequest\b|\btask\b|\basked?\b", TURN_REQUEST),
        (r"\bprogress\b|\bwork\b|\bdone\b|\bcompleted?\b|\bdecisions?\b", TURN_PROGRESS),
        (r"\bcontext\b|\bstate\b|\bsuffix\b|\bcontinue\b|\bneeded\b|\bnext\b", TURN_CONTEXT),
    )
)

