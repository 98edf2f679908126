"""The JS releases of Claude Code (1.0.89 - 2.1.112, and the native 2.1.113 - 2.1.152 that embed the same
estimator): their token estimate of a message and what they
restore after a compaction, read from each release's `cli.js` (`policies.claude_code_rules` has the
table; `policies.claude_code` the Policy that uses these)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.policies.base import Candidate
from sessiontools.policies.claude_code_rules import (
    RESTORE_FILE_TOKENS,
    RESTORE_FILES,
    RESTORE_TOTAL_TOKENS,
    Count,
    js_round,
)
from sessiontools.read.values import integer
from sessiontools.transcript.model import Message, UnitKind

#: A JS release's estimate of an image block (2.1.2 - 2.1.73, as modelled; 2.1.63 counts 2000).
JS_IMAGE_TOKENS = 1334
#: 2.1.74 - 2.1.112: an image or a document block.
JS_NEW_IMAGE_TOKENS = 2000


def _json_chars(v: Any) -> int:
    """len(JSON.stringify(v)) (compact separators, non-ASCII kept)."""
    return len(json.dumps(v, separators=(",", ":"), ensure_ascii=False))


def _field(name: str) -> Callable[[dict[str, Any]], int]:
    return lambda b: len(b.get(name) or "")


#: What one block of a type is worth to the JS estimate: an int is a fixed token count, a function the
#: characters Math.round(len / 4, or / the model's bytes per token from 2.1.140) is taken of. A tool result is the sum over its content (a string, or
#: blocks by the same table). Per `Count` (a row of `claude_code_rules.RULES`), read from cli.js.
BlockRule = int | Callable[[dict[str, Any]], int]


@dataclass(frozen=True, slots=True)
class JsBlockRules:
    """The block-type rules of the releases one `Count` stands for."""

    by_type: Mapping[str, BlockRule]
    other: BlockRule  # a type not listed
    #: Another agent's message (no Claude Code content): the unit kinds left out of its text.
    skip_units: tuple[UnitKind, ...]


#: cli.js 2.1.74 - 2.1.112 (and the native 2.1.113 - 2.1.152): text, tool_use (name + JSON input),
#: thinking and tool-result text; an image or document 2000; any other block its JSON.
_EVERY_BLOCK = JsBlockRules(
    {"text": _field("text"), "image": JS_NEW_IMAGE_TOKENS, "document": JS_NEW_IMAGE_TOKENS,
     "tool_use": lambda b: len(b.get("name") or "") + _json_chars(b.get("input") or {}),
     "thinking": _field("thinking"), "redacted_thinking": _field("data")},
    _json_chars, (UnitKind.IMAGE,))

JS_BLOCK_RULES: Mapping[Count, JsBlockRules] = {
    # cli.js 2.1.2 - 2.1.73: text and tool-result text; tool_use and thinking blocks count 0
    Count.USAGE_ROUND4: JsBlockRules(
        {"text": _field("text"), "image": JS_IMAGE_TOKENS}, 0,
        (UnitKind.THINKING, UnitKind.IMAGE, UnitKind.TOOL_CALL)),
    Count.USAGE_ROUND4_ALL: _EVERY_BLOCK,
    # the native 2.1.140 - 2.1.152: the same rules, divided by the model's bytes per token, not 4
    Count.USAGE_ROUND_BPT_ALL: _EVERY_BLOCK,
}


def _js_block_tokens(b: Any, rules: JsBlockRules, per: int) -> int:
    """A JS release's estimate of one content block under `rules`, Math.round(len / `per`)."""
    if isinstance(b, str):
        return js_round(len(b), per)
    if not isinstance(b, dict):
        return 0
    t = b.get("type")
    if t == "tool_result":
        c = b.get("content")
        return js_round(len(c), per) if isinstance(c, str) else sum(_js_block_tokens(x, rules, per) for x in c or [])
    rule = rules.by_type.get(t, rules.other) if isinstance(t, str) else rules.other
    return rule if isinstance(rule, int) else js_round(rule(b), per)


def js_tokens(m: Message, count: Count = Count.USAGE_ROUND4, per: int = 4) -> int:
    """A JS release's estimate of a message (the sum over its blocks by `JS_BLOCK_RULES[count]`, each
    Math.round(len / `per`): 4, or the model's bytes per token from 2.1.140); another agent's message:
    its units' text, rounded once."""
    rules = JS_BLOCK_RULES[count]
    raw = m.raw if isinstance(m.raw, dict) else None
    msg = raw.get("message") if raw is not None and raw.get("type") in ("user", "assistant") else None
    if isinstance(msg, dict):
        c = msg.get("content")
        if isinstance(c, str):
            return js_round(len(c), per)
        return sum(_js_block_tokens(b, rules, per) for b in c or [] if isinstance(c, list))
    return js_round(sum(len(u.text) for u in m.units if u.kind not in rules.skip_units), per)


def _read_result(m: Any) -> tuple[str, float] | None:
    """(file path, whole-file share) of a Read result line: Claude Code writes `toolUseResult.file`
    (`filePath`, `numLines`, `totalLines`) on it; the share is totalLines / numLines (a partial read
    stands for a larger file)."""
    raw = m.raw if m is not None and isinstance(m.raw, dict) else None
    res = raw.get("toolUseResult") if raw is not None and raw.get("type") == "user" else None
    f = res.get("file") if isinstance(res, dict) else None
    if not isinstance(f, dict) or not isinstance(f.get("filePath"), str):
        return None
    total, lines = integer(f.get("totalLines"), None), integer(f.get("numLines"), None)
    share = max(1.0, total / max(1, lines)) if total is not None and lines is not None else 1.0
    return f["filePath"], share


def restored_files(candidates: Sequence[Candidate]) -> tuple[int, ...]:
    """What a JS release attaches after its summary (cli.js 2.0.2 - 2.1.63): the `RESTORE_FILES` files
    read most recently, each re-read whole and left out above `RESTORE_FILE_TOKENS`, newest first
    while the total fits `RESTORE_TOTAL_TOKENS`. Modelled as the newest Read result of each file in
    the context (a result restored by an earlier compaction counts as read then): the re-read is the
    file as the model last saw it, scaled up for a partial read."""
    newest: dict[str, tuple[Candidate, float]] = {}  # file path -> its newest Read result
    for c in candidates:
        got = _read_result(c.message)
        if got is not None:
            newest.pop(got[0], None)
            newest[got[0]] = (c, got[1])  # re-inserted: dict order is read order
    kept: list[int] = []
    total = 0.0
    for c, share in list(reversed(newest.values()))[:RESTORE_FILES]:
        whole = c.tokens * share
        if whole > RESTORE_FILE_TOKENS or total + c.tokens > RESTORE_TOTAL_TOKENS:
            continue
        total += c.tokens
        kept.append(c.index)
    return tuple(sorted(kept))


def print_mode_prompt(m: Any) -> bool:
    """Whether a prompt line was written by print mode (`claude -p`, one process per prompt, which
    reloads the transcript): the interactive REPL writes `thinkingMetadata` (or `todos`) on a prompt
    line, print mode neither (the lab recordings; real 2.0.x - 2.1.x files). Another agent's: False."""
    raw = m.raw if m is not None and isinstance(m.raw, dict) else None
    if raw is None or raw.get("type") != "user" or "version" not in raw:
        return False
    return "thinkingMetadata" not in raw and "todos" not in raw
