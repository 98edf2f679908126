"""Pi's `prepareCompaction`: what a compaction at the end of a path would summarise and keep."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from sessiontools.jsvalues import UNDEFINED, js_truthy, utf16_len
from sessiontools.policies.pi.cut import CutPoint, find_cut_point_v0, find_projected_cut_point
from sessiontools.policies.pi.serialize import (
    FileOps,
    compute_file_lists,
    convert_to_llm,
    extract_file_ops,
    serialize_conversation,
)
from sessiontools.policies.pi.settings import CompactionSettings
from sessiontools.policies.pi.usage import estimate_projected_context_tokens
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import (
    Context,
    ProjectedEntry,
    branch_summary_message,
    build_context,
    compaction_summary_message,
    custom_message,
    entry_messages_v0,
)
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class NoCompaction:
    """Pi's `prepareCompaction` returned undefined; `reason` says why."""

    reason: str
    tokens_before: int | None = None

    compacts = False


@dataclass(frozen=True, slots=True)
class Preparation:
    """Pi's `CompactionPreparation`, with positions expressed as indices of the path."""

    pi_version: str
    first_kept_entry_id: str
    first_kept_index: int
    turn_start_index: int | None
    is_split_turn: bool
    tokens_before: int
    boundary_start: int
    messages_to_summarize: tuple[Message, ...]
    turn_prefix_messages: tuple[Message, ...]
    previous_summary: Any
    has_previous_compaction: bool
    file_ops: FileOps = field(repr=False)
    settings: CompactionSettings = field(repr=False)

    compacts = True

    @property
    def read_files(self) -> list[str]:
        return compute_file_lists(self.file_ops)[0]

    @property
    def modified_files(self) -> list[str]:
        return compute_file_lists(self.file_ops)[1]

    @property
    def has_previous_summary(self) -> bool:
        return self.previous_summary is not None

    def serialized(self) -> str:
        """The conversation text Pi sends to the summariser for the summarised history."""
        return serialize_conversation(convert_to_llm(self.messages_to_summarize, self.pi_version), self.pi_version)

    def serialized_turn_prefix(self) -> str:
        return serialize_conversation(convert_to_llm(self.turn_prefix_messages, self.pi_version), self.pi_version)

    @property
    def serialized_chars(self) -> int:
        """UTF-16 length of `serialized()` (JavaScript string length)."""
        return utf16_len(self.serialized())


CompactionResult = Preparation | NoCompaction



def _prev_compaction_file_ops(prev: Entry | None, ops: FileOps) -> None:
    if prev is None:
        return
    details = prev.data.get("details")
    if js_truthy(prev.data.get("fromHook")) or not js_truthy(details) or not isinstance(details, Mapping):
        return
    if isinstance(details.get("readFiles"), list):
        ops.read.update(dict.fromkeys(details["readFiles"]))  # each set in order, as `ops.read[f] = None`
    if isinstance(details.get("modifiedFiles"), list):
        ops.edited.update(dict.fromkeys(details["modifiedFiles"]))


def extract_file_ops_all(messages: Sequence[Message], ops: FileOps, pi_version: str) -> None:
    """`extract_file_ops` of each message, in order."""
    for m in messages:
        extract_file_ops(m, ops, pi_version)


#: Adds the file operations of messages, in order, to a FileOps (`extract_file_ops_all` or an equivalent).
AddOps = Callable[[Sequence[Message], FileOps, str], None]


def _file_ops(
    prev: Entry | None, to_summarize: Sequence[Message], prefix: Sequence[Message], add_ops: AddOps, pi_version: str,
) -> FileOps:
    """Pi's `extractFileOperations`: the previous compaction's lists, then the summarised messages'
    tool calls, then the turn prefix's (empty unless the turn is split)."""
    ops = FileOps()
    _prev_compaction_file_ops(prev, ops)
    add_ops(to_summarize, ops, pi_version)
    add_ops(prefix, ops, pi_version)
    return ops


def message_for_compaction_v0(e: Entry) -> Message | None:
    """The message 0.x summarises of entry `e` (None: none)."""
    if e.type == "message":
        m = e.message  # the message object when it is a dict (the common case)
        if m is not None:
            return m
        m = e.data.get("message")
        return m if js_truthy(m) else None
    if e.type == "custom_message":
        return custom_message(e.data, default_content=False)
    if e.type == "branch_summary":
        return branch_summary_message(e.data)
    return None


