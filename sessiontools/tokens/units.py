"""The text units of a message: exactly the strings Pi's chars/4 counts, for counting them with a tokenizer.

`message_units(message, rules)` gives the strings behind `chars4.message_chars` (text blocks,
thinking, tool name + `JSON.stringify(arguments)`, tool-result text, bash command and output,
summaries, system content/sections/tools JSON) and the number of images, which Pi counts as 4800
characters and a tokenizer's count takes as a fixed `IMAGE_TOKENS`, with a content key: equal keys,
equal counts under any vocabulary (`tokens.tiktoken_counter.TiktokenCounter` counts them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.jsvalues import js_truthy, json_stringify
from sessiontools.tokens.chars4 import ALL, CountRules

#: Tokens counted for one image (Pi's 4800 characters / 4).
IMAGE_TOKENS = 1200


@dataclass(frozen=True, slots=True)
class MessageUnits:
    """The strings and images of one message that Pi's chars/4 counts, with a content key."""

    texts: tuple[str, ...]
    images: int
    key: bytes  # hash of texts and images: equal keys mean equal token counts for any encoding


def _content_units(content: Any, images: bool, out: list[str | None]) -> None:
    """Text (and None for each image) of a string or of the text/image blocks of a content list."""
    if isinstance(content, str):
        out.append(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):  # `chars4._blocks`, without its list
            continue
        t = block.get("type")
        if t == "text":
            text = block.get("text")
            if isinstance(text, str) and text:  # a truthy string (`js_truthy`)
                out.append(text)
        elif images and t == "image":
            out.append(None)


def _assistant_units(content: Any, out: list[str | None]) -> None:
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):  # `chars4._blocks`, without its list
            continue
        t = block.get("type")
        if t == "text":
            if isinstance(block.get("text"), str):
                out.append(block["text"])
        elif t == "thinking":
            if isinstance(block.get("thinking"), str):
                out.append(block["thinking"])
        elif t == "toolCall":
            name = block.get("name")
            if isinstance(name, str):
                out.append(name)
            args = json_stringify(block.get("arguments"))
            if args is not None:
                out.append(args)


def units_of(message: Mapping[str, Any], rules: CountRules | str = ALL) -> list[str | None]:
    """The text units of a message in the order Pi counts them; None stands for an image.

    Mirrors `chars4.message_chars` branch for branch: sum(utf16_len(text)) + 4800 * images over
    these units equals `message_chars(message, rules)`. (A list, not a generator: a path's every
    message is read through here, `policies.pi.measures`.)
    """
    rules = CountRules.of(rules)
    out: list[str | None] = []
    role = message.get("role")
    if role == "user":
        _content_units(message.get("content"), rules.images, out)
    elif role == "assistant":
        _assistant_units(message.get("content"), out)
    elif role in ("custom", "toolResult"):
        _content_units(message.get("content"), True, out)
    elif role == "bashExecution":
        for k in ("command", "output"):
            if isinstance(message.get(k), str):
                out.append(message[k])
    elif role in ("branchSummary", "compactionSummary"):
        if isinstance(message.get("summary"), str):
            out.append(message["summary"])
    elif role == "system" and rules.system:
        _content_units(message.get("content"), True, out)
        sections = message.get("sections")
        if isinstance(sections, Mapping):
            for section in sections.values():
                if js_truthy(section) and isinstance(section, str):
                    out.append(section)
        tools = message.get("toolsAdded")
        if js_truthy(tools):
            s = json_stringify(tools)
            if s is not None:
                out.append(s)
    return out


def iter_units(message: Mapping[str, Any], rules: CountRules | str = ALL) -> Iterator[str | None]:
    """`units_of` as an iterator."""
    return iter(units_of(message, rules))


def units_key(texts: Sequence[str], images: int) -> bytes:
    """A content hash of text units: equal keys mean equal counts under any encoding. The hash of
    `images` (4 bytes) then each text's UTF-8 length (8 bytes) and bytes, fed piece by piece (no
    joined copy of the texts: the keys of the cache on disk are unchanged)."""
    h = hashlib.blake2b(images.to_bytes(4, "little"), digest_size=16)
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def message_units(message: Mapping[str, Any], rules: CountRules | str = ALL) -> MessageUnits:
    """The text units and images of a message (see `iter_units`), with their content key."""
    texts: list[str] = []
    images = 0
    for u in units_of(message, rules):
        if u is None:
            images += 1
        elif u:
            texts.append(u)
    return MessageUnits(tuple(texts), images, units_key(texts, images))
