"""Summary drift: what survives, what is lost and what comes back across repeated compactions.

Pi's UPDATE prompt asks the summariser to "PRESERVE all existing information" of the previous
summary; this module measures how well that holds on one path (ARCHITECTURE.md section 2, Drift).

The pipeline, all pure (strings and entries in, dataclasses and JSON-ready dicts out):

1. **Chain** (`summary_chain`): the summaries on a path in path order: compaction entries (with the
   split-turn part Pi appends after `---` / `**Turn Context (split turn):**`) and branch summaries.
2. **Parse** (`parse_summary`): Pi's six-section format (Goal; Constraints & Preferences; Progress
   with Done / In Progress / Blocked; Key Decisions; Next Steps; Critical Context), the turn-prefix
   format of 0.x (Original Request / Early Progress / Context for Suffix) and 1.x (Original Request
   / Progress So Far / Context Needed to Continue), the `<read-files>` / `<modified-files>` lists,
   and a fallback for free-form markdown: headings are mapped to the nearest Pi section by keyword
   ("Key Decisions Made" -> `Key Decisions`, "Completed Work" -> `Progress/Done`), others keep
   their own name, and a lone top heading is taken as a title. Items are list items, table rows,
   paragraphs and code blocks; placeholders such as "(none)" are not items.
3. **Pairs** (`summary_pairs`): each compaction is compared with what it was written from: the
   previous compaction on the path (Pi's `previousSummary`; relation `update`) and every branch
   summary that it summarised (relation `absorbed`). On a path without branch summaries these are
   exactly the consecutive pairs S(k) -> S(k+1). A branch summary is never the `to` side: it is
   written from another branch, not from the summary before it.
4. **Item matching** (`match_items`), per pair: same section and same normalised text = `kept`;
   same section and fuzzy match (Dice coefficient of word tokens >= `FUZZY_THRESHOLD`, literals
   compatible) = `changed`; another section = `moved` (exact anywhere, fuzzy only within Progress /
   Next Steps or out of a Turn Context; never into the new summary's Turn Context); the rest of the
   old summary = `dropped`, of the new one = `added`. Matching is multiset-aware: an item listed
   twice and kept once is one `kept` and one `dropped`.
5. **Literals** (`extract_literals`): file paths, identifiers in backticks, numbers (two or more
   digits, and versions), double-quoted strings and error messages. A literal is kept when the
   same string still occurs in the later summary's text.
6. **Chain measures**: the decay curve of every summary's items and literals across the later
   compactions, resurrections (items dropped and found again later, or finished to-dos reopened),
   section compliance per summary, goal similarity, file-list monotonicity violations (a file in
   the previous `<read-files>` that is in neither list now, or a previous `<modified-files>` entry
   that is gone) and growth in tokens.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import UsageError
from sessiontools.gates import OPS, parse_gates
from sessiontools.jsvalues import utf16_len
from sessiontools.read.pi.entries import Entry, Session
from sessiontools.transcript.pi.tree import SessionTree

# --------------------------------------------------------------------------- section names

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
_PROGRESS_GROUP = frozenset({PROGRESS, DONE, IN_PROGRESS, BLOCKED, NEXT_STEPS})
#: Sections a finished item is "reopened" into.
_REOPEN_SECTIONS = frozenset({IN_PROGRESS, BLOCKED, NEXT_STEPS})

#: Minimum Dice similarity of word tokens for two items to count as the same item, changed.
FUZZY_THRESHOLD = 0.6

TURN_MARKER = "**Turn Context (split turn):**"
BRANCH_PREAMBLE = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"

_STRICT_TOP = {
    "goal": GOAL,
    "constraints & preferences": CONSTRAINTS,
    "progress": PROGRESS,
    "key decisions": DECISIONS,
    "next steps": NEXT_STEPS,
    "critical context": CRITICAL,
}
_STRICT_PROGRESS = {"done": DONE, "in progress": IN_PROGRESS, "blocked": BLOCKED}
_STRICT_TURN = {
    "original request": TURN_REQUEST,
    "early progress": TURN_PROGRESS,  # 0.x
    "context for suffix": TURN_CONTEXT,  # 0.x
    "progress so far": TURN_PROGRESS,  # 1.x
    "context needed to continue": TURN_CONTEXT,  # 1.x
}
_KEYWORDS = tuple(
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
_TURN_KEYWORDS = tuple(
    (re.compile(p), s)
    for p, s in (
        (r"\brequest\b|\btask\b|\basked?\b", TURN_REQUEST),
        (r"\bprogress\b|\bwork\b|\bdone\b|\bcompleted?\b|\bdecisions?\b", TURN_PROGRESS),
        (r"\bcontext\b|\bstate\b|\bsuffix\b|\bcontinue\b|\bneeded\b|\bnext\b", TURN_CONTEXT),
    )
)


# --------------------------------------------------------------------------- text helpers

_WS = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_TOKEN = re.compile(r"[^\W_](?:[\w./@:#+-]*[^\W_])?")
_PLACEHOLDER = re.compile(
    r"^\((?:none|n/?a|nothing[^)]*|no [^)]*|not applicable|empty|unknown[^)]*)\)(?:\s*:.*)?$"
    r"|^(?:none|n/a|no prior history|no content to summarize|no summary generated)$"
)


def _normalise(text: str) -> str:
    """Casefolded text without markdown emphasis, backticks, checkboxes and trailing punctuation."""
    t = unicodedata.normalize("NFKC", text)
    t = t.replace("**", "").replace("__", "").replace("`", "")
    t = re.sub(r"^\s*\[[ xX]\](?:\s+|$)", "", t)
    t = _WS.sub(" ", t).strip().casefold()
    return t.rstrip(" .:;,")


def _tokens(key: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for tok in _TOKEN.findall(key):
        if _CJK.search(tok):  # no spaces in CJK text: compare characters
            for part in re.findall(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+", tok):
                out[part] += 1
        else:
            out[tok] += 1
    return out


def _dice(a: Counter[str], b: Counter[str], na: int, nb: int) -> float:
    if na + nb == 0:
        return 1.0
    return 2 * sum((a & b).values()) / (na + nb)


def text_similarity(a: str, b: str) -> float:
    """Dice coefficient of the word tokens of two texts (0..1; 1 for two empty texts)."""
    ta, tb = _tokens(_normalise(a)), _tokens(_normalise(b))
    return _dice(ta, tb, sum(ta.values()), sum(tb.values()))


# --------------------------------------------------------------------------- literals

_EXT = (
    r"(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|mdx|toml|ya?ml|txt|rs|go|java|kt|c|h|cc|cpp|hpp|cs|sh|"
    r"bash|zsh|css|scss|html?|sql|csv|tsv|lock|cfg|ini|conf|rb|php|swift|vue|svelte|xml|env|log|ipynb|lua|"
    r"dart|scala|exs?|proto|gradle|mk)"
)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]{3,200})"|\u201c([^\u201d\n]{3,200})\u201d')
_ERROR = re.compile(
    r"(?:\b[A-Z][A-Za-z]*(?:Error|Exception)\b"
    r"|\b(?:ENOENT|EACCES|EPERM|EEXIST|EISDIR|ENOTDIR|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EADDRINUSE|EPIPE)\b"
    r"|\b(?:[Ee]rror|ERROR|[Ff]ailed|FAILED)\b(?=:))(?::[ \t]*[^\n]+)?"
)
_PATH = re.compile(
    rf"(?<![\w@.+/~-])(?:(?:~|\.{{1,2}})?/[\w@.+-]+(?:/[\w@.+-]+)*/?|[\w@.+-]+(?:/[\w@.+-]+)+/?"
    rf"|[\w@+-][\w@.+-]*\.{_EXT})(?![\w/])"
)
_NUMBER = re.compile(r"(?<![\w.#/-])(?:v?\d+(?:\.\d+){2,}|#?\d[\d,]*(?:\.\d+)?%?)(?![\w])")


def _looks_like_path(s: str) -> bool:
    m = _PATH.fullmatch(s)
    return bool(m) and _is_path(s)


def _is_path(s: str) -> bool:
    if s.startswith(("/", "~/", "./", "../")):
        return len(s) > 1
    if re.fullmatch(rf"[\w@+-][\w@.+-]*\.{_EXT}", s):
        return True
    if re.fullmatch(r"[\d/.-]+", s):  # 1/2, 2025/01/02
        return False
    parts = s.rstrip("/").split("/")
    return len(parts) >= 3 or "." in parts[-1]


def extract_literals(text: str, *, min_digits: int = 2) -> dict[str, str]:
    """Literals of a text, value -> kind, in order of first occurrence.

    Kinds: `path` (file paths, in backticks or not), `code` (other backtick spans), `quoted`
    (double-quoted strings), `error` (`SomethingError: ...`, `ENOENT ...`, `Error: ...`) and
    `number` (numbers with at least `min_digits` digits, versions like `v0.27.3`, `#288`, `30%`).
    """
    out: dict[str, str] = {}
    for value, kind in _scan_literals(text, min_digits):
        out.setdefault(value, kind)
    return out


def _scan_literals(text: str, min_digits: int) -> list[tuple[str, str]]:
    """Every literal occurrence of a text as (value, kind), in the order of `extract_literals`."""
    out: list[tuple[str, str]] = []

    def add(value: str, kind: str) -> None:
        value = value.strip()
        if len(value) >= 2 or (kind == "number" and value):
            out.append((value, kind))

    def blank(m: re.Match[str]) -> str:
        return " " * (m.end() - m.start())

    for m in _BACKTICK.finditer(text):
        v = m.group(1).strip()
        add(v, "path" if _looks_like_path(v) else "code")
    rest = _BACKTICK.sub(blank, text)
    for m in _QUOTED.finditer(rest):
        add(m.group(1) or m.group(2) or "", "quoted")
    rest = _QUOTED.sub(blank, rest)
    for m in _ERROR.finditer(rest):
        add(m.group(0)[:160].rstrip(" .,;"), "error")
    rest = _ERROR.sub(blank, rest)
    for m in _PATH.finditer(rest):
        v = m.group(0).rstrip(".,:;")
        if _is_path(v):
            add(v, "path")
            rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end():]
    for m in _NUMBER.finditer(rest):
        v = m.group(0).rstrip(",")
        digits = sum(c.isdigit() for c in v)
        if digits >= min_digits or v.count(".") >= 2:
            add(v, "number")
    return out


_CONTAINS_CACHE: dict[str, re.Pattern[str]] = {}


def _contains(text: str, value: str) -> bool:
    """True when `value` occurs in `text` as a whole literal (not as part of a longer word or number)."""
    if value not in text:
        return False
    pat = _CONTAINS_CACHE.get(value)
    if pat is None:
        pat = re.compile(r"(?<![\w.-])" + re.escape(value) + r"(?![\w/-]|\.\w)")
        if len(_CONTAINS_CACHE) < 100_000:
            _CONTAINS_CACHE[value] = pat
    return pat.search(text) is not None


# --------------------------------------------------------------------------- parsing


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

    @property
    def items(self) -> list[Item]:
        return [it for items in self.sections.values() for it in items]

    @property
    def expected_sections(self) -> tuple[str, ...]:
        base = BRANCH_SECTIONS if self.kind == "branch_summary" else PI_SECTIONS
        return base + TURN_SECTIONS if self.split_turn else base

    @property
    def sections_missing(self) -> list[str]:
        return [s for s in self.expected_sections if s not in self.strict_sections]

    @property
    def compliance(self) -> float:
        exp = self.expected_sections
        return (len(exp) - len(self.sections_missing)) / len(exp)

    @property
    def format(self) -> str:
        """`pi` (every expected section under Pi's heading), `partial`, or `free-form` (none)."""
        missing = len(self.sections_missing)
        if missing == 0:
            return "pi"
        return "free-form" if missing == len(self.expected_sections) else "partial"

    def section_text(self, section: str) -> str:
        return "\n".join(it.text for it in self.sections.get(section, ()))


_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,3}[.)])[ \t]+(?:\[([ xX])\](?:[ \t]+|$))?(.*)$")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_FILE_BLOCK = {
    "read": re.compile(r"<read-files>\n?(.*?)\n?</read-files>", re.S),
    "modified": re.compile(r"<modified-files>\n?(.*?)\n?</modified-files>", re.S),
}
_FILE_TAG = re.compile(r"</?(?:read|modified)-files>")
_TURN_SPLIT = re.compile(r"\n*^---[ \t]*\n+" + re.escape(TURN_MARKER) + r"[ \t]*\n*", re.M)


