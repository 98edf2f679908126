"""Typed records of a Codex CLI rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`).

A rollout line is `{"timestamp", "type", "payload"}` (0.171 adds `"ordinal"`). The types that matter:

- `session_meta`: session id, cwd, `cli_version`, `model_provider`, `base_instructions` (the system
  prompt sent first on every request). Older versions write it again on every resume.
- `turn_context`: per turn (and after each compaction): model, cwd, policies.
- `response_item`: what the model saw or produced: `message` (user/assistant/developer),
  `function_call`, `function_call_output`, `custom_tool_call(_output)`, `reasoning`, `compaction`
  (an OpenAI-hosted compaction's encrypted summary), ...
- `event_msg`: `token_count` (`info.total_token_usage`, `info.last_token_usage`,
  `info.model_context_window`), `task_started` / `task_complete` (with `error` when the turn failed,
  e.g. `codex_error_info: "context_window_exceeded"`), `error`, `context_compacted` (2025), ...
- `token_usage_record` (0.171): one per response, with its `response_id`.
- `compacted`: `message` (Codex's fixed summary prefix + the summary; empty for a remote compaction)
  and `replacement_history` (the history that replaced the old one; absent in older rollouts).

Records are values: never change one after reading. They are not `frozen` dataclasses only because
a frozen dataclass's constructor sets each field through `object.__setattr__`, several times slower
than a plain one, and a record is built for every line (they stay hashable, `unsafe_hash`).

The oldest rollouts (early 2025) have no wrapper: a first line `{"id", "timestamp", "instructions"}`
then bare response items and `{"record_type": "state"}` lines; they are read as the same records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sessiontools.read.agents import Agent

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process."
)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class TokenUsage:
    """OpenAI usage as Codex records it: `input_tokens` INCLUDES the cached ones; `output_tokens`
    includes reasoning tokens; `total_tokens` = input + output."""

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int
    total_tokens: int
    cache_write_input_tokens: int = 0

    @property
    def is_zero(self) -> bool:
        """No model call behind it (Codex writes such counts after a compaction or an overflow)."""
        return self.input_tokens == 0 and self.output_tokens == 0


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class Record:
    """Base of every record: the 1-based physical line and the line's timestamp."""

    line: int
    timestamp: str | None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class SessionMeta(Record):
    id: str | None
    cwd: str | None
    cli_version: str | None
    model_provider: str | None
    base_instructions: str | None
    originator: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class TurnContext(Record):
    turn_id: str | None
    model: str | None
    cwd: str | None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class ResponseItem(Record):
    """One item of the model-visible history (`payload` is the item as written)."""

    kind: str  # payload.type: message, function_call, function_call_output, reasoning, ...
    role: str | None
    payload: Mapping[str, Any] = field(compare=False, repr=False)


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class TokenCount(Record):
    total: TokenUsage | None
    last: TokenUsage | None
    context_window: int | None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class UsageRecord(Record):
    """`token_usage_record` (0.171): the usage of one response and its id."""

    response_id: str | None
    usage: TokenUsage | None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class TaskEvent(Record):
    """`task_started` / `task_complete`; `error` is set when the turn failed."""

    kind: str  # "started" | "complete"
    turn_id: str | None
    context_window: int | None = None
    error_message: str | None = None
    error_info: str | None = None
    trigger: str | None = None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class ErrorEvent(Record):
    """`event_msg` of type `error`."""

    message: str
    info: str | None = None


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class CompactionEvent(Record):
    """`event_msg` `context_compacted` (2025) or `item_completed` with a `ContextCompaction` item."""

    source: str


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class Compacted(Record):
    """A `compacted` line: the summary and the history that replaced the old one."""

    message: str
    replacement_history: tuple[Mapping[str, Any], ...] | None = field(compare=False, repr=False)
    usage: TokenUsage | None = None  # latest_token_usage_record: the summarisation call (0.171)

    @property
    def summary(self) -> str | None:
        """The readable summary: `message` after Codex's fixed prefix (None when empty)."""
        text = self.message
        if text.startswith(SUMMARY_PREFIX):
            marker = "analysis:\n"
            i = text.find(marker)
            text = text[i + len(marker):] if i >= 0 else text.split("\n", 1)[-1]
        return text if text.strip() else None

    @property
    def encrypted(self) -> bool:
        """An OpenAI-hosted (remote) compaction: no readable summary, an encrypted item instead."""
        return any(isinstance(it, Mapping) and it.get("encrypted_content") and it.get("type") in
                   ("compaction", "compaction_summary") for it in self.replacement_history or ())


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see the module docstring
class Other(Record):
    """A line of a known shape that carries nothing the transcript needs (world_state, ...)."""

    type: str
    subtype: str | None = None


@dataclass(slots=True)
class Rollout:
    """One rollout file read into records, with what was noticed about its lines."""

    agent: ClassVar[Agent] = Agent.CODEX

    path: str
    records: tuple[Record, ...]
    diagnostics: list[Any]  # read.Diagnostic
    schema: str  # "0.171" style (lines carry `ordinal`), "2025" (wrapped, no ordinal), "legacy" (bare items)
    #: A lean reading's (`read_rollout_bytes(lean=True)`): line -> the whole item of a `response_item`
    #: record that holds only a projection (None for a line read whole). None: every item is whole.
    full_item: Any = field(default=None, compare=False, repr=False)
    #: The key of the file's bytes when asked for (`read.files.digest_of`): for result caches.
    content_hash: str = field(default="", compare=False, repr=False)

    @property
    def metas(self) -> list[SessionMeta]:
        return [r for r in self.records if isinstance(r, SessionMeta)]

    @property
    def session_id(self) -> str | None:
        metas = self.metas
        return metas[0].id if metas else None

    @property
    def cli_version(self) -> str | None:
        return next((m.cli_version for m in self.metas if m.cli_version), None)
