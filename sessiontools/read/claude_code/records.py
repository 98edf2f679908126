"""Claude Code transcript lines as typed records (``$CLAUDE_CONFIG_DIR/projects/<slug>/<id>.jsonl``).

Every non-blank line is a JSON object with a ``type``. Conversation lines (``user``, ``assistant``,
``system``, ``attachment``) carry ``uuid`` / ``parentUuid`` (a tree; ``parentUuid: null`` starts a
chain, a ``compact_boundary`` continues the one before it through ``logicalParentUuid``),
``isSidechain``, ``sessionId``, ``timestamp``, ``cwd``, ``version``. The other line types
(``api-request*``, ``tools-used``, ``cost-state``, ``queue-operation``, ``last-prompt``, ``mode``,
``summary`` titles, ...) are metadata: kept as records without a place in the tree.

Records are values: never change one after reading. They are not `frozen` dataclasses only because
a frozen dataclass's constructor sets each field through `object.__setattr__`, several times slower
than a plain one, and a record is built for every line (they stay hashable, `unsafe_hash`).

Bad input is normal input: a line that is not JSON, not an object, has no ``type``, or is a
``user``/``assistant`` line without a ``message`` object is skipped with a ``Diagnostic``; a
duplicated ``uuid`` keeps the first line; an unknown ``type`` is kept with a notice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sessiontools.read.agents import Agent
from sessiontools.read.diagnostics import Diagnostic, DiagnosticKind

CONVERSATION_TYPES = frozenset({"user", "assistant", "system", "attachment"})
KNOWN_TYPES = CONVERSATION_TYPES | frozenset({
    "summary", "api-request", "api-request-shape", "api-request-blob", "tools-used", "cost-state",
    "queue-operation", "last-prompt", "mode", "atis-latch", "file-history-snapshot", "custom-title",
    "tag", "agent-name", "pr-link", "worktree-state", "progress", "permission-mode",
})
CONTINUATION_PREFIX = "This session is being continued from a previous conversation"


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class Record:
    """One parsed line of a Claude Code transcript."""

    line: int  # 1-based physical line
    type: str
    raw: dict[str, Any] = field(repr=False)
    uuid: str | None = None
    parent: str | None = None
    logical_parent: str | None = None
    sidechain: bool = False
    subtype: str | None = None
    session_id: str | None = None
    timestamp: str | None = None

    @property
    def message(self) -> dict[str, Any]:
        m = self.raw.get("message")
        return m if isinstance(m, dict) else {}

    @property
    def content(self) -> Any:
        return self.message.get("content")


def content_text(content: Any) -> str:
    """The text blocks of a message content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")


def parse_record(obj: Any, line: int, path: str) -> Record | Diagnostic:
    """A record, or the Diagnostic saying why the line was skipped."""
    if not isinstance(obj, dict):
        return Diagnostic(path, line, f"not a JSON object ({type(obj).__name__})", DiagnosticKind.SKIPPED)
    # This runs for every line: each string field's test (a non-empty str, else None) is written out
    # inline, a call per field costing more than the test.
    get = obj.get
    t = get("type")
    if not isinstance(t, str) or not t:
        return Diagnostic(path, line, "no 'type'", DiagnosticKind.SKIPPED)
    if (t == "user" or t == "assistant") and not isinstance(get("message"), dict):
        return Diagnostic(path, line, f"{t} line without a 'message' object", DiagnosticKind.SKIPPED)
    uuid = get("uuid")
    if not isinstance(uuid, str) or not uuid:
        if t in CONVERSATION_TYPES:
            return Diagnostic(path, line, f"{t} line without a 'uuid'", DiagnosticKind.SKIPPED)
        uuid = None
    parent, logical, subtype, sid, ts = (get("parentUuid"), get("logicalParentUuid"), get("subtype"),
                                         get("sessionId"), get("timestamp"))
    # (positional, in field order)
    return Record(line, t, obj, uuid, parent if isinstance(parent, str) and parent else None,
                  logical if isinstance(logical, str) and logical else None, get("isSidechain") is True,
                  subtype if isinstance(subtype, str) and subtype else None,
                  sid if isinstance(sid, str) and sid else None, ts if isinstance(ts, str) and ts else None)


@dataclass(slots=True)
class ClaudeFile:
    """One transcript file: its records in file order and what the reader noticed; `subagents` holds
    the subagent transcripts Claude Code wrote beside it (`<session>/subagents/agent-*.jsonl`).
    `texts` False: read for a command that reads no message text (`load.parse_bytes`), so its
    transcript is built without them (`transcript.claude_code`: messages without units)."""

    agent: ClassVar[Agent] = Agent.CLAUDE_CODE

    path: str
    records: list[Record]
    diagnostics: list[Diagnostic]
    subagents: list[ClaudeFile] = field(default_factory=list)
    texts: bool = True
    #: The key of the file's bytes and its subagent files' when asked for (`read.files.digest_of`).
    content_hash: str = field(default="", compare=False, repr=False)

    @property
    def session_id(self) -> str | None:
        return next((r.session_id for r in self.records if r.session_id), None)

    @property
    def version(self) -> str | None:
        return next((v for r in self.records if isinstance(v := r.raw.get("version"), str) and v), None)

    def nodes(self) -> dict[str, Record]:
        """Conversation records by uuid (first line wins)."""
        out: dict[str, Record] = {}
        for r in self.records:
            if r.uuid and r.type in CONVERSATION_TYPES and r.uuid not in out:
                out[r.uuid] = r
        return out
