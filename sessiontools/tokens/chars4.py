"""Pi's `estimateTokens`: ceil(chars / 4) per message, chars counted as Pi counts them.

Exact ports of 0.73.1 and 1.6.0 (`dist/core/compaction/compaction.js`). Differences between the
two: 1.x counts images in user messages, and has `system` messages (content + sections +
JSON of `toolsAdded`). Text length is UTF-16 code units, as in JavaScript.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessiontools.jsvalues import js_truthy, json_stringify, utf16_len

#: Pi counts an image as 4800 characters (1200 tokens).
IMAGE_CHARS = 4800


@dataclass(frozen=True, slots=True)
class CountRules:
    """What a message count takes beyond text, thinking, tool calls, tool results and summaries:
    `images` in user messages, and `system` messages (content + sections + JSON of `toolsAdded`).

    A file's policy says which rules its count follows (`CountRules.of` its rule version)."""

    images: bool = True
    system: bool = True

    @staticmethod
    def of(rule_version: CountRules | str | None) -> CountRules:
        """The rules of a transcript's `rule_version`: the first ("0") counts neither user images nor
        system messages, every later one counts both (an instance is returned as it is)."""
        if rule_version.__class__ is CountRules:
            return rule_version  # type: ignore[return-value]
        return TEXT_ONLY if rule_version == "0" else ALL


#: The two sets of rules: everything (the default), and text only (no user images, no system).
ALL = CountRules()
TEXT_ONLY = CountRules(images=False, system=False)


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def _text_len(v: Any) -> int:
    return utf16_len(v) if isinstance(v, str) else 0


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def text_and_image_chars(content: Any, *, images: bool = True) -> int:
    """Characters of a string or of the text (and image) blocks of a content list."""
    if isinstance(content, str):
        return utf16_len(content)
    chars = 0
    for block in _blocks(content):
        t = block.get("type")
        if t == "text" and js_truthy(block.get("text")):
            chars += _text_len(block.get("text"))
        elif images and t == "image":
            chars += IMAGE_CHARS
    return chars


def assistant_chars(content: Any) -> int:
    """Characters Pi counts for an assistant message: text, thinking, tool name + JSON arguments."""
    chars = 0
    for block in _blocks(content):
        t = block.get("type")
        if t == "text":
            chars += _text_len(block.get("text"))
        elif t == "thinking":
            chars += _text_len(block.get("thinking"))
        elif t == "toolCall":
            args = json_stringify(block.get("arguments"))
            chars += _text_len(block.get("name")) + (utf16_len(args) if args is not None else 0)
    return chars


def message_chars(message: Mapping[str, Any], rules: CountRules | str = ALL) -> int:
    """The character count behind `estimateTokens` (before the division by four), under `rules`
    (or the rules of a rule version, `CountRules.of`)."""
    rules = CountRules.of(rules)
    role = message.get("role")
    if role == "user":
        # 0.x counts only text blocks of user messages; 1.x adds images.
        return text_and_image_chars(message.get("content"), images=rules.images)
    if role == "assistant":
        return assistant_chars(message.get("content"))
    if role in ("custom", "toolResult"):
        return text_and_image_chars(message.get("content"))
    if role == "bashExecution":
        return _text_len(message.get("command")) + _text_len(message.get("output"))
    if role in ("branchSummary", "compactionSummary"):
        return _text_len(message.get("summary"))
    if role == "system" and rules.system:
        chars = text_and_image_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, dict):
            for section in sections.values():
                if js_truthy(section):
                    chars += _text_len(section)
        tools = message.get("toolsAdded")
        if js_truthy(tools):
            s = json_stringify(tools)
            chars += utf16_len(s) if s is not None else 0
        return chars
    return 0


def estimate_tokens(message: Mapping[str, Any], rules: CountRules | str = ALL) -> int:
    """Pi's `estimateTokens(message)` under `rules` (Pi 0.x: `TEXT_ONLY`, 1.x: `ALL`)."""
    return _ceil4(message_chars(message, rules))