@dataclass(slots=True)
class _Event:
    kind: str  # "heading" | "item"
    text: str
    level: int = 0
    checked: bool | None = None


def _events(text: str) -> list[_Event]:
    """Markdown blocks as headings and items (list items, table rows, paragraphs, code blocks)."""
    out: list[_Event] = []
    lines = text.split("\n")
    i = 0
    para: list[str] | None = None  # lines of the open paragraph or list item
    bullet: _Event | None = None
    table_open = False

    def close() -> None:
        nonlocal para, bullet
        if para is not None:
            joined = " ".join(s.strip() for s in para if s.strip())
            if bullet is not None:
                bullet.text = joined
                out.append(bullet)
            elif joined:
                out.append(_Event("item", joined))
        para, bullet = None, None

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            close()
            marker = fence.group(1)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(marker[0] * len(marker)):
                body.append(lines[i])
                i += 1
            i += 1
            code = "\n".join(body).strip("\n")
            if code.strip():
                out.append(_Event("item", code))
            table_open = False
            continue
        if not line.strip():
            close()
            table_open = False
            i += 1
            continue
        h = _HEADING.match(line)
        if h:
            close()
            table_open = False
            out.append(_Event("heading", h.group(2).strip(), level=len(h.group(1))))
            i += 1
            continue
        if _RULE.match(line):
            close()
            table_open = False
            i += 1
            continue
        if _TABLE_ROW.match(line):
            close()
            if _TABLE_SEP.match(line):
                i += 1
                continue
            is_header = not table_open and i + 1 < len(lines) and bool(_TABLE_SEP.match(lines[i + 1]))
            table_open = True
            if not is_header:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                row = " | ".join(c for c in cells if c)
                if row:
                    out.append(_Event("item", row))
            i += 1
            continue
        table_open = False
        b = _BULLET.match(line)
        if b:
            close()
            chk = b.group(2)
            bullet = _Event("item", "", checked=None if chk is None else chk in "xX")
            para = [b.group(3)]
            i += 1
            continue
        if para is not None:  # continuation of a paragraph or list item (also lazy continuation)
            para.append(line)
        else:
            para = [line]
        i += 1
    close()
    return out


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


