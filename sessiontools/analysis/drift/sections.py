"""The sections drift reads summaries by: each summary's own template (`template_view(agent)`: the
template of the agent whose prompt it is, `policies.registry.summary_template`; the names of each
role, the exact headings, the markers), and the keywords that map free-form headings onto them. The
module's constants are the reference template's (`policies.registry.reference_template`), which
the measures over pairs (moves, reopenings, goals) are written in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sessiontools.policies.registry import reference_template, summary_template
from sessiontools.policies.summary_template import SummaryTemplate

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


#: Where a fuzzy match may move an item between sections (to-dos travel between these).
PROGRESS_GROUP = frozenset({PROGRESS, DONE, IN_PROGRESS, BLOCKED, NEXT_STEPS})
#: Sections a finished item is "reopened" into.
REOPEN_SECTIONS = frozenset({IN_PROGRESS, BLOCKED, NEXT_STEPS})

#: Minimum Dice similarity of word tokens for two items to count as the same item, changed.
FUZZY_THRESHOLD = 0.6


#: Keywords that map a free-form heading onto a section, by role ("files": the file-list section).
_KEYWORD_ROLES = (
    (r"\bdecisions?\b", "decisions"),
    (r"\bnext steps?\b|\bremaining\b|\bto-?dos?\b|\bpending\b|\bupcoming\b", "next_steps"),
    (r"\bblock(?:ed|ers?)\b|\bopen (?:issues|problems)\b", "blocked"),
    (r"\bin progress\b|\bcurrent (?:task|tasks|work|state|status|progress|focus)\b|\bongoing\b", "in_progress"),
    (r"\bdone\b|\bcompleted?\b|\bfinished\b|\baccomplish", "done"),
    (r"\bprogress\b", "progress"),
    (r"\bgoals?\b|\bobjectives?\b|\bpurpose\b", "goal"),
    (r"\bconstraints?\b|\bpreferences?\b|\brequirements?\b", "constraints"),
    (r"\bcritical context\b|\bimportant (?:context|notes|details)\b|\bkey context\b", "critical"),
    (r"\bfiles?\b", "files"),
)
_TURN_KEYWORD_ROLES = (
    (r"\brequest\b|\btask\b|\basked?\b", "turn_request"),
    (r"\bprogress\b|\bwork\b|\bdone\b|\bcompleted?\b|\bdecisions?\b", "turn_progress"),
    (r"\bcontext\b|\bstate\b|\bsuffix\b|\bcontinue\b|\bneeded\b|\bnext\b", "turn_context"),
)


@dataclass(frozen=True, slots=True, eq=False)
class TemplateView:
    """What parsing a summary reads of its template (`policies.summary_template.SummaryTemplate`):
    the expected sections of each kind, the exact headings, the markers and the keyword mapping of
    free-form headings onto the template's sections."""

    template: SummaryTemplate
    sections: tuple[str, ...]  # the compaction format's
    branch_sections: tuple[str, ...]
    turn_sections: tuple[str, ...]  # the turn-prefix part's (its `turn` parent excluded)
    progress: str
    turn: str
    strict_top: dict[str, str]
    strict_progress: dict[str, str]
    strict_turn: dict[str, str]
    keywords: tuple[tuple[re.Pattern[str], str], ...]
    turn_keywords: tuple[tuple[re.Pattern[str], str], ...]
    turn_split: re.Pattern[str]  # the split before a split turn's turn-prefix part


def _role_keywords(t: SummaryTemplate, roles: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(p), FILES if r == "files" else t.section(r)) for p, r in roles)


_VIEWS: dict[int, TemplateView] = {}


def view_of(t: SummaryTemplate) -> TemplateView:
    """The parsing view of template `t` (made once per template)."""
    v = _VIEWS.get(id(t))
    if v is None or v.template is not t:
        v = _VIEWS[id(t)] = TemplateView(
            t, tuple(t.sections.values()), tuple(t.section(r) for r in t.branch_roles),
            (t.section("turn_request"), t.section("turn_progress"), t.section("turn_context")),
            t.section("progress"), t.section("turn"),
            {h: t.section(r) for h, r in t.strict_top.items()},
            {h: t.section(r) for h, r in t.strict_progress.items()},
            {h: t.section(r) for h, r in t.strict_turn.items()},
            _role_keywords(t, _KEYWORD_ROLES), _role_keywords(t, _TURN_KEYWORD_ROLES),
            re.compile(r"\n*^---[ \t]*\n+" + re.escape(t.turn_marker) + r"[ \t]*\n*", re.M))
    return v


def template_view(agent: str | None) -> TemplateView:
    """The view of the template `agent`'s summaries are read against (its own prompt's, or the
    reference one for free-form summaries: `policies.registry.summary_template`)."""
    return view_of(summary_template(agent))


#: The reference template's view (free-form summaries' headings are mapped onto its sections).
REFERENCE = view_of(TEMPLATE)
#: Sections of the reference's compaction format, of its branch-summary format, and of the
#: turn-prefix part of a split-turn compaction (its `turn` parent excluded).
TEMPLATE_SECTIONS, BRANCH_SECTIONS, TURN_SECTIONS = REFERENCE.sections, REFERENCE.branch_sections, REFERENCE.turn_sections
STRICT_TOP, STRICT_PROGRESS, STRICT_TURN = REFERENCE.strict_top, REFERENCE.strict_progress, REFERENCE.strict_turn
KEYWORDS, TURN_KEYWORDS = REFERENCE.keywords, REFERENCE.turn_keywords

