"""The recorded workload of a Pi path, with Pi's compaction decisions taken out: the entries the
endpoint's runs and the bench's Node side (`bench/replay.py`) walk.

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
from dataclasses import dataclass
from typing import Any, NamedTuple

from sessiontools.read.pi.entries import Entry
from sessiontools.read.values import integer
from sessiontools.transcript.limits import provider_counts
from sessiontools.transcript.model import Trigger
from sessiontools.transcript.pi.kinds import compaction_kind
from sessiontools.transcript.pi.overflow import is_context_overflow
from sessiontools.transcript.pi.requests import is_pseudo_reply
from sessiontools.transcript.pi.usage import assistant_usage, prompt_tokens


class Request(NamedTuple):
    """One assistant message of the base path: a request Pi sent (a named tuple: a session makes one
    per reply, and a frozen dataclass of twelve fields costs more to build than the rest of its step)."""

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
    provider_limit: int | None = None  # failed attempt: the limit the provider's error states


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


def is_overflow_error(e: Entry, pi_version: str) -> bool:
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
    failed = {i for i, e in enumerate(base) if is_overflow_error(e, pi_version)}
    artefacts, group_end = recovery_groups(base, failed)

    requests, provider, model = _requests(base, failed, group_end, pi_version)
    return Workload(pi_version, tuple(path), tuple(base), requests, recorded, frozenset(artefacts), provider, model)


#: Base entries that start a run (a user-side message before a reply): by role, and by entry type.
_RUN_START_ROLES = frozenset({"user", "bashExecution", "custom"})
_RUN_START_TYPES = frozenset({"custom_message", "branch_summary"})


def _requests(
    base: Sequence[Entry], failed: set[int], group_end: dict[int, int], pi_version: str
) -> tuple[list[Request], str | None, str | None]:
    """The requests of the base path (harness pseudo-replies are not requests: they stay on the path
    as content, never check points), and the provider and model of the newest successful one."""
    rows = []
    run = -1
    provider = model = None
    started = True  # a user-side message since the previous reply (or none before the first)
    for i, e in enumerate(base):
        role = e.role
        if role != "assistant" or is_pseudo_reply(e.message or {}):
            if role in _RUN_START_ROLES or e.type in _RUN_START_TYPES:
                started = True
            continue
        msg = e.message or {}
        if started:  # a run starts at a user-side message (prompt, bash, custom, branch summary) before this reply
            run += 1
        usage = assistant_usage(msg, pi_version)
        raw = msg.get("usage")
        out = raw.get("output") if type(raw) is dict or isinstance(raw, Mapping) else 0
        rows.append((i, run, started, msg.get("stopReason") != "toolUse", usage, out, msg))
        started = False
        if i not in failed:
            provider, model = msg.get("provider") or provider, msg.get("model") or model
    requests = []
    for k, (i, run, first, last, usage, out, msg) in enumerate(rows):
        # A run's last request is the final one before the next run starts, whatever its stop reason.
        if k + 1 == len(rows) or rows[k + 1][1] != run:
            last = True
        p, m = msg.get("provider"), msg.get("model")
        fail = i in failed
        counts = provider_counts(str(msg.get("errorMessage") or "")) if fail else (None, None)
        requests.append(Request(
            i, run, first, last, prompt_tokens(usage) if usage is not None else None, integer(out),
            msg.get("stopReason"), fail, group_end.get(i, i) if fail else i,
            counts[0], p if isinstance(p, str) else None, m if isinstance(m, str) else None, counts[1],
        ))
    return requests, provider, model


def recovery_groups(base: Sequence[Entry], failed: set[int]) -> tuple[set[int], dict[int, int]]:
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