def _parse_part(text: str, *, turn: bool, order_start: int) -> tuple[str | None, dict[str, list[Item]], set[str], int]:
    """Sections, strictly-named sections and the next item order of one part (history or turn prefix)."""
    events = _events(text)
    headings = [e for e in events if e.kind == "heading"]
    title: str | None = None
    if len(headings) >= 2:
        top = min(e.level for e in headings)
        at_top = [e for e in headings if e.level == top]
        name = _clean_heading(headings[0].text).casefold()
        pi_name = name in _STRICT_TOP or name in _STRICT_TURN
        if len(at_top) == 1 and at_top[0] is headings[0] and events[0] is headings[0] and not pi_name:
            title = headings[0].text
    sections: dict[str, list[Item]] = {}
    strict: set[str] = set()
    rest = [e for e in headings if not (title is not None and e is headings[0])]
    top_level = min((e.level for e in rest), default=1)
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
                    key = _STRICT_TURN.get(name)
                    is_strict = key is not None
                    key = key or _map_heading(e.text, _TURN_KEYWORDS) or _own_name(e.text, TURN + "/")
                else:
                    key = _STRICT_TOP.get(name)
                    is_strict = key is not None
                    key = key or _map_heading(e.text, _KEYWORDS) or _own_name(e.text)
                parent, parent_strict, current = key, is_strict, key
                if is_strict:
                    strict.add(key)
            else:  # a sub-heading: Pi's Progress subsections, or a mapped name, or rolled up into the parent
                key = None
                is_strict = False
                if not turn and parent == PROGRESS and name in _STRICT_PROGRESS:
                    key, is_strict = _STRICT_PROGRESS[name], parent_strict
                elif turn:
                    key = _STRICT_TURN.get(name) or _map_heading(e.text, _TURN_KEYWORDS)
                else:
                    key = _STRICT_PROGRESS.get(name) if parent == PROGRESS else None
                    key = key or _map_heading(e.text, _KEYWORDS)
                if key is None or key == FILES and parent != FILES:
                    key = parent or (_own_name(e.text, TURN + "/") if turn else _own_name(e.text))
                current = key
                if is_strict:
                    strict.add(key)
            sections.setdefault(current, [])
            continue
        key_text = _normalise(e.text)
        if not key_text or _PLACEHOLDER.match(key_text):
            continue
        if re.fullmatch(r"\*\*[^*]+:\*\*|\*\*[^*]+\*\*:", e.text.strip()):  # a bold label such as **New files:**
            continue
        sec = current or default
        toks = _tokens(key_text)
        compat = Counter(v for v, _ in _scan_literals(e.text, min_digits=1))
        sections.setdefault(sec, []).append(
            Item(sec, e.text.strip(), key_text, toks, sum(toks.values()), compat, order, e.checked)
        )
        order += 1
    return title, sections, strict, order


