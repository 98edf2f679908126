"""The recorded workload of a path, with Pi's compaction decisions taken out.

Replay walks the same messages Pi saw in the same order, but decides compactions itself. So the
base path is the recorded path without compaction entries and without the artefacts of overflow
recovery (the failed attempt Pi removed from its context, and 1.x omission edits). Everything
else (user prompts, assistant replies, tool results, branch summaries, custom messages, other
context edits) is workload. Harness pseudo-replies (`transcript.pi.requests.is_pseudo_reply`) stay
in the workload as content but are not requests: not in the truth fit, not check points, not the
source of the session's model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.limits import provider_counts
from sessiontools.transcript.model import Trigger
from sessiontools.transcript.pi.kinds import compaction_kind
from sessiontools.transcript.pi.overflow import is_context_overflow
from sessiontools.transcript.pi.requests import is_pseudo_reply
from sessiontools.transcript.pi.usage import assistant_usage, prompt_tokens


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
    failed_overflow: bool = False  # the provider rejected it as a context overflow
    group_end: int = -1  # failed attempt: base index of the last entry of its recovery artefacts
    provider_tokens: int | None = None  # failed attempt: the prompt tokens the provider's error states
    provider: str | None = None  # who answered (recorded)
    model: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedCompaction:
    """A compaction Pi recorded, located in base-path terms."""

    entry: Entry
    parent_base_index: int  # the base entry it followed (-1: at the very start)
    first_kept_entry_id: str | None
    tokens_before: Any
    kind: Trigger  # threshold | overflow | manual, judged from the message before it
    by_user: bool = False  # manual, or written by an extension/hook (fromHook): replayed as recorded


@dataclass(slots=True)
class Workload:
    """A path prepared for replay."""

    pi_version: str
    path: tuple[Entry, ...]  # the recorded path
    base: tuple[Entry, ...]  # the path without compaction entries
    requests: list[Request]
    recorded_compactions: list[RecordedCompaction]
    artefacts: frozenset[int] = frozenset()  # base indices of recovery edits (replayed only with their failure)
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
    """Split a recorded path into base workload, requests, runs and recorded compactions.

    An overflow error stays in the base as a failed request; the 1.x edits that omit it from the
    context (replacement null, targeting the failed attempt or its tool results) are marked as its
    recovery artefacts: the replay puts them back only when it reproduces the failure.
    """
    base: list[Entry] = []
    recorded: list[RecordedCompaction] = []
    for i, e in enumerate(path):
        if e.type == "compaction":
            recorded.append(
                RecordedCompaction(
                    e, len(base) - 1, e.data.get("firstKeptEntryId"), e.data.get("tokensBefore"),
                    Trigger(compaction_kind(path, i, pi_version)),
                    compaction_kind(path, i, pi_version) == "manual" or bool(e.data.get("fromHook")),
                )
            )
            continue
        base.append(e)
    failed = {i for i, e in enumerate(base) if _is_overflow_error(e, pi_version)}
    artefacts, group_end = _recovery_groups(base, failed)

    requests: list[Request] = []
    run = -1
    first = True
    provider = model = None
    # Harness pseudo-replies are not requests: they stay on the path as content, never check points.
    assistant_positions = [i for i, e in enumerate(base)
                           if e.role == "assistant" and not is_pseudo_reply(e.message or {})]
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
                failed_overflow=i in failed,
                group_end=group_end.get(i, i),
                provider_tokens=provider_counts(str(msg.get("errorMessage") or ""))[0] if i in failed else None,
                provider=msg.get("provider") if isinstance(msg.get("provider"), str) else None,
                model=msg.get("model") if isinstance(msg.get("model"), str) else None,
            )
        )
        first = False
        if i not in failed:
            provider, model = msg.get("provider") or provider, msg.get("model") or model
    # A run's last request is the final one before the next run starts, whatever its stop reason.
    for k, r in enumerate(requests):
        nxt = requests[k + 1] if k + 1 < len(requests) else None
        if (nxt is None or nxt.run != r.run) and not r.last_in_run:
            requests[k] = replace(r, last_in_run=True)
    return Workload(pi_version, tuple(path), tuple(base), requests, recorded, frozenset(artefacts), provider, model)


def _recovery_groups(base: Sequence[Entry], failed: set[int]) -> tuple[set[int], dict[int, int]]:
    """The 1.x omission edits after each failed attempt (replacement null, targeting it or its tool
    results), and the base index of the last entry of each attempt's group."""
    failed_ids = {base[i].id for i in failed if base[i].id}
    artefacts: set[int] = set()
    group_end: dict[int, int] = {}
    for i in sorted(failed):
        end = i
        for j in range(i + 1, len(base)):
            b = base[j]
            if b.type == "context_edit" and b.data.get("replacement") is None:
                target = b.data.get("targetId")
                if target in failed_ids or target == base[i].id or _targets_result_of(base, i, target):
                    artefacts.add(j)
                    end = j
                    continue
            break
        group_end[i] = end
    return artefacts, group_end


def _targets_result_of(base: Sequence[Entry], failed_index: int, target: Any) -> bool:
    """Whether `target` is a tool result answering the failed attempt's tool calls."""
    for e in base[failed_index + 1:]:
        if e.id == target:
            return e.role == "toolResult"
    return False
