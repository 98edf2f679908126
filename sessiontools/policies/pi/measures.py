"""What Pi's own count sees of each message of a Pi transcript path, measured once per path.

A replay counts every message of a path two or three times over Pi's own message objects
(`Message.raw`): the truth fit's chars/4 candidate (`estimateTokens`), its tokenizer candidate (the
same text units, `tokens.units`) and the walk's (chars, bytes) of each message (`PiPolicy.sizer`).
Each pass walked the message again (a tool call's arguments through `JSON.stringify` each time).
`path_measures` walks each message once (`tokens.units.units_of`: the strings Pi's chars/4
counts, and its images) and keeps the result as long as the path lives: the characters are the
units' UTF-16 length plus 4800 per image, `chars4.message_chars` exactly (tests/tokens/test_tiktoken_counter.py checks it).

Nothing is kept across paths or calls: a new read of the same file is a new path, measured anew.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from sessiontools.jsvalues import utf16_len
from sessiontools.tokens.chars4 import IMAGE_CHARS, CountRules
from sessiontools.tokens.units import units_of

try:
    # `units_of` of a plain message and the lengths below, made in C (read/_pi_units.c): None for
    # anything it leaves to the Python rule. Most of measuring a path (bench s0049, the fit
    # phase of a one-setting replay: measured below).
    from sessiontools.read._native import pi_units as _c_units
except ImportError:  # not built on this machine: the Python rule for every message, same results
    _c_units = None

#: By id of a live path and rules: (its weak reference, its `PathMeasures`).
_MEMO: dict[tuple[int, CountRules], tuple[weakref.ref[Any], PathMeasures]] = {}


class PathMeasures:
    """Each message's units and characters as Pi counts them, by message index (`texts[i]` None:
    the message has no Pi message object, `chars[i]` then -1; a caller counts it otherwise), and
    the UTF-8 bytes of those units joined by newlines (`bytes[i]`: a lone surrogate as the three
    bytes of the U+FFFD that replaces it in the cleaned view)."""

    __slots__ = ("bytes", "chars", "images", "messages", "texts")

    def __init__(self, messages: tuple[Any, ...], rules: CountRules) -> None:
        self.messages = messages
        texts: list[tuple[str, ...] | None] = []
        images: list[int] = []
        chars: list[int] = []
        nbytes: list[int] = []
        c_units, images_too, system_too = _c_units, rules.images, rules.system
        for m in messages:
            raw = m.raw
            if c_units is not None and type(raw) is dict:
                got = c_units(raw, images_too, system_too)
                if got is not None:
                    ts, n, c, b = got
                    texts.append(ts)
                    images.append(n)
                    chars.append(c + IMAGE_CHARS * n)
                    nbytes.append(b + len(ts) - 1 if ts else 0)
                    continue
            if type(raw) is not dict and not isinstance(raw, Mapping):
                texts.append(None)
                images.append(0)
                chars.append(-1)
                nbytes.append(-1)
                continue
            units = units_of(raw, rules)
            ts = tuple(filter(None, units))  # the texts: no image (None), no empty string
            n = units.count(None)
            # Lengths of the texts joined: the sum of theirs (UTF-16 units and UTF-8 bytes both add up).
            joined = "".join(ts)
            if joined.isascii():
                c = b = len(joined)
            else:
                c, b = utf16_len(joined), len(joined.encode("utf-8", "surrogatepass"))
            texts.append(ts)
            images.append(n)
            chars.append(c + IMAGE_CHARS * n)
            nbytes.append(b + len(ts) - 1 if ts else 0)
        self.texts, self.images, self.chars, self.bytes = texts, images, chars, nbytes

    def owns(self, message: Any) -> bool:
        """Whether `message` is this path's own message at its index (measured here)."""
        i = message.index
        return 0 <= i < len(self.messages) and self.messages[i] is message and self.chars[i] >= 0


def path_measures(path: Any, rules: CountRules | str) -> PathMeasures:
    """The `PathMeasures` of `path` under `rules` (Pi's rule version), measured on first use and kept
    while the path lives."""
    r = CountRules.of(rules)
    key = (id(path), r)
    got = _MEMO.get(key)
    if got is not None and got[0]() is path:
        return got[1]
    measures = PathMeasures(path.messages, r)
    _MEMO[key] = (weakref.ref(path, lambda _, key=key: _MEMO.pop(key, None)), measures)
    return measures