def parse_summary(text: str, kind: str = "compaction") -> ParsedSummary:
    """Split a summary into sections, items, file lists and literals (see the module docstring)."""
    text = text.replace("\r\n", "\n")
    body = text
    if kind == "branch_summary" and body.startswith(BRANCH_PREAMBLE):
        body = body[len(BRANCH_PREAMBLE):]
    files: dict[str, tuple[str, ...] | None] = {}
    for name, pat in _FILE_BLOCK.items():
        blocks = pat.findall(body)
        files[name] = tuple(ln.strip() for ln in blocks[-1].split("\n") if ln.strip()) if blocks else None
        body = pat.sub("", body)
    parts = _TURN_SPLIT.split(body)
    history, turns = parts[0], parts[1:]
    title, sections, strict, order = _parse_part(history, turn=False, order_start=0)
    fmt: str | None = None
    if turns:
        turn_strict_names: set[str] = set()
        for part in turns:
            _, tsec, tstrict, order = _parse_part(part, turn=True, order_start=order)
            for k, v in tsec.items():
                sections.setdefault(k, []).extend(v)
            strict |= tstrict
            turn_strict_names |= {_clean_heading(m.group(2)).casefold() for m in map(_HEADING.match, part.split("\n")) if m}
        if {"early progress", "context for suffix"} <= turn_strict_names:
            fmt = "0.x"
        elif {"progress so far", "context needed to continue"} <= turn_strict_names:
            fmt = "1.x"
        else:
            fmt = "other"
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
        literals=extract_literals(_FILE_TAG.sub(" ", text)),
    )


# --------------------------------------------------------------------------- item matching


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One item's fate between two summaries."""

    kind: str  # "kept" | "changed" | "moved" | "dropped" | "added"
    old: Item | None
    new: Item | None
    similarity: float

    @property
    def section(self) -> str:
        return (self.old or self.new).section  # type: ignore[union-attr]


def _compatible(a: Item, b: Item) -> bool:
    """Two items can be one item reworded only if the literals of one (counted with multiplicity) all
    occur in the other: `Task 11 ... 20 lines` and `Task 20 ... 20 lines` conflict, so they are two items."""
    return not (a.compat - b.compat) or not (b.compat - a.compat)


def _may_move(src: str, dst: str, *, exact: bool) -> bool:
    if dst.startswith(TURN + "/") and not src.startswith(TURN + "/"):
        return False  # the new turn prefix describes a new split turn, not the old summary
    if exact:
        return True
    return (src in _PROGRESS_GROUP and dst in _PROGRESS_GROUP) or src.startswith(TURN + "/")


def _greedy(cands: list[tuple[float, int, int]], a_free: set[int], b_free: set[int]) -> list[tuple[float, int, int]]:
    out = []
    for sim, i, j in sorted(cands, key=lambda c: (-c[0], c[1], c[2])):
        if i in a_free and j in b_free:
            a_free.discard(i)
            b_free.discard(j)
            out.append((sim, i, j))
    return out


def match_items(old: Sequence[Item], new: Sequence[Item], threshold: float = FUZZY_THRESHOLD) -> list[ItemChange]:
    """Every old item kept, changed, moved or dropped, and every new item not matched as added.

    Order: same section and same text first (in order, multiset-aware), then the best fuzzy
    matches within a section, then exact and fuzzy moves across sections (see `_may_move`).
    """
    a_free, b_free = set(range(len(old))), set(range(len(new)))
    out: list[tuple[int, int, ItemChange]] = []  # (old order or big, new order, change) for sorting
    queues: dict[tuple[str, str], deque[int]] = {}
    for j, y in enumerate(new):
        queues.setdefault((y.section, y.key), deque()).append(j)
    for i, x in enumerate(old):
        q = queues.get((x.section, x.key))
        if q:
            j = q.popleft()
            a_free.discard(i)
            b_free.discard(j)
            out.append((i, j, ItemChange("kept", x, new[j], 1.0)))

    def fuzzy(same_section: bool) -> list[tuple[float, int, int]]:
        cands = []
        for i in sorted(a_free):
            x = old[i]
            for j in sorted(b_free):
                y = new[j]
                if same_section != (x.section == y.section):
                    continue
                if not same_section and not _may_move(x.section, y.section, exact=False):
                    continue
                if not _compatible(x, y):
                    continue
                if 2 * min(x.n_tokens, y.n_tokens) / max(1, x.n_tokens + y.n_tokens) < threshold:
                    continue  # the Dice coefficient cannot reach the threshold
                sim = _dice(x.tokens, y.tokens, x.n_tokens, y.n_tokens)
                if sim >= threshold:
                    cands.append((sim, i, j))
        return _greedy(cands, a_free, b_free)

    for sim, i, j in fuzzy(True):
        out.append((i, j, ItemChange("changed", old[i], new[j], round(sim, 4))))
    for i in sorted(a_free):
        x = old[i]
        for j in sorted(b_free):
            if new[j].key == x.key and new[j].section != x.section and _may_move(x.section, new[j].section, exact=True):
                a_free.discard(i)
                b_free.discard(j)
                out.append((i, j, ItemChange("moved", x, new[j], 1.0)))
                break
    for sim, i, j in fuzzy(False):
        out.append((i, j, ItemChange("moved", old[i], new[j], round(sim, 4))))
    for i in sorted(a_free):
        out.append((i, -1, ItemChange("dropped", old[i], None, 0.0)))
    for j in sorted(b_free):
        out.append((len(old) + j, j, ItemChange("added", None, new[j], 0.0)))
    out.sort(key=lambda t: (t[0], t[1]))
    return [c for _, _, c in out]


