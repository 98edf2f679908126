"""A summary parsed: sections (Pi's names where the heading maps to one), items, file lists, literals.

Pi's six-section format (Goal; Constraints & Preferences; Progress with Done / In Progress /
Blocked; Key Decisions; Next Steps; Critical Context), the turn-prefix format of 0.x (Original
Request / Early Progress / Context for Suffix) and 1.x (Original Request / Progress So Far /
Context Needed to Continue), the `<read-files>` / `<modified-files>` lists, and a fallback for
free-form markdown: headings are mapped to the nearest Pi section by keyword ("Key Decisions
Made" -> `Key Decisions`, "Completed Work" -> `Progress/Done`), others keep their own name, and a
lone top heading is taken as a title. Placeholders such as "(none)" are not items.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sessiontools.analysis.drift.literals import extract_literals, scan_literals
from sessiontools.analysis.drift.markdown import HEADING, Block, blocks
from sessiontools.analysis.drift.sections import (
    FILES,
    REFERENCE,
    TEMPLATE,
    UNTITLED,
    TemplateView,
    template_view,
)
from sessiontools.analysis.drift.text import PLACEHOLDER, normalise, tokens

#: The template's own formats (`policies.summary_template.SummaryTemplate`: Pi's "pi-structured", ...).
STRUCTURED = TEMPLATE.structured_format
SPLIT_TURN = TEMPLATE.split_turn_format
BRANCH = TEMPLATE.branch_format
HOOK = "hook"
FREE_FORM = "free-form"
#: Summary formats, decided by `summary_format` (docs/diff-summaries.md, "Summary formats").
SUMMARY_FORMATS = (STRUCTURED, SPLIT_TURN, BRANCH, HOOK, FREE_FORM)


@dataclass(frozen=True, slots=True, eq=False)
class Item:
    """One item of a summary section: a list item, table row, paragraph or code block."""

    section: str
    text: str  # as written, list marker and checkbox removed
    key: str  # normalised text (exact matching)
    tokens: Counter[str]
    n_tokens: int
    compat: Counter[str]  # every literal occurrence of the item, numbers of any length (fuzzy matching)
    order: int  # position among the summary's items
    checked: bool | None = None  # `- [x]` True, `- [ ]` False, else None


@dataclass(frozen=True, slots=True, eq=False)
class ParsedSummary:
    """A summary split into sections (keyed by path such as `Progress/Done`), items and literals."""

    text: str
    kind: str  # "compaction" | "branch_summary"
    title: str | None
    sections: dict[str, tuple[Item, ...]]  # every section found (in order), empty ones included
    strict_sections: frozenset[str]  # sections whose heading is exactly Pi's
    split_turn: bool
    turn_prefix_format: str | None  # "0.x" | "1.x" | "other" | None (no split turn)
    read_files: tuple[str, ...] | None  # None: no <read-files> block
    modified_files: tuple[str, ...] | None
    literals: dict[str, str]  # value -> kind
    summary_format: str = STRUCTURED  # see SUMMARY_FORMATS
    no_history: bool = False  # a split turn whose history part is Pi's own "No prior history."
    #: The template it was read against (its agent's own, `sections.template_view`).
    view: TemplateView = field(default=REFERENCE, repr=False)

    @property
    def items(self) -> list[Item]:
        return [it for items in self.sections.values() for it in items]

    @property
    def expected_sections(self) -> tuple[str, ...]:
        v = self.view
        base = v.branch_sections if self.kind == "branch_summary" else v.sections
        if self.split_turn:
            return v.turn_sections if self.no_history else base + v.turn_sections
        return base

    @property
    def sections_absent(self) -> list[str]:
        """Pi's sections that have no heading of exactly Pi's name, whatever the format."""
        return [s for s in self.expected_sections if s not in self.strict_sections]

    @property
    def promises_sections(self) -> bool:
        t = self.view.template
        return self.summary_format in (t.structured_format, t.split_turn_format, t.branch_format)

    @property
    def sections_missing(self) -> list[str]:
        """Pi's sections absent from a summary whose format promises them (else none are missing)."""
        return self.sections_absent if self.promises_sections else []

    @property
    def compliance(self) -> float:
        exp = self.expected_sections
        return (len(exp) - len(self.sections_absent)) / len(exp)

    @property
    def format(self) -> str:
        """`pi` (every expected section under Pi's heading), `partial`, or `free-form` (none)."""
        missing = len(self.sections_absent)
        if missing == 0:
            return self.view.template.complete_label  # the format label (every section of the prompt present)
        return "free-form" if missing == len(self.expected_sections) else "partial"

    def section_text(self, section: str) -> str:
        return "\n".join(it.text for it in self.sections.get(section, ()))