class PathHints(NamedTuple):
    """What a caller that built a 0.x path knows of it (the replay's compactor, `policies.pi.compactor`),
    given so that the port need not find it again: each is the port's own answer exactly
    (`tests/policies/test_pi_path_layout.py` holds them to it)."""

    newest_compaction: int  # the index of the path's newest compaction entry (-1: none)
    messages: Callable[[int, int], tuple[Message, ...]]  # `_messages_for_compaction_v0(path, lo, hi)`
    #: Each entry's estimate, None for one that is no message (`find_cut_point_v0`'s `entry_tokens`).
    entry_tokens: Sequence[int | None]


def _messages_for_compaction_v0(path: Sequence[Entry], lo: int, hi: int) -> tuple[Message, ...]:
    """The messages of path[lo:hi] that 0.x summarises (`message_for_compaction_v0`)."""
    return tuple([
        m for e in path[lo:hi]
        # the common case (a message entry holding a dict) without the call
        if (m := e.message if e.type == "message" and e.message is not None else message_for_compaction_v0(e))
        is not None
    ])


def _context_estimate_v0(path: Sequence[Entry], comp_idx: int, estimate: Callable[[Message], int] | None) -> int:
    """`estimateContextTokens(buildSessionContext(path).messages).tokens` (0.x) without building the
    context: walk its messages from the newest back to the last usable usage."""
    est = estimate or (lambda m: estimate_tokens(m, "0"))
    ranges: list[tuple[int, int]] = []
    if comp_idx < 0:
        ranges.append((0, len(path)))
    else:
        comp = path[comp_idx]
        first_kept = comp.data.get("firstKeptEntryId")
        start = next((i for i in range(comp_idx) if path[i].id == first_kept), None)
        if start is not None:
            ranges.append((start, comp_idx))
        ranges.append((comp_idx + 1, len(path)))
    trailing = 0
    for lo, hi in reversed(ranges):
        for i in range(hi - 1, lo - 1, -1):
            for m in reversed(entry_messages_v0(path[i])):
                usage = assistant_usage(m, "0")
                if usage is not None:
                    return calculate_context_tokens(usage) + trailing
                trailing += est(m)
    # No usage in the kept messages: the summary message counts too (built only now that it is needed).
    return trailing + (est(compaction_summary_message(path[comp_idx].data)) if comp_idx >= 0 else 0)


def _prepare_v0(
    path: Sequence[Entry], settings: CompactionSettings, estimate: Callable[[Message], int] | None = None,
    add_ops: AddOps = extract_file_ops_all, hints: PathHints | None = None,
) -> CompactionResult:
    prev_idx = -1
    if hints is not None:
        prev_idx = hints.newest_compaction
    else:
        for i in range(len(path) - 1, -1, -1):
            if path[i].type == "compaction":
                prev_idx = i
                break
    previous_summary = None
    boundary_start = 0
    if prev_idx >= 0:
        prev = path[prev_idx]
        previous_summary = prev.data.get("summary")
        target = prev.data.get("firstKeptEntryId", UNDEFINED)
        fk = next((i for i, e in enumerate(path) if e.data.get("id", UNDEFINED) == target), -1)
        boundary_start = fk if fk >= 0 else prev_idx + 1
    tokens_before = _context_estimate_v0(path, prev_idx, estimate)
    cut = find_cut_point_v0(path, boundary_start, len(path), settings.keep_recent_tokens, estimate,
                            hints.entry_tokens if hints is not None else None)
    first_kept = path[cut.first_kept_index] if 0 <= cut.first_kept_index < len(path) else None
    if first_kept is None or not js_truthy(first_kept.data.get("id")):
        return NoCompaction("the first kept entry has no id (the session needs migration)", tokens_before)
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    messages = hints.messages if hints is not None else partial(_messages_for_compaction_v0, path)
    to_summarize = messages(boundary_start, history_end or 0)
    prefix: tuple[Message, ...] = ()
    if cut.is_split_turn:
        prefix = messages(cut.turn_start_index or 0, cut.first_kept_index)
    ops = _file_ops(path[prev_idx] if prev_idx >= 0 else None, to_summarize, prefix, add_ops, "0")
    return Preparation(
        "0",
        first_kept.data["id"],
        cut.first_kept_index,
        cut.turn_start_index,
        cut.is_split_turn,
        tokens_before,
        boundary_start,
        to_summarize,
        prefix,
        previous_summary,
        prev_idx >= 0,
        ops,
        settings,
    )