def find_item(item: Item, summary: ParsedSummary, threshold: float = FUZZY_THRESHOLD) -> Item | None:
    """The item of `summary` that is `item` (same text anywhere, else the best compatible fuzzy match)."""
    best: tuple[float, int] | None = None
    found: Item | None = None
    for y in summary.items:
        if y.key == item.key:
            return y
    for y in summary.items:
        if not _compatible(item, y):
            continue
        sim = _dice(item.tokens, y.tokens, item.n_tokens, y.n_tokens)
        if sim >= threshold and (best is None or (sim, -y.order) > best):
            best, found = (sim, -y.order), y
    return found


# --------------------------------------------------------------------------- token counting


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """How summary lengths are counted: a name for the output and the counting function."""

    name: str
    count: Callable[[str], int]
    fallback_reason: str | None = None


def chars4_tokens(text: str) -> int:
    """Pi's estimate for a text: ceil(UTF-16 length / 4)."""
    return math.ceil(utf16_len(text) / 4)


TOKENIZERS = ("o200k", "cl100k", "chars4")


def token_counter(name: str = "o200k") -> TokenCounter:
    """A counter by name (`o200k`, `cl100k` via `tokens.vocab`, or `chars4`); falls back to chars4."""
    if name == "chars4":
        return TokenCounter("chars4", chars4_tokens)
    encodings = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
    if name not in encodings:
        raise UsageError(f"unknown tokenizer {name!r} (choose from {', '.join(TOKENIZERS)})")
    enc_name = encodings[name]
    try:
        from sessiontools.tokens.vocab import get_encoding

        enc = get_encoding(enc_name)
        encode = getattr(enc, "encode_ordinary", None) or (lambda t: enc.encode(t, disallowed_special=()))
        encode("probe")
    except Exception as exc:  # the offline vocabulary is optional: say so and count chars/4
        return TokenCounter("chars4", chars4_tokens, f"{enc_name} is not available ({type(exc).__name__}: {exc})")
    return TokenCounter(enc_name, lambda t: len(encode(t)))


# --------------------------------------------------------------------------- chain and pairs


@dataclass(frozen=True, slots=True, eq=False)
class ChainSummary:
    """One summary on a path, parsed."""

    position: int  # 1-based place in the chain: S(position)
    entry: Entry
    index: int  # path index of the entry
    kind: str  # "compaction" | "branch_summary"
    previous_summary_id: str | None  # for a compaction: the previous compaction on the path (Pi's previousSummary)
    first_kept_index: int | None  # for a compaction: path index of firstKeptEntryId (None when not on the path)
    parsed: ParsedSummary
    tokens: int

    @property
    def entry_id(self) -> str | None:
        return self.entry.id

    @property
    def label(self) -> str:
        return f"S{self.position}"


def summary_chain(path: Sequence[Entry], counter: TokenCounter | None = None) -> list[ChainSummary]:
    """The compaction and branch summaries on a path, in path order, parsed and counted."""
    counter = counter or TokenCounter("chars4", chars4_tokens)
    out: list[ChainSummary] = []
    position_of = {id(e): i for i, e in enumerate(path)}
    by_id = {e.id: i for i, e in enumerate(path) if e.id is not None}
    prev_compaction: str | None = None
    for e in path:
        if e.type not in ("compaction", "branch_summary"):
            continue
        raw = e.data.get("summary")
        text = raw if isinstance(raw, str) else ""
        fk: int | None = None
        prev = None
        if e.type == "compaction":
            target = e.data.get("firstKeptEntryId")
            fk = by_id.get(target) if isinstance(target, str) else None
            prev = prev_compaction
        parsed = parse_summary(text, e.type)
        out.append(ChainSummary(len(out) + 1, e, position_of[id(e)], e.type, prev, fk, parsed, counter.count(text)))
        if e.type == "compaction":
            prev_compaction = e.id
    return out


@dataclass(frozen=True, slots=True, eq=False)
class SummaryPair:
    """Two summaries compared: `old` is what `new` was written from."""

    old: ChainSummary
    new: ChainSummary
    relation: str  # "update" (old was Pi's previousSummary) | "absorbed" (old, a branch summary, was summarised)


def summary_pairs(chain: Sequence[ChainSummary]) -> list[SummaryPair]:
    """Each compaction with its previous compaction and with every branch summary it summarised.

    A branch summary B is summarised by compaction C when B lies in C's summarised span, which
    starts where the previous compaction kept from (its firstKeptEntryId; else the entry after it;
    else the start of the path) and ends before C's firstKeptEntryId (else before C).
    """
    pairs: list[SummaryPair] = []
    prev: ChainSummary | None = None
    for s in chain:
        if s.kind != "compaction":
            continue
        start = 0
        if prev is not None:
            start = prev.first_kept_index if prev.first_kept_index is not None else prev.index + 1
        end = s.first_kept_index if s.first_kept_index is not None and s.first_kept_index <= s.index else s.index
        found: list[SummaryPair] = []
        if prev is not None:
            found.append(SummaryPair(prev, s, "update"))
        for b in chain:
            if b.kind == "branch_summary" and start <= b.index < end:
                found.append(SummaryPair(b, s, "absorbed"))
        found.sort(key=lambda p: p.old.position)
        pairs.extend(found)
        prev = s
    return pairs