def summary_format(*, agent: str | None, writer: str, kind: str, split_turn: bool, template_headings: int,
                   view: TemplateView = REFERENCE) -> str:
    """Which format a summary is written in.

    `hook`: an extension or hook wrote it (Pi's `fromHook`), with its own prompt. `free-form`: any
    other agent's summary (an agent whose prompt asks for other structures,
    `policies.registry.SECTIONED_SUMMARIES`; None: not known, the headings decide), a remote
    (provider) summary, or a Pi summary without a single one of Pi's section headings (the writer
    did not follow Pi's prompt: a harness, or a model that ignored it). Otherwise Pi's prompt
    promised its sections: `pi-branch` (branch summary), `pi-split-turn` (a compaction with the
    `**Turn Context (split turn):**` part), `pi-structured`.
    """
    if writer == "hook":
        return HOOK
    from sessiontools.policies.registry import promises_sections

    if not promises_sections(agent) or writer != "agent" or template_headings == 0:
        return FREE_FORM
    t = view.template  # the formats are named by the template (Pi's: "pi-structured", ...)
    if kind == "branch_summary":
        return t.branch_format
    return t.split_turn_format if split_turn else t.structured_format


#: What Pi itself writes as the history part of a split turn when there was no history to summarise.
NO_HISTORY = frozenset({"No prior history.", "No prior history"})

_FILE_BLOCK = {
    "read": re.compile(r"<read-files>\n?(.*?)\n?</read-files>", re.S),
    "modified": re.compile(r"<modified-files>\n?(.*?)\n?</modified-files>", re.S),
}
FILE_TAG = re.compile(r"</?(?:read|modified)-files>")


def _clean_heading(h: str) -> str:
    h = h.replace("**", "").replace("__", "").replace("`", "").strip()
    h = re.sub(r"\s*\([^)]*\)", "", h).strip()
    return h.rstrip(":").strip()


def _map_heading(h: str, keywords: Iterable[tuple[re.Pattern[str], str]]) -> str | None:
    low = _clean_heading(h).casefold()
    for pat, section in keywords:
        if pat.search(low):
            return section
    return None


def _own_name(h: str, prefix: str = "") -> str:
    name = _clean_heading(h).replace("/", "-") or UNTITLED
    return f"{prefix}{name}"



def _relevel(events: list[Block], title: Block | None, strict_names: dict[str, str]) -> tuple[list[Block], int]:
    """The blocks and the level of the section headings.

    When the part uses Pi's own section names, their level is the section level and any other
    heading above it (a pasted `# Building project`, a shell comment) is text of the current
    section: it can neither demote `## Goal` to a sub-heading nor split Pi's sections. Otherwise
    the highest heading level (the title aside) is the section level.
    """
    heads = [e for e in events if e.kind == "heading" and e is not title]
    strict = [e.level for e in heads if _clean_heading(e.text).casefold() in strict_names]
    if not strict:
        return events, min([e.level for e in heads] or [1])
    top = min(strict)
    out = [Block("item", e.text) if e.kind == "heading" and e is not title and e.level < top
           and _clean_heading(e.text).casefold() not in strict_names else e for e in events]
    return out, top


