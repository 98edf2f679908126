"""The provider's own numbers in a context-overflow error: the truth for the rejected request.

Providers say how long the prompt was and what the limit is, each in its own words:
- Anthropic: "prompt is too long: 205334 tokens > 200000 maximum"
- OpenAI: "This model's maximum context length is 128000 tokens. However, your messages resulted in
  147035 tokens." and "... you requested 147035 tokens (146035 in the messages, 1000 in the
  completion)."
- Google: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
- others: "... exceeds the context window of 131072 tokens" (a limit, no count).
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """(count and limit, count, limit) patterns, compiled when an overflow error is first read: most
    files have none, and every `inspect` run that imports an adapter paid for compiling the seven
    (issue 28)."""
    count_and_limit = (
        re.compile(r"too long:\s*(?P<n>\d+)\s*tokens\s*>\s*(?P<m>\d+)", re.I),
        re.compile(r"input token count \((?P<n>\d+)\) exceeds the maximum number of tokens allowed \((?P<m>\d+)\)", re.I),
    )
    counts = (
        re.compile(r"resulted in (?P<n>\d+) tokens", re.I),
        re.compile(r"(?<!\()you requested (?P<n>\d+) tokens(?: \((?P<msgs>\d+) in the messages)?", re.I),
    )
    limits = (
        re.compile(r"maximum context length is (?P<m>\d+) tokens", re.I),
        re.compile(r"(?:context window|limit) of (?P<m>\d+)", re.I),
        re.compile(r"maximum prompt length is (?P<m>\d+)", re.I),
    )
    return count_and_limit, counts, limits


def provider_counts(text: str) -> tuple[int | None, int | None]:
    """(prompt tokens the provider counted, its limit) stated in an overflow error, each or None.

    For OpenAI's "you requested N tokens (M in the messages, K in the completion)" the prompt is M:
    the completion budget is not part of the prompt.
    """
    count_and_limit, counts, limits = _patterns()
    for pat in count_and_limit:
        m = pat.search(text)
        if m:
            return int(m.group("n")), int(m.group("m"))
    count = limit = None
    for pat in counts:
        m = pat.search(text)
        if m:
            msgs = m.groupdict().get("msgs")
            count = int(msgs) if msgs else int(m.group("n"))
            break
    for pat in limits:
        m = pat.search(text)
        if m:
            limit = int(m.group("m"))
            break
    return count, limit