# --------------------------------------------------------------------------- measures


@dataclass(frozen=True, slots=True, eq=False)
class PairDrift:
    """Drift between the two summaries of a pair."""

    pair: SummaryPair
    changes: tuple[ItemChange, ...]
    literals_kept: tuple[tuple[str, str], ...]  # (value, kind)
    literals_dropped: tuple[tuple[str, str], ...]
    literals_added: tuple[tuple[str, str], ...]
    goal_similarity: float | None
    file_list_violations: tuple[dict[str, str], ...]

    @property
    def growth_tokens(self) -> int:
        return self.pair.new.tokens - self.pair.old.tokens

    def count(self, kind: str) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    def by_section(self) -> dict[str, dict[str, int]]:
        """Counts per section; moved items count in the section they left."""
        order: list[str] = list(self.pair.old.parsed.sections) + [
            s for s in self.pair.new.parsed.sections if s not in self.pair.old.parsed.sections
        ]
        out = {s: dict.fromkeys(("kept", "dropped", "added", "changed", "moved"), 0) for s in order}
        for c in self.changes:
            out.setdefault(c.section, dict.fromkeys(("kept", "dropped", "added", "changed", "moved"), 0))
            out[c.section][c.kind] += 1
        return out

    @property
    def literal_retention(self) -> float | None:
        n = len(self.literals_kept) + len(self.literals_dropped)
        return round(len(self.literals_kept) / n, 4) if n else None


def _file_list_violations(old: ParsedSummary, new: ParsedSummary) -> list[dict[str, str]]:
    """Files Pi carries forward (it merges the previous compaction's lists) that the new lists lack."""
    out: list[dict[str, str]] = []
    new_read = set(new.read_files or ())
    new_mod = set(new.modified_files or ())
    for f in old.read_files or ():
        if f not in new_read and f not in new_mod:
            out.append({"list": "read-files", "file": f, "now_in": "neither"})
    for f in old.modified_files or ():
        if f not in new_mod:
            out.append({"list": "modified-files", "file": f, "now_in": "read-files" if f in new_read else "neither"})
    return out


def pair_drift(pair: SummaryPair, threshold: float = FUZZY_THRESHOLD) -> PairDrift:
    """Item changes, literal retention, goal similarity and file-list violations of one pair."""
    a, b = pair.old.parsed, pair.new.parsed
    changes = match_items(a.items, b.items, threshold)
    kept, dropped = [], []
    for v, k in a.literals.items():
        (kept if v in b.literals or _contains(b.text, v) else dropped).append((v, k))
    added = [(v, k) for v, k in b.literals.items() if v not in a.literals and not _contains(a.text, v)]
    goal = None
    if a.sections.get(GOAL) and b.sections.get(GOAL):
        goal = round(text_similarity(a.section_text(GOAL), b.section_text(GOAL)), 4)
    violations = _file_list_violations(a, b) if pair.relation == "update" else []
    return PairDrift(pair, tuple(changes), tuple(kept), tuple(dropped), tuple(added), goal, tuple(violations))


@dataclass(frozen=True, slots=True)
class DecayPoint:
    summary: ChainSummary
    items_retained: float | None
    literals_retained: float | None


@dataclass(frozen=True, slots=True, eq=False)
class Decay:
    """Share of one summary's items and literals still present in each later compaction."""

    origin: ChainSummary
    points: tuple[DecayPoint, ...]


def _retained(origin: ParsedSummary, later: ParsedSummary, threshold: float) -> tuple[float | None, float | None]:
    items = origin.items
    item_share = None
    if items:
        present = sum(1 for c in match_items(items, later.items, threshold) if c.kind in ("kept", "changed", "moved"))
        item_share = round(present / len(items), 4)
    lit_share = None
    if origin.literals:
        present = sum(1 for v in origin.literals if v in later.literals or _contains(later.text, v))
        lit_share = round(present / len(origin.literals), 4)
    return item_share, lit_share


def decay_curves(chain: Sequence[ChainSummary], threshold: float = FUZZY_THRESHOLD) -> list[Decay]:
    """For every summary S(k), its retention in every later compaction S(j), j > k."""
    out = []
    for k, origin in enumerate(chain):
        points = []
        for later in chain[k + 1:]:
            if later.kind != "compaction":
                continue
            i, lit = _retained(origin.parsed, later.parsed, threshold)
            points.append(DecayPoint(later, i, lit))
        out.append(Decay(origin, tuple(points)))
    return out


@dataclass(frozen=True, slots=True)
class Resurrection:
    """An item that was dropped and came back later, or a finished item that was reopened."""

    item: Item
    kind: str  # "returned" | "reopened"
    last_seen: ChainSummary  # the summary that had it before it was dropped (or moved)
    dropped_in: ChainSummary | None  # None: moved straight from Done to an open section
    back_in: ChainSummary
    back_item: Item


def resurrections(chain: Sequence[ChainSummary], drifts: Sequence[PairDrift], threshold: float = FUZZY_THRESHOLD) -> list[Resurrection]:
    """Items dropped in a pair and found again in a later compaction; Done items reopened."""
    out: list[Resurrection] = []
    for d in drifts:
        later = [s for s in chain if s.kind == "compaction" and s.position > d.pair.new.position]
        for c in d.changes:
            if c.kind == "moved" and c.old is not None and c.new is not None:
                if c.old.section == DONE and c.new.section in _REOPEN_SECTIONS:
                    out.append(Resurrection(c.old, "reopened", d.pair.old, None, d.pair.new, c.new))
                continue
            if c.kind != "dropped" or c.old is None:
                continue
            if find_item(c.old, d.pair.new.parsed, threshold) is not None:
                continue  # a copy or close variant is still there (e.g. one of two duplicates was dropped)
            for s in later:
                hit = find_item(c.old, s.parsed, threshold)
                if hit is not None:
                    kind = "reopened" if c.old.section == DONE and hit.section in _REOPEN_SECTIONS else "returned"
                    out.append(Resurrection(c.old, kind, d.pair.old, d.pair.new, s, hit))
                    break
    return out


