"""Which Pi assistant messages are requests: model calls whose recorded usage is a truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.transcript.pi.usage import assistant_usage, prompt_tokens

Message = Mapping[str, Any]


def skip_reason(message: Message, pi_version: str) -> str | None:
    """Why an assistant message is not a request with a truth, or None when it is one."""
    if assistant_usage(message, pi_version) is None:
        stop = message.get("stopReason")
        if stop in ("aborted", "error"):
            return str(stop)
        if not message.get("usage"):
            return "no_usage"
        return "zero_usage"
    if prompt_tokens(message["usage"]) <= 0:
        return "zero_prompt"
    return None
