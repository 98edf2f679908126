"""Usage-based context size: Pi's `calculateContextTokens`, `getLastAssistantUsage`,
`estimateContextTokens` and 1.x `estimateProjectedContextTokens`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.jsvalues import UNDEFINED
from sessiontools.read.pi.entries import Entry
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi.context import Context
from sessiontools.transcript.pi.usage import assistant_usage, calculate_context_tokens

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    """Pi's estimate of a context's size: usage of the last trusted request plus chars/4 after it."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None  # index into the messages; None when no usage was usable

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usage_tokens": self.usage_tokens,
            "trailing_tokens": self.trailing_tokens,
            "last_usage_index": self.last_usage_index,
        }


def estimate_context_tokens(
    messages: Sequence[Message], pi_version: str, estimate: Callable[[Message], int] | None = None
) -> ContextEstimate:
    """Pi's `estimateContextTokens(messages)` (`estimate`: a memoised `estimateTokens`, optional)."""
    if estimate is None:
        def estimate(m: Message) -> int:
            return estimate_tokens(m, pi_version)
    for i in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[i], pi_version)
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate(m) for m in messages[i + 1:])
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, i)
    est = sum(estimate(m) for m in messages)
    return ContextEstimate(est, 0, est, None)


def _content_text(content: Any, sep: str = "\n") -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return sep.join(
        (b.get("text") if isinstance(b.get("text"), str) else "")
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text"
    )




def current_system_message(messages: Sequence[Message]) -> dict[str, Any] | None:
    """pi-ai's `getCurrentSystemMessage`: every system message replayed into one."""
    content: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, Any] = {}
    timestamp: Any = UNDEFINED
    for m in messages:
        if m.get("role") != "system":
            continue
        if timestamp is UNDEFINED or timestamp is None:  # timestamp ??= message.timestamp
            timestamp = m.get("timestamp", UNDEFINED)
        text = _content_text(m.get("content"))
        if text:
            content.append(text)
        secs = m.get("sections")
        if isinstance(secs, Mapping):
            for name, value in secs.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        for tool in m.get("toolsRemoved") or ():
            if isinstance(tool, Mapping):
                tools.pop(tool.get("name"), None)
        for tool in m.get("toolsAdded") or ():
            if isinstance(tool, Mapping):
                tools[tool.get("name")] = tool
    if timestamp is UNDEFINED and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = list(tools.values())
    out["timestamp"] = 0 if timestamp is UNDEFINED or timestamp is None else timestamp
    return out


def estimate_projected_context_tokens(
    context: Context, path: Sequence[Entry], estimate: Callable[[Message], int] | None = None
) -> ContextEstimate:
    """Pi 1.x `estimateProjectedContextTokens`: distrust usage recorded before a later edit or compaction."""
    est = estimate_context_tokens(context.messages, "1", estimate)
    if est.last_usage_index is not None:
        usage_entry_id = None
        start = 0
        for pe in context.entries:
            nxt = start + len(pe.messages)
            if est.last_usage_index < nxt:
                usage_entry_id = pe.source.id
                break
            start = nxt
        usage_idx = -1
        if usage_entry_id:
            for i, e in enumerate(path):
                if e.id == usage_entry_id:
                    usage_idx = i
                    break
        latest_invalidating = -1
        for i in range(len(path) - 1, -1, -1):
            if path[i].type in ("context_edit", "compaction"):
                latest_invalidating = i
                break
        if usage_idx > latest_invalidating:
            return est
    system = current_system_message(context.messages)
    tokens = estimate_tokens(system, "1") if system is not None else 0
    for m in context.messages:
        if m.get("role") != "system":
            tokens += estimate(m) if estimate is not None else estimate_tokens(m, "1")
    return ContextEstimate(tokens, 0, tokens, None)


def estimate_pi_view(context: Context, path: Sequence[Entry]) -> ContextEstimate:
    """What Pi itself computes as the context size before deciding to compact (per version)."""
    if context.pi_version == "1":
        return estimate_projected_context_tokens(context, path)
    return estimate_context_tokens(context.messages, "0")