# --------------------------------------------------------------------------- report


@dataclass(frozen=True, slots=True, eq=False)
class ChainDrift:
    """Drift along the summaries of one path."""

    session: str
    leaf_id: str | None
    chain: tuple[ChainSummary, ...]
    pairs: tuple[PairDrift, ...]
    decay: tuple[Decay, ...]
    resurrections: tuple[Resurrection, ...]

    def metrics(self) -> dict[str, Any]:
        return _metrics([self])


def analyse_path(
    path: Sequence[Entry],
    *,
    session: str = "",
    leaf_id: str | None = None,
    counter: TokenCounter | None = None,
    threshold: float = FUZZY_THRESHOLD,
) -> ChainDrift:
    """Everything `diff-summaries` reports for one path."""
    chain = summary_chain(path, counter)
    drifts = [pair_drift(p, threshold) for p in summary_pairs(chain)]
    return ChainDrift(
        session=session,
        leaf_id=leaf_id,
        chain=tuple(chain),
        pairs=tuple(drifts),
        decay=tuple(decay_curves(chain, threshold)),
        resurrections=tuple(resurrections(chain, drifts, threshold)),
    )


#: Metrics a `--fail-if` gate can test, with what they mean (also shown in --help and docs).
METRICS: dict[str, str] = {
    "summaries": "number of summaries on the analysed paths",
    "pairs": "number of compared pairs",
    "dropped_items": "items dropped, summed over pairs",
    "added_items": "items added, summed over pairs",
    "changed_items": "items changed (fuzzy match), summed over pairs",
    "moved_items": "items moved to another section, summed over pairs",
    "dropped_literals": "literals (paths, identifiers, numbers, quoted errors) dropped, summed over pairs",
    "missing_sections": "Pi sections missing, summed over summaries",
    "resurrections": "items dropped and back later, or finished and reopened",
    "file_list_violations": "files missing from <read-files>/<modified-files> after an update, summed",
    "growth_tokens": "largest growth of a summary over the one it was written from, in tokens (0 without pairs)",
    "min_goal_similarity": "lowest goal similarity over pairs (0..1; 1 without goals to compare)",
    "min_literal_retention": "lowest share of literals kept over pairs (0..1; 1 without literals)",
}


def _metrics(chains: Sequence[ChainDrift]) -> dict[str, Any]:
    drifts = [d for c in chains for d in c.pairs]
    goals = [d.goal_similarity for d in drifts if d.goal_similarity is not None]
    rets = [r for r in (d.literal_retention for d in drifts) if r is not None]
    return {
        "summaries": sum(len(c.chain) for c in chains),
        "pairs": len(drifts),
        "dropped_items": sum(d.count("dropped") for d in drifts),
        "added_items": sum(d.count("added") for d in drifts),
        "changed_items": sum(d.count("changed") for d in drifts),
        "moved_items": sum(d.count("moved") for d in drifts),
        "dropped_literals": sum(len(d.literals_dropped) for d in drifts),
        "missing_sections": sum(len(s.parsed.sections_missing) for c in chains for s in c.chain),
        "resurrections": sum(len(c.resurrections) for c in chains),
        "file_list_violations": sum(len(d.file_list_violations) for d in drifts),
        "growth_tokens": max((d.growth_tokens for d in drifts), default=0),
        "min_goal_similarity": min(goals, default=1.0),
        "min_literal_retention": min(rets, default=1.0),
    }


@dataclass(frozen=True, slots=True, eq=False)
class DriftReport:
    """`diff-summaries` over one or more sessions: one chain per analysed path."""

    chains: tuple[ChainDrift, ...]
    tokenizer: str
    threshold: float = FUZZY_THRESHOLD

    def metrics(self) -> dict[str, Any]:
        return _metrics(self.chains)

    def to_dict(self, pair: int | None = None) -> dict[str, Any]:
        """The JSON body (without the envelope); `pair` keeps only the K-th pair of each chain."""
        return {
            "tokenizer": self.tokenizer,
            "fuzzy_threshold": self.threshold,
            "metrics": self.metrics(),
            "chains": [chain_to_dict(c, pair) for c in self.chains],
        }


def diff_summaries(
    sessions: Sequence[Session],
    *,
    leaf: str | None = None,
    all_leaves: bool = False,
    counter: TokenCounter | None = None,
    threshold: float = FUZZY_THRESHOLD,
) -> DriftReport:
    """Analyse the default path (or `leaf`, or every leaf) of each session."""
    counter = counter or TokenCounter("chars4", chars4_tokens)
    chains = []
    for s in sessions:
        tree = SessionTree(s)
        paths = tree.all_paths() if all_leaves else [tree.path(leaf)]
        for p in paths:
            chains.append(analyse_path(p.entries, session=s.path, leaf_id=p.leaf_id, counter=counter, threshold=threshold))
    return DriftReport(tuple(chains), counter.name, threshold)


