"""What a piece of text is made of, as tokenizers see it: the package's one CJK definition.

A character is CJK when its code point lies in one of `CJK_RANGES` (CJK radicals, symbols and
punctuation, kana, bopomofo, ideographs with extensions A-F, Hangul syllables, compatibility
ideographs, full-width forms); `lab/tokenizer.py` uses the same ranges for the lab tokenizer.

`text_mix(text)` splits a text into the classes real tokenizers price differently: CJK
characters, digits, whitespace and other characters (ASCII letters and punctuation, other
scripts). Everything here is pure and cheap (a code-point array against the ranges).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Inclusive code-point ranges of CJK text.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3100, 0x312F),  # bopomofo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # half-width and full-width forms
    (0x20000, 0x2FA1F),  # CJK extensions B-F and supplement
)

#: A regular-expression character class of exactly the CJK ranges.
CJK_CLASS = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "]"
#: One CJK character.
CJK_RE = re.compile(CJK_CLASS)
#: One CJK character, or a run of non-CJK characters (for splitting mixed text).
CJK_OR_RUN_RE = re.compile(f"{CJK_CLASS}|[^{CJK_CLASS[1:-1]}]+")

_EDGES: Any = None


def _edges() -> Any:
    global _EDGES
    if _EDGES is None:
        import numpy as np

        _EDGES = np.array(CJK_RANGES, dtype=np.uint32)
    return _EDGES


def _code_points(text: str) -> Any:
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _cjk_mask(cps: Any) -> Any:
    import numpy as np

    ranges = _edges()
    edges = ranges.ravel()
    # A code point is CJK when it falls in an odd bucket of the sorted range edges (inclusive ends).
    pos = np.searchsorted(edges, cps, side="right")
    return (pos % 2 == 1) | np.isin(cps, ranges[:, 1])


def is_cjk(ch: str) -> bool:
    """Whether one character is CJK."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def cjk_count(text: str) -> int:
    """How many characters of `text` are CJK."""
    if text.isascii():
        return 0
    return int(_cjk_mask(_code_points(text)).sum())


def has_cjk(text: str) -> bool:
    return not text.isascii() and CJK_RE.search(text) is not None


@dataclass(frozen=True, slots=True)
class TextMix:
    """Characters (code points) of a text by class: cjk + digits + space + other == total."""

    total: int
    cjk: int
    digits: int
    space: int

    @property
    def other(self) -> int:
        return self.total - self.cjk - self.digits - self.space


def text_mix(text: str) -> TextMix:
    """The classes of the characters of `text` (see the module doc)."""
    if not text:
        return TextMix(0, 0, 0, 0)
    if text.isascii():
        b = text.encode("ascii")
        digits = sum(b.count(d) for d in b"0123456789")
        space = sum(b.count(s) for s in b" \t\n\r")
        return TextMix(len(text), 0, digits, space)
    cps = _code_points(text)
    cjk = int(_cjk_mask(cps).sum())
    digits = int(((cps >= 0x30) & (cps <= 0x39)).sum())
    space = int(((cps == 0x20) | (cps == 0x09) | (cps == 0x0A) | (cps == 0x0D)).sum())
    return TextMix(len(cps), cjk, digits, space)
