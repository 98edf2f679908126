"""A summary's markdown as a flat list of blocks: headings and items.

Which lines are headings comes from a CommonMark parser (markdown-it-py): only ATX headings at the
top of the document are section headings, so a `# ` line inside fenced code, an indented block, a
list item or a block quote (pasted tool output, a shell comment) never re-levels the sections.
Items are list items (with their checkbox state), table rows (the header row and separator are
not items), paragraphs and fenced code blocks. Horizontal rules and blank lines only close blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,3}[.)])[ \t]+(?:\[([ xX])\](?:[ \t]+|$))?(.*)$")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")


@dataclass(slots=True)
class Block:
    kind: str  # "heading" | "item"
    text: str
    level: int = 0  # heading level (1..6)
    checked: bool | None = None  # list item: `[x]` True, `[ ]` False, else None


def heading_lines(text: str) -> frozenset[int]:
    """0-based numbers of the lines that are top-level ATX headings, by markdown-it-py (CommonMark)."""
    from markdown_it import MarkdownIt

    out = set()
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type == "heading_open" and tok.level == 0 and tok.markup.startswith("#") and tok.map:
            out.add(tok.map[0])
    return frozenset(out)


class _Scanner:
    """Line-by-line block scanner (state: the open paragraph or list item, and whether a table is open)."""

    def __init__(self, text: str) -> None:
        self.headings = heading_lines(text)
        self.lines = text.split("\n")
        self.out: list[Block] = []
        self.para: list[str] | None = None
        self.bullet: Block | None = None
        self.table_open = False

    def close(self) -> None:
        if self.para is not None:
            joined = " ".join(s.strip() for s in self.para if s.strip())
            if self.bullet is not None:
                self.bullet.text = joined
                self.out.append(self.bullet)
            elif joined:
                self.out.append(Block("item", joined))
        self.para, self.bullet = None, None

    def fence(self, i: int, marker: str) -> int:
        """A fenced code block from line i: one item; returns the line after the closing fence."""
        self.close()
        body: list[str] = []
        i += 1
        while i < len(self.lines) and not self.lines[i].lstrip().startswith(marker[0] * len(marker)):
            body.append(self.lines[i])
            i += 1
        code = "\n".join(body).strip("\n")
        if code.strip():
            self.out.append(Block("item", code))
        self.table_open = False
        return i + 1

    def table_row(self, i: int) -> None:
        self.close()
        line = self.lines[i]
        if _TABLE_SEP.match(line):
            return
        is_header = not self.table_open and i + 1 < len(self.lines) and bool(_TABLE_SEP.match(self.lines[i + 1]))
        self.table_open = True
        if not is_header:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            row = " | ".join(c for c in cells if c)
            if row:
                self.out.append(Block("item", row))

    def line(self, i: int) -> int:
        """Handle line i; returns the next line to look at."""
        line = self.lines[i]
        fence = _FENCE.match(line)
        if fence:
            return self.fence(i, fence.group(1))
        h = HEADING.match(line) if i in self.headings else None
        if not line.strip() or h or _RULE.match(line):
            self.close()
            self.table_open = False
            if h:
                self.out.append(Block("heading", h.group(2).strip(), level=len(h.group(1))))
            return i + 1
        if _TABLE_ROW.match(line):
            self.table_row(i)
            return i + 1
        self.table_open = False
        b = _BULLET.match(line)
        if b:
            self.close()
            chk = b.group(2)
            self.bullet = Block("item", "", checked=None if chk is None else chk in "xX")
            self.para = [b.group(3)]
        elif self.para is not None:  # continuation of a paragraph or list item (also lazy continuation)
            self.para.append(line)
        else:
            self.para = [line]
        return i + 1


def blocks(text: str) -> list[Block]:
    """Markdown blocks as headings and items (list items, table rows, paragraphs, code blocks)."""
    s = _Scanner(text)
    i = 0
    while i < len(s.lines):
        i = s.line(i)
    s.close()
    return s.out
