"""Pi's summary template (`policies.summary_template.SummaryTemplate`): the sections of
SUMMARIZATION_PROMPT / UPDATE_SUMMARIZATION_PROMPT (`policies/pi/prompts`), BRANCH_SUMMARY_PROMPT's
(no Critical Context), the turn-prefix part of a split turn (1.x names; 0.x's map to them), the
marker and preamble Pi writes, and the names of its summary formats."""

from __future__ import annotations

from sessiontools.policies.summary_template import SummaryTemplate

PI_TEMPLATE = SummaryTemplate(
    agent="Pi",
    sections={
        "goal": "Goal",
        "constraints": "Constraints & Preferences",
        "progress": "Progress",
        "done": "Progress/Done",
        "in_progress": "Progress/In Progress",
        "blocked": "Progress/Blocked",
        "decisions": "Key Decisions",
        "next_steps": "Next Steps",
        "critical": "Critical Context",
    },
    branch_roles=("goal", "constraints", "progress", "done", "in_progress", "blocked", "decisions", "next_steps"),
    turn_sections={
        "turn": "Turn Context",
        "turn_request": "Turn Context/Original Request",
        "turn_progress": "Turn Context/Progress So Far",
        "turn_context": "Turn Context/Context Needed to Continue",
    },
    strict_top={
        "goal": "goal",
        "constraints & preferences": "constraints",
        "progress": "progress",
        "key decisions": "decisions",
        "next steps": "next_steps",
        "critical context": "critical",
    },
    strict_progress={"done": "done", "in progress": "in_progress", "blocked": "blocked"},
    strict_turn={
        "original request": "turn_request",
        "early progress": "turn_progress",  # 0.x
        "context for suffix": "turn_context",  # 0.x
        "progress so far": "turn_progress",  # 1.x
        "context needed to continue": "turn_context",  # 1.x
    },
    turn_marker="**Turn Context (split turn):**",
    branch_preamble="The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n",
    structured_format="pi-structured",
    split_turn_format="pi-split-turn",
    branch_format="pi-branch",
    complete_label="pi",
)