class DriftWorker:
    """The chains of one session, as a picklable callable (for `--jobs`): each process builds its
    token counter once."""

    _counters: dict[str, TokenCounter] = {}

    def __init__(self, *, leaf: str | None, all_leaves: bool, tokenizer: str,
                 threshold: float = FUZZY_THRESHOLD) -> None:
        self.leaf, self.all_leaves, self.tokenizer, self.threshold = leaf, all_leaves, tokenizer, threshold

    def __call__(self, session: Session) -> tuple[ChainDrift, ...]:
        counter = DriftWorker._counters.get(self.tokenizer)
        if counter is None:
            counter = DriftWorker._counters[self.tokenizer] = token_counter(self.tokenizer)
        report = diff_summaries([session], leaf=self.leaf, all_leaves=self.all_leaves, counter=counter,
                                threshold=self.threshold)
        return report.chains


# --------------------------------------------------------------------------- JSON


def _item_dict(it: Item) -> dict[str, Any]:
    return {"section": it.section, "text": it.text}


def summary_to_dict(s: ChainSummary) -> dict[str, Any]:
    p = s.parsed
    return {
        "position": s.position,
        "entry_id": s.entry_id,
        "index": s.index,
        "line": s.entry.line,
        "kind": s.kind,
        "previous_summary_id": s.previous_summary_id,
        "tokens": s.tokens,
        "chars": utf16_len(p.text),
        "format": p.format,
        "title": p.title,
        "sections_present": list(p.sections),
        "sections_missing": p.sections_missing,
        "compliance": round(p.compliance, 4),
        "split_turn": p.split_turn,
        "turn_prefix_format": p.turn_prefix_format,
        "items": len(p.items),
        "literals": len(p.literals),
        "read_files": None if p.read_files is None else len(p.read_files),
        "modified_files": None if p.modified_files is None else len(p.modified_files),
    }


def pair_to_dict(d: PairDrift, position: int) -> dict[str, Any]:
    a, b = d.pair.old, d.pair.new
    ch = d.changes
    return {
        "position": position,
        "from": a.entry_id,
        "to": b.entry_id,
        "from_position": a.position,
        "to_position": b.position,
        "relation": d.pair.relation,
        "items": {k: d.count(k) for k in ("kept", "dropped", "added", "changed", "moved")},
        "by_section": d.by_section(),
        "items_detail": {
            "dropped": [_item_dict(c.old) for c in ch if c.kind == "dropped" and c.old],
            "added": [_item_dict(c.new) for c in ch if c.kind == "added" and c.new],
            "changed": [
                {"section": c.old.section, "from": c.old.text, "to": c.new.text, "similarity": c.similarity}
                for c in ch
                if c.kind == "changed" and c.old and c.new
            ],
            "moved": [
                {"from_section": c.old.section, "to_section": c.new.section, "from": c.old.text, "to": c.new.text,
                 "similarity": c.similarity}
                for c in ch
                if c.kind == "moved" and c.old and c.new
            ],
        },
        "literals": {"kept": len(d.literals_kept), "dropped": len(d.literals_dropped), "added": len(d.literals_added)},
        "literal_retention": d.literal_retention,
        "literals_detail": {
            "dropped": [{"kind": k, "value": v} for v, k in d.literals_dropped],
            "added": [{"kind": k, "value": v} for v, k in d.literals_added],
        },
        "goal_similarity": d.goal_similarity,
        "file_list_violations": [dict(v) for v in d.file_list_violations],
        "tokens_from": a.tokens,
        "tokens_to": b.tokens,
        "growth_tokens": d.growth_tokens,
    }


def chain_to_dict(c: ChainDrift, pair: int | None = None) -> dict[str, Any]:
    pairs = [pair_to_dict(d, i) for i, d in enumerate(c.pairs, 1)]
    if pair is not None:
        pairs = [p for p in pairs if p["position"] == pair]
    return {
        "session": c.session,
        "leaf_id": c.leaf_id,
        "summaries": [summary_to_dict(s) for s in c.chain],
        "pairs": pairs,
        "decay": [
            {
                "origin": d.origin.entry_id,
                "origin_position": d.origin.position,
                "items": len(d.origin.parsed.items),
                "literals": len(d.origin.parsed.literals),
                "points": [
                    {"entry_id": p.summary.entry_id, "position": p.summary.position,
                     "items_retained": p.items_retained, "literals_retained": p.literals_retained}
                    for p in d.points
                ],
            }
            for d in c.decay
        ],
        "resurrections": [
            {
                "item": r.item.text,
                "section": r.item.section,
                "kind": r.kind,
                "last_seen": r.last_seen.entry_id,
                "dropped_in": r.dropped_in.entry_id if r.dropped_in else None,
                "back_in": r.back_in.entry_id,
                "back_section": r.back_item.section,
                "back_text": r.back_item.text,
            }
            for r in c.resurrections
        ],
        "metrics": c.metrics(),
    }


# --------------------------------------------------------------------------- gates

@dataclass(frozen=True, slots=True)
class Gate:
    """A `--fail-if METRIC OP NUMBER` condition."""

    expression: str
    metric: str
    op: str
    threshold: float


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: Gate
    value: float
    tripped: bool

    def to_dict(self) -> dict[str, Any]:
        g = self.gate
        return {"expression": g.expression, "metric": g.metric, "op": g.op, "threshold": g.threshold,
                "value": self.value, "tripped": self.tripped}


def parse_gate(expression: str) -> Gate:
    """`METRIC OP NUMBER` with OP in > >= < <= == != (raises UsageError for anything else)."""
    (g,) = parse_gates([expression], METRICS)
    number = int(g.value) if g.value.is_integer() else g.value
    return Gate(f"{g.metric}{g.op}{number}", g.metric, g.op, number)


def evaluate_gates(metrics: Mapping[str, Any], gates: Iterable[Gate]) -> list[GateResult]:
    """Each gate with the metric's value and whether it tripped."""
    return [GateResult(g, metrics[g.metric], OPS[g.op](metrics[g.metric], g.threshold)) for g in gates]
