"""The recorded workload of a path, with Pi's compaction decisions taken out.

Replay walks the same messages Pi saw in the same order, but decides compactions itself. So the
base path is the recorded path without compaction entries and without the artefacts of overflow
recovery (the failed attempt Pi removed from its context, and 1.x omission edits). Everything
else (user prompts, assistant replies, tool results, branch summaries, custom messages, other
context edits) is workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..compaction.overflow import is_context_overflow
from ..compaction.usage import assistant_usage, prompt_tokens
from ..read.entries import Entry
from ..tree.context import build_context


@dataclass(frozen=True, slots=True)
class Request:
    """One assistant message of the base path: a request Pi sent."""

    base_index: int  # index of the assistant entry in the base path
    run: int  # which run (user prompt) it belongs to
    first_in_run: bool  # the run's first request (no between-turn check before it)
    last_in_run: bool  # the run's final assistant message (a pi-0 check point follows)
    recorded_prompt: int | None  # recorded A = input + cacheRead + cacheWrite, if usage is usable
    output: int  # recorded output tokens (0 when unknown)
    stop_reason: str | None


@dataclass(frozen=True, slots=True)
class RecordedCompaction:
    """A compaction Pi recorded, located in base-path terms."""

    entry: Entry
    parent_base_index: int  # the base entry it followed (-1: at the very start)
    first_kept_entry_id: str | None
    tokens_before: Any
    kind: str  # threshold | overflow | manual


@dataclass(slots=True)
class Workload:
    """A path prepared for replay."""

    pi_version: str
    path: tuple[Entry, ...]  # the recorded path
    base: tuple[Entry, ...]  # the path without compactions and overflow artefacts
    requests: list[Request]
    recorded_compactions: list[RecordedCompaction]
    dropped: list[Entry] = field(default_factory=list)  # overflow artefacts removed from the base
    provider: str | None = None
    model: str | None = None

    @property
    def request_at(self) -> dict[int, Request]:
        return {r.base_index: r for r in self.requests}


def _is_overflow_error(e: Entry, pi_version: str) -> bool:
    msg = e.message
    return (
        msg is not None
        and msg.get("role") == "assistant"
        and msg.get("stopReason") == "error"
        and is_context_overflow(msg, None, pi_version)
    )


def build_workload(path: Sequence[Entry], pi_version: str) -> Workload:
    """Split a recorded path into base workload, requests, runs and recorded compactions."""
    from ..analysis.inspect import compaction_kind

    dropped_ids: set[str] = set()
    dropped: list[Entry] = []
    for e in path:
        if _is_overflow_error(e, pi_version):
            dropped.append(e)
            if e.id:
                dropped_ids.add(e.id)
    # 1.x recovery omits the failed attempt (and its tool results) with replacement-null edits.
    for e in path:
        if e.type == "context_edit" and e.data.get("replacement") is None and e.data.get("targetId") in dropped_ids:
            dropped.append(e)
    dropped_set = {id(e) for e in dropped}
    base: list[Entry] = []
    recorded: list[RecordedCompaction] = []
    for i, e in enumerate(path):
        if e.type == "compaction":
            recorded.append(
                RecordedCompaction(
                    e, len(base) - 1, e.data.get("firstKeptEntryId"), e.data.get("tokensBefore"),
                    compaction_kind(path, i, pi_version),
                )
            )
            continue
        if id(e) in dropped_set:
            continue
        base.append(e)

    requests: list[Request] = []
    run = -1
    first = True
    provider = model = None
    assistant_positions = [i for i, e in enumerate(base) if e.role == "assistant"]
    for k, i in enumerate(assistant_positions):
        msg = base[i].message or {}
        # A run starts at a user-side message (prompt, bash, custom, branch summary) before this reply.
        prev_assistant = assistant_positions[k - 1] if k else -1
        starts_run = k == 0 or any(
            b.role in ("user", "bashExecution", "custom") or b.type in ("custom_message", "branch_summary")
            for b in base[prev_assistant + 1: i]
        )
        if starts_run:
            run += 1
            first = True
        usage = assistant_usage(msg, pi_version)
        out = msg.get("usage", {}).get("output") if isinstance(msg.get("usage"), Mapping) else 0
        requests.append(
            Request(
                base_index=i,
                run=run,
                first_in_run=first,
                last_in_run=msg.get("stopReason") != "toolUse",
                recorded_prompt=prompt_tokens(usage) if usage is not None else None,
                output=int(out) if isinstance(out, int | float) and not isinstance(out, bool) else 0,
                stop_reason=msg.get("stopReason"),
            )
        )
        first = False
        provider, model = msg.get("provider") or provider, msg.get("model") or model
    # A run's last request is the final one before the next run starts, whatever its stop reason.
    for k, r in enumerate(requests):
        nxt = requests[k + 1] if k + 1 < len(requests) else None
        if nxt is None or nxt.run != r.run:
            if not r.last_in_run:
                requests[k] = Request(r.base_index, r.run, r.first_in_run, True, r.recorded_prompt, r.output, r.stop_reason)
    return Workload(pi_version, tuple(path), tuple(base), requests, recorded, dropped, provider, model)


def recorded_context_sources(path: Sequence[Entry], upto: int, pi_version: str) -> tuple[int, ...]:
    """Identity of the recorded context before path[upto]: the ids of its source entries."""
    ctx = build_context(path[:upto], pi_version)
    return tuple(id(pe.source) for pe in ctx.entries if pe.messages)
