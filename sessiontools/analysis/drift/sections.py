"""Section names of Pi's summary formats and the keywords that map free-form headings onto them."""

from __future__ import annotations

import re

GOAL = "Goal"
CONSTRAINTS = "Constraints & Preferences"
PROGRESS = "Progress"
DONE = "Progress/Done"
IN_PROGRESS = "Progress/In Progress"
BLOCKED = "Progress/Blocked"
DECISIONS = "Key Decisions"
NEXT_STEPS = "Next Steps"
CRITICAL = "Critical Context"
FILES = "Files"
UNTITLED = "(untitled)"

TURN = "Turn Context"
TURN_REQUEST = "Turn Context/Original Request"
TURN_PROGRESS = "Turn Context/Progress So Far"
TURN_CONTEXT = "Turn Context/Context Needed to Continue"

#: Sections of Pi's compaction format (SUMMARIZATION_PROMPT / UPDATE_SUMMARIZATION_PROMPT).
PI_SECTIONS: tuple[str, ...] = (GOAL, CONSTRAINTS, PROGRESS, DONE, IN_PROGRESS, BLOCKED, DECISIONS, NEXT_STEPS, CRITICAL)
#: Sections of Pi's branch-summary format (BRANCH_SUMMARY_PROMPT: no Critical Context).
BRANCH_SECTIONS: tuple[str, ...] = PI_SECTIONS[:-1]
#: Sections of the turn-prefix part of a split-turn compaction (1.x names; 0.x names map to them).
TURN_SECTIONS: tuple[str, ...] = (TURN_REQUEST, TURN_PROGRESS, TURN_CONTEXT)

#: Where a fuzzy match may move an item between sections (to-dos travel between these).
PROGRESS_GROUP = frozenset({PROGRESS, DONE, IN_PROGRESS, BLOCKED, NEXT_STEPS})
#: Sections a finished item is "reopened" into.
REOPEN_SECTIONS = frozenset({IN_PROGRESS, BLOCKED, NEXT_STEPS})

#: Minimum Dice similarity of word tokens for two items to count as the same item, changed.
FUZZY_THRESHOLD = 0.6

TURN_MARKER = "**Turn Context (split turn):**"
BRANCH_PREAMBLE = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"

STRICT_TOP = {
    "goal": GOAL,
    "constraints & preferences": CONSTRAINTS,
    "progress": PROGRESS,
    "key decisions": DECISIONS,
    "next steps": NEXT_STEPS,
    "critical context": CRITICAL,
}
STRICT_PROGRESS = {"done": DONE, "in progress": IN_PROGRESS, "blocked": BLOCKED}
STRICT_TURN = {
    "original request": TURN_REQUEST,
    "early progress": TURN_PROGRESS,  # 0.x
    "context for suffix": TURN_CONTEXT,  # 0.x
    "progress so far": TURN_PROGRESS,  # 1.x
    "context needed to continue": TURN_CONTEXT,  # 1.x
}
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

