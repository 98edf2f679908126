"""Which Pi assistant messages are requests: model calls whose recorded usage is a truth.

Harness pseudo-replies are not requests: harnesses that embed Pi's session manager (OpenClaw, for
one) write assistant messages that no model produced, such as a reply mirrored to a chat channel or
a message a gateway injected. They carry all-zero usage or a model id that is no model
(`HARNESS_MODEL_IDS`). Such a message, unless it is an aborted or failed call, is `pseudo_reply`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.transcript.pi.usage import assistant_usage, prompt_tokens

Message = Mapping[str, Any]

#: Model ids harnesses write on messages no model produced.
HARNESS_MODEL_IDS = frozenset({"delivery-mirror", "gateway-injected"})

_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def is_pseudo_reply(message: Message) -> bool:
    """An assistant message a harness wrote: all-zero usage or a harness model id (not aborted/error)."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return False
    if message.get("model") in HARNESS_MODEL_IDS:
        return True
    usage = message.get("usage")
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return False
    g = usage.get
    return not (g("input") or g("output") or g("cacheRead") or g("cacheWrite") or g("totalTokens"))


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


def plain_request(msg: Message, u: Any, stop: Any) -> bool:
    """True when `skip_reason(msg, ...)` is certainly None (either rule set), decided from plain int
    fields alone: `u` is the assistant message's usage, `stop` its stop reason (as read by the caller).

    The common case (a completed call, integer usage with a positive prompt, a named model) is
    answered here without the general rules; anything else (floats, missing fields, zero prompts,
    harness ids, aborted or failed calls) returns False and goes to `skip_reason`. The is-a-request
    check of every reply, by the neutral transcript and `inspect`; tests/analysis/test_inspect_counts.py
    holds it to `skip_reason`."""
    if type(u) is not dict or stop == "aborted" or stop == "error":
        return False
    model = msg.get("model")
    if model is not None and (type(model) is not str or model in HARNESS_MODEL_IDS):
        return False
    i, cr, cw = u.get("input"), u.get("cacheRead"), u.get("cacheWrite")
    if type(i) is not int or type(cr) is not int or type(cw) is not int or i + cr + cw <= 0:
        return False  # a zero prompt may be a pseudo-reply or zero usage: the general rules say
    total = u.get("totalTokens")
    if type(total) is int and total > 0:
        return True  # calculateContextTokens = totalTokens > 0
    if total is not None and not (type(total) is int and total == 0):
        return False
    out = u.get("output")  # totalTokens absent or 0: the sum of the four, >= the positive prompt
    return out is None or (type(out) is int and out >= 0)
