"""Provider context-overflow errors, recognised with pi-ai's own patterns (`utils/overflow.ts`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from sessiontools.read.values import number

_I = re.IGNORECASE | re.ASCII

#: The patterns as pi-ai writes them, compiled on first use (`_compiled`): most runs never see an
#: error message, and compiling the 50 of them was a tenth of `inspect`'s start-up (issue 28).
OVERFLOW_SOURCES_0 = (
    r"prompt is too long",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
)

OVERFLOW_SOURCES_1 = (
    r"prompt (?:is )?too long",
    r"prompt exceeds max length",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"context window exceeded",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"range of input length should be",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
)

_CEREBRAS_BODYLESS = r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)"
_NON_OVERFLOW = (r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests")


@cache
def _compiled(sources: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, _I) for p in sources)


def is_context_overflow(message: Mapping[str, Any], context_window: int | None = None, pi_version: str = "1") -> bool:
    """pi-ai's `isContextOverflow(message, contextWindow?)` for Pi major version `pi_version`."""
    error = message.get("errorMessage")
    stop = message.get("stopReason")
    if stop == "error" and isinstance(error, str) and error:
        if not any(p.search(error) for p in _compiled(_NON_OVERFLOW)):
            patterns = _compiled(OVERFLOW_SOURCES_0 if pi_version == "0" else OVERFLOW_SOURCES_1)
            if any(p.search(error) for p in patterns):
                return True
            if (pi_version != "0" and message.get("provider") == "cerebras"
                    and _compiled((_CEREBRAS_BODYLESS,))[0].search(error)):
                return True
    usage = message.get("usage") if isinstance(message.get("usage"), Mapping) else {}
    if context_window and stop == "stop":
        if number(usage.get("input")) + number(usage.get("cacheRead")) > context_window:
            return True
    if pi_version != "0" and context_window and stop == "length" and number(usage.get("output")) == 0:
        if number(usage.get("input")) + number(usage.get("cacheRead")) >= context_window * 0.99:
            return True
    return False
