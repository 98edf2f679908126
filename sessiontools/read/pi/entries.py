"""Typed views over Pi session entries.

Entries keep the raw JSON object (after migration to the current format) in `data`, because Pi's
algorithms are defined over those objects and parity depends on seeing exactly the same fields.
The dataclasses add the file position and typed accessors; nothing here copies message content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sessiontools.read.agents import Agent
from sessiontools.read.diagnostics import Diagnostic

#: Entry types any Pi release has written (0.x and 1.x). Others are kept and reported.
KNOWN_ENTRY_TYPES = frozenset(
    {
        "message",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "model_change",
        "thinking_level_change",
        "context_edit",
    }
)

#: Message roles Pi persists (v2 `hookMessage` is migrated to `custom`).
KNOWN_ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary", "system"}
)


@dataclass(frozen=True, slots=True)
class Header:
    """The `type: "session"` first line."""

    id: str
    version: int  # as written (absent = 1)
    cwd: str | None
    timestamp: str | None
    line: int
    data: Mapping[str, Any]


class Entry:
    """One non-header entry, migrated to the current (v3) shape. Treat it as read-only.

    `line` is the 1-based physical line of the file the entry came from (two entries share a line
    when a writer glued two objects together); `index` is its position among the file's entries,
    counting the header as 0 (the numbering of v1 `firstKeptEntryIndex`). `message` and `role`
    are resolved once, at construction. Entries compare by identity.

    A plain slotted class rather than a frozen dataclass: a file has thousands of entries and a
    frozen dataclass pays an `object.__setattr__` per field.
    """

    __slots__ = ("type", "id", "parent_id", "line", "index", "data", "message", "role")

    def __init__(
        self, type: str, id: str | None, parent_id: str | None, line: int, index: int, data: Mapping[str, Any]
    ) -> None:
        self.type = type
        self.id = id
        self.parent_id = parent_id
        self.line = line
        self.index = index
        self.data = data
        self.message: Mapping[str, Any] | None = None
        self.role: str | None = None
        if type == "message":
            msg = data.get("message")
            if isinstance(msg, dict):
                self.message = msg
                role = msg.get("role")
                if isinstance(role, str):
                    self.role = role

    @property
    def timestamp(self) -> Any:
        return self.data.get("timestamp")

    def __repr__(self) -> str:  # short: entries can be huge
        what = self.role or ""
        return f"Entry({self.type}{':' + what if what else ''} id={self.id!r} line={self.line})"


@dataclass(slots=True)
class Session:
    """One session file as read: header, entries in file order, and everything noticed on the way."""

    agent: ClassVar[Agent] = Agent.PI

    path: str
    header: Header | None
    entries: tuple[Entry, ...]
    format_version: int  # the version the file was written in (before migration)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    content_hash: str = ""  # sha256 (128 bits) of the file's bytes when asked for: a key for result caches
    #: Strings holding a lone surrogate, kept as Pi keeps them (its port reads `entries` as written);
    #: the values made from them for output are cleaned (`read.values.cleaned_for`).
    surrogates: int = 0
    #: Read selectively (`read.pi.selective`): the entries hold only the fields inspect reads (no
    #: message content), for counting, never for replay.
    selective: bool = False

    @property
    def skipped(self) -> list[Diagnostic]:
        """Lines that carried no usable entry (malformed, truncated, not an object, ...)."""
        return [d for d in self.diagnostics if d.kind == "skipped"]

    @property
    def recovered(self) -> list[Diagnostic]:
        """Lines read only after a repair Pi itself does not make (glued objects, BOM, ...)."""
        return [d for d in self.diagnostics if d.kind == "recovered"]

    @property
    def notices(self) -> list[Diagnostic]:
        """Structural findings that do not drop data (unknown types, duplicate ids, orphans, cycles)."""
        return [d for d in self.diagnostics if d.kind == "notice"]

    @property
    def fatal(self) -> list[Diagnostic]:
        """Reasons the file could not be read as a session at all."""
        return [d for d in self.diagnostics if d.kind == "fatal"]

    @property
    def readable(self) -> bool:
        """True when the file held a session header or at least one entry."""
        return self.header is not None or bool(self.entries)

    @property
    def pi_version(self) -> str:
        """The Pi major version ("0" or "1") whose reading rules apply (see `detect_pi_version`)."""
        return detect_pi_version(self.entries)

    @property
    def has_lines_pi_drops(self) -> bool:
        """True when we recovered lines that Pi's own reader would have dropped."""
        return any(d.kind == "recovered" and d.reason.startswith(("glued", "byte order")) for d in self.diagnostics)


def detect_pi_version(entries: Iterable[Entry]) -> str:
    """Which Pi major version's context rules apply: "1" if the file uses any 1.x-only feature.

    1.x-only features: a `context_edit` entry, a `system` role message, or a compaction carrying
    `systemMessage` or `usage`. Anything else reads identically under both; "0" is returned.
    """
    for e in entries:
        if e.type == "context_edit":
            return "1"
        if e.type == "compaction" and ("systemMessage" in e.data or "usage" in e.data):
            return "1"
        if e.type == "message" and e.role == "system":
            return "1"
    return "0"
