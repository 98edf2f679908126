"""Which Pi assistant messages are requests: model calls whose recorded usage is a truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.transcript.pi.usage import assistant_usage, prompt_tokens

Message = Mapping[str, Any]

#: Model ids and providers that harnesses (OpenClaw, which embeds Pi's session manager) write on
#: assistant messages that were never model calls: a reply mirrored to a chat channel, a message
#: injected by a gateway.
PSEUDO_MODELS = frozenset({"delivery-mirror", "gateway-injected"})
PSEUDO_PROVIDERS = frozenset({"openclaw"})
_USAGE_CLASSES = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def is_pseudo_reply(message: Message) -> bool:
    """A harness's pseudo-reply: a model id or provider that is no model, or a reply that was not
    aborted or failed and whose usage is zero in every class."""
    if message.get("model") in PSEUDO_MODELS or message.get("provider") in PSEUDO_PROVIDERS:
        return True
    if message.get("stopReason") in ("aborted", "error"):
        return False
    usage = message.get("usage")
    if not isinstance(usage, Mapping) or not usage:
        return False
    return all(not isinstance(v, int | float) or isinstance(v, bool) or v == 0
               for v in (usage.get(k, 0) for k in _USAGE_CLASSES))


def skip_reason(message: Message, pi_version: str) -> str | None:
    """Why an assistant message is not a request with a truth, or None when it is one."""
    if is_pseudo_reply(message):
        return "pseudo_reply"
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
