"""How Pi reads an assistant message's usage: `calculateContextTokens`, which usage Pi trusts
(`getLastAssistantUsage`'s filter), and the actual prompt tokens A of a request. (A usage as the
neutral transcript's record is `usage_record`'s: that module loads the neutral model, which the
one-file `inspect` never needs.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.jsvalues import js_truthy
from sessiontools.read.values import number

Message = Mapping[str, Any]


def calculate_context_tokens(usage: Mapping[str, Any]) -> int:
    """`usage.totalTokens || input + output + cacheRead + cacheWrite`."""
    total = usage.get("totalTokens")
    if js_truthy(total) and isinstance(total, int | float):
        return int(total)
    return int(number(usage.get("input")) + number(usage.get("output")) + number(usage.get("cacheRead")) + number(usage.get("cacheWrite")))


def prompt_tokens(usage: Mapping[str, Any]) -> int:
    """Actual prompt tokens A = input + cacheRead + cacheWrite, as the provider counted them."""
    g = usage.get
    i, r, w = g("input"), g("cacheRead"), g("cacheWrite")
    if type(i) is int and type(r) is int and type(w) is int:  # what JSON gives: `number` is each as is
        return i + r + w
    return int(number(usage.get("input")) + number(usage.get("cacheRead")) + number(usage.get("cacheWrite")))


def assistant_usage(message: Message, pi_version: str) -> Mapping[str, Any] | None:
    """The usage of an assistant message if Pi trusts it (not aborted/error; 1.x: non-zero)."""
    if message.get("role") != "assistant" or "usage" not in message:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if type(usage) is not dict and (not js_truthy(usage) or not isinstance(usage, Mapping)):
        return None  # (a dict, even empty, is truthy)
    if pi_version != "0" and calculate_context_tokens(usage) <= 0:
        return None
    return usage