def _messages_for_compaction_v1(pe: ProjectedEntry) -> list[Message]:
    if pe.source.type == "compaction":
        return []
    return [m for m in pe.messages if m.get("role") != "system"]


def _prepare_v1(
    path: Sequence[Entry], settings: CompactionSettings, context: Context | None,
    estimate: Callable[[Message], int] | None = None,
    add_ops: AddOps = extract_file_ops_all,
) -> CompactionResult:
    ctx = context if context is not None else build_context(path, "1")
    pes = ctx.entries
    prev_idx = next((i for i, pe in enumerate(pes) if pe.source.type == "compaction" and pe.messages), -1)
    previous_summary = pes[prev_idx].source.data.get("summary") if prev_idx >= 0 else None
    boundary_start = prev_idx + 1 if prev_idx >= 0 else 0
    tokens_before = estimate_projected_context_tokens(ctx, path, estimate).tokens
    cut = find_projected_cut_point(pes, boundary_start, len(pes), settings.keep_recent_tokens, estimate)
    first_kept = pes[cut.first_kept_index].source if 0 <= cut.first_kept_index < len(pes) else None
    if first_kept is None or not js_truthy(first_kept.data.get("id")):
        return NoCompaction("the first kept entry has no id (the session needs migration)", tokens_before)
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = tuple(m for pe in pes[boundary_start:history_end] for m in _messages_for_compaction_v1(pe))
    prefix: tuple[Message, ...] = ()
    if cut.is_split_turn:
        prefix = tuple(
            m for pe in pes[cut.turn_start_index: cut.first_kept_index] for m in _messages_for_compaction_v1(pe)
        )
    if not to_summarize and not prefix:
        return NoCompaction("nothing to summarize: every message before the cut is already summarized", tokens_before)
    ops = _file_ops(pes[prev_idx].source if prev_idx >= 0 else None, to_summarize, prefix, add_ops, "1")
    # Map projected positions back to positions in the path.
    where = {id(e): i for i, e in enumerate(path)}

    def to_path(i: int | None) -> int | None:
        return None if i is None else where[id(pes[i].source)]

    start_path = to_path(boundary_start) if boundary_start < len(pes) else len(path)
    return Preparation(
        "1",
        first_kept.data["id"],
        to_path(cut.first_kept_index),  # type: ignore[arg-type]
        to_path(cut.turn_start_index),
        cut.is_split_turn,
        tokens_before,
        start_path,  # type: ignore[arg-type]
        to_summarize,
        prefix,
        previous_summary,
        prev_idx >= 0,
        ops,
        settings,
    )


def prepare_compaction(
    path: Sequence[Entry], settings: CompactionSettings, pi_version: str, *, context: Context | None = None,
    estimate: Callable[[Message], int] | None = None,
    file_ops: AddOps | None = None, hints: PathHints | None = None,
) -> CompactionResult:
    """What Pi `pi_version` would summarise and keep if it compacted at the end of `path`.

    `path` runs from the root to the point of compaction (header excluded). Returns a
    `Preparation`, or a `NoCompaction` with the reason where Pi returns undefined. `estimate`
    may replace `estimateTokens` of that version with a memoised equivalent, and `file_ops`
    `extract_file_ops_all` (the replay shares both across a settings grid); they must give the same
    answers. `hints` (0.x): what the caller knows of `path` (`PathHints`), the port's answers too.
    """
    if not path:
        return NoCompaction("the path is empty")
    if path[-1].type == "compaction":
        return NoCompaction("the path already ends in a compaction")
    if pi_version == "0":
        return _prepare_v0(path, settings, estimate, file_ops or extract_file_ops_all, hints)
    if pi_version == "1":
        return _prepare_v1(path, settings, context, estimate, file_ops or extract_file_ops_all)
    raise ValueError(f"unknown Pi version {pi_version!r}")


__all__ = ["CompactionResult", "CutPoint", "NoCompaction", "PathHints", "Preparation", "prepare_compaction"]
