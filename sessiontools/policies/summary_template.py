"""A summary template: the sections an agent's compaction prompt asks its summaries for, as data, so
that summary drift (`analysis.drift`) judges summaries against the template of the agent whose
prompt it is (`policies.registry.SUMMARY_TEMPLATES`) instead of naming one.

The sections are given by role (`goal`, `constraints`, `progress`, `done`, `in_progress`, `blocked`,
`decisions`, `next_steps`, `critical`; a split turn's `turn`, `turn_request`, `turn_progress`,
`turn_context`): drift's measures (which items may move between sections, which count as finished
or reopened, which free-form headings map where) are written over the roles; the template says what
each role is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SummaryTemplate:
    """The sections a compaction prompt asks for, and what its summaries look like."""

    agent: str  # the agent whose prompt it is, as people name it ("Pi")
    #: role -> section name (a sub-section as `Parent/Child`), in the prompt's order.
    sections: Mapping[str, str]
    #: The roles a branch summary's prompt asks for.
    branch_roles: tuple[str, ...]
    #: role -> the turn-prefix part's section names of a split turn.
    turn_sections: Mapping[str, str]
    #: Exact headings (case-folded) -> role: top level, under the progress section, in the turn part.
    strict_top: Mapping[str, str]
    strict_progress: Mapping[str, str]
    strict_turn: Mapping[str, str]
    turn_marker: str  # the line that opens a split turn's turn-prefix part
    branch_preamble: str  # the text a branch summary starts with
    #: The names of its summary formats: sectioned, split turn, branch summary; and the `format`
    #: label of a summary with every expected section present.
    structured_format: str
    split_turn_format: str
    branch_format: str
    complete_label: str

    def section(self, role: str) -> str:
        return {**self.sections, **self.turn_sections}[role]
