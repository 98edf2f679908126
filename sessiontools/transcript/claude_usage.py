"""What a Claude Code session was billed: one usage per API response, from every line of its files.

Claude Code writes one ``assistant`` line per content block of a response (thinking, text, each tool
call), all with the response's ``message.id`` and the API ``requestId``. The input and cache counts
repeat on every line; ``output_tokens`` is a running count: only the last line (the one with the
stop reason) has the final number. A response is the lines sharing (``message.id``, ``requestId``);
its usage is that of its line with the most tokens in all (input + output + cache read + cache
write; the first such line on a tie), which is the final count. This is how ccusage 20 chooses
(``adapter/claude/mod.rs``: ``should_replace_deduped_entry``), and with it two more of its rules: a
main-chain line wins over a sidechain line of the same response, and a sidechain line with the
``message.id`` of a response already seen is that response (``/btw`` side questions replay the
parent's messages under new request ids). A line without ``message.id`` is a response of its own.
A line without tokens (a gateway writes zeros on a response's first line, its counts on the later
ones) bills nothing, but belongs to its response: its path's request is at that first line.

Counted: every line of the file that has a usage, on the resumed path or not (branches off it,
sidechains), and the lines of the session's subagent files (``<session>/subagents/``), each
response once across them. ``<synthetic>`` replies are no API response. The usage classes are
``Usage(input=input_tokens, cache_read=cache_read_input_tokens,
cache_write=cache_creation_input_tokens, output=output_tokens)``, with ``cache_write_1h`` =
``cache_creation.ephemeral_1h_input_tokens`` (at most ``cache_write``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sessiontools.read.claude_code import ClaudeFile, Record
from sessiontools.read.values import integer
from sessiontools.transcript.model import Request, Usage


def _count(v: Any) -> int:
    return max(integer(v), 0)  # (a negative count reads as none; the reader's boundary has dropped it already)


def usage_of(u: Any) -> Usage | None:
    """The usage classes of one line's ``message.usage`` (None when it has no tokens)."""
    if not isinstance(u, dict):
        return None
    get = u.get
    a, b, c, d = (get("input_tokens"), get("cache_read_input_tokens"), get("cache_creation_input_tokens"),
                  get("output_tokens"))
    # `_count` of each, with the common case (an int) tested inline
    a = (a if a > 0 else 0) if type(a) is int else _count(a)
    b = (b if b > 0 else 0) if type(b) is int else _count(b)
    c = (c if c > 0 else 0) if type(c) is int else _count(c)
    d = (d if d > 0 else 0) if type(d) is int else _count(d)
    if a + b + c + d <= 0:
        return None
    created = get("cache_creation")
    hour = 0
    if isinstance(created, dict):
        h = created.get("ephemeral_1h_input_tokens")
        h = (h if h > 0 else 0) if type(h) is int else _count(h)
        hour = h if h < c else c  # (min)
    return Usage(a, b, c, d, None, hour)  # (input, cache_read, cache_write, output, cost, cache_write_1h)


class _Response:
    __slots__ = ("first", "pick", "usage", "total")

    def __init__(self, first: Record, pick: Record, usage: Usage):
        self.first, self.pick, self.usage, self.total = first, pick, usage, usage.total


def _replaces(rec: Record, usage: Usage, old: _Response) -> bool:
    """ccusage's `should_replace_deduped_entry`: a main-chain line over a sidechain one, else more tokens."""
    if rec.sidechain != old.pick.sidechain:
        return old.pick.sidechain
    return usage.total > old.total


def billed_responses(files: Iterable[ClaudeFile]) -> tuple[list[Request], dict[int, Usage]]:
    """Every billed response of these files (a session file and its subagent files), in the order
    of their first lines, as requests on no path (``index`` -1, no context); and, by ``id()`` of
    each assistant record that belongs to a response, that response's usage."""
    responses: list[_Response] = []
    exact: dict[tuple[str, str | None], int] = {}
    by_message: dict[str, list[int]] = {}
    member: dict[int, int] = {}  # id(record) -> index in responses
    tokenless: list[tuple[Record, tuple[str, str | None]]] = []  # lines of a response without its usage yet
    for f in files:
        for r in f.records:
            if r.type != "assistant":
                continue
            msg = r.raw.get("message")
            get = msg.get if isinstance(msg, dict) else {}.get  # (Record.message)
            if get("model") == "<synthetic>":  # no API response (rule: transcript.claude_code, "Requests")
                continue
            usage = usage_of(get("usage"))
            mid = get("id")
            mid = mid if isinstance(mid, str) and mid else None
            rid = r.raw.get("requestId")
            rid = rid if isinstance(rid, str) else None
            if usage is None:
                if mid is not None:
                    tokenless.append((r, (mid, rid)))
                continue
            k: int | None = None
            if mid is not None:
                k = exact.get((mid, rid))
                if k is None and mid in by_message:  # a sidechain replay of a response under a new request id
                    k = next((j for j in by_message[mid] if r.sidechain or responses[j].pick.sidechain), None)
            if k is None:
                k = len(responses)
                responses.append(_Response(r, r, usage))
                if mid is not None:
                    exact[(mid, rid)] = k
                    by_message.setdefault(mid, []).append(k)
            else:
                old = responses[k]
                if _replaces(r, usage, old):
                    old.pick, old.usage, old.total = r, usage, usage.total
                    if mid is not None:
                        exact.setdefault((mid, rid), k)
            member[id(r)] = k
    for r, key in tokenless:  # (a gateway's first line of a response: zeros, the counts on its later lines)
        k = exact.get(key)
        if k is not None:
            member[id(r)] = k
    billed = []
    for x in responses:
        msg, first = x.pick.message, x.first
        model = msg.get("model")
        billed.append(Request(-1, first.line, x.usage, (), "anthropic", model if isinstance(model, str) else None,
                              first.timestamp, msg.get("id") or first.raw.get("requestId"), msg.get("stop_reason")))
    return billed, {rec: responses[k].usage for rec, k in member.items()}