def _parse_part(text: str, *, turn: bool, order_start: int,
                view: TemplateView = REFERENCE) -> tuple[str | None, dict[str, list[Item]], set[str], int]:
    """Sections, strictly-named sections and the next item order of one part (history or turn prefix),
    read against the template `view`."""
    STRICT_TOP, STRICT_TURN, STRICT_PROGRESS = view.strict_top, view.strict_turn, view.strict_progress  # noqa: N806
    KEYWORDS, TURN_KEYWORDS, PROGRESS, TURN = view.keywords, view.turn_keywords, view.progress, view.turn  # noqa: N806
    events = blocks(text)
    headings = [e for e in events if e.kind == "heading"]
    title: str | None = None
    if len(headings) >= 2:
        top = min(e.level for e in headings)
        at_top = [e for e in headings if e.level == top]
        name = _clean_heading(headings[0].text).casefold()
        template_heading = name in STRICT_TOP or name in STRICT_TURN
        if len(at_top) == 1 and at_top[0] is headings[0] and events[0] is headings[0] and not template_heading:
            title = headings[0].text
    sections: dict[str, list[Item]] = {}
    strict: set[str] = set()
    events, top_level = _relevel(events, headings[0] if title is not None else None,
                                 STRICT_TURN if turn else STRICT_TOP)
    default = TURN if turn else UNTITLED
    current: str | None = None
    parent: str | None = None  # the section of the current top heading
    parent_strict = False
    order = order_start
    for e in events:
        if e.kind == "heading":
            if title is not None and e is headings[0]:
                continue
            name = _clean_heading(e.text).casefold()
            if e.level <= top_level:
                if turn:
                    key = STRICT_TURN.get(name)
                    is_strict = key is not None
                    key = key or _map_heading(e.text, TURN_KEYWORDS) or _own_name(e.text, TURN + "/")
                else:
                    key = STRICT_TOP.get(name)
                    is_strict = key is not None
                    key = key or _map_heading(e.text, KEYWORDS) or _own_name(e.text)
                parent, parent_strict, current = key, is_strict, key
                if is_strict:
                    strict.add(key)
            else:  # a sub-heading: Pi's Progress subsections, or a mapped name, or rolled up into the parent
                key = None
                is_strict = False
                if not turn and parent == PROGRESS and name in STRICT_PROGRESS:
                    key, is_strict = STRICT_PROGRESS[name], parent_strict
                elif turn:
                    key = STRICT_TURN.get(name) or _map_heading(e.text, TURN_KEYWORDS)
                else:
                    key = STRICT_PROGRESS.get(name) if parent == PROGRESS else None
                    key = key or _map_heading(e.text, KEYWORDS)
                if key is None or key == FILES and parent != FILES:
                    key = parent or (_own_name(e.text, TURN + "/") if turn else _own_name(e.text))
                current = key
                if is_strict:
                    strict.add(key)
            sections.setdefault(current, [])
            continue
        key_text = normalise(e.text)
        if not key_text or PLACEHOLDER.match(key_text):
            continue
        if re.fullmatch(r"\*\*[^*]+:\*\*|\*\*[^*]+\*\*:", e.text.strip()):  # a bold label such as **New files:**
            continue
        sec = current or default
        toks = tokens(key_text)
        compat = Counter(v for v, _ in scan_literals(e.text, min_digits=1))
        sections.setdefault(sec, []).append(
            Item(sec, e.text.strip(), key_text, toks, sum(toks.values()), compat, order, e.checked)
        )
        order += 1
    return title, sections, strict, order


def parse_summary(text: str, kind: str = "compaction", *, writer: str = "agent", agent: str | None = None) -> ParsedSummary:
    """Split a summary into sections, items, file lists and literals (see the module docstring);
    `writer` and `agent` decide its format (`summary_format`); it is read against `agent`'s own template
    (`sections.template_view`)."""
    view = template_view(agent)
    text = text.replace("\r\n", "\n")
    body = text
    preamble = view.template.branch_preamble
    if kind == "branch_summary" and body.startswith(preamble):
        body = body[len(preamble):]
    files: dict[str, tuple[str, ...] | None] = {}
    for name, pat in _FILE_BLOCK.items():
        blocks = pat.findall(body)
        files[name] = tuple(ln.strip() for ln in blocks[-1].split("\n") if ln.strip()) if blocks else None
        body = pat.sub("", body)
    parts = view.turn_split.split(body)
    history, turns = parts[0], parts[1:]
    title, sections, strict, order = _parse_part(history, turn=False, order_start=0, view=view)
    no_history = bool(turns) and history.strip() in NO_HISTORY
    fmt: str | None = None
    if turns:
        turn_strict_names: set[str] = set()
        for part in turns:
            _, tsec, tstrict, order = _parse_part(part, turn=True, order_start=order, view=view)
            for k, v in tsec.items():
                sections.setdefault(k, []).extend(v)
            strict |= tstrict
            turn_strict_names |= {_clean_heading(m.group(2)).casefold() for m in map(HEADING.match, part.split("\n")) if m}
        if {"early progress", "context for suffix"} <= turn_strict_names:
            fmt = "0.x"
        elif {"progress so far", "context needed to continue"} <= turn_strict_names:
            fmt = "1.x"
        else:
            fmt = "other"
    fmt_name = summary_format(agent=agent, writer=writer, kind=kind, split_turn=bool(turns), template_headings=len(strict),
                              view=view)
    return ParsedSummary(
        text=text,
        kind=kind,
        title=title,
        sections={k: tuple(v) for k, v in sections.items()},
        strict_sections=frozenset(strict),
        split_turn=bool(turns),
        turn_prefix_format=fmt,
        read_files=files["read"],
        modified_files=files["modified"],
        literals=extract_literals(FILE_TAG.sub(" ", text)),
        summary_format=fmt_name,
        no_history=no_history,
        view=view,
    )

