"""What a piece of text is made of, as tokenizers see it: the package's one CJK definition.

A character is CJK when its code point lies in one of `CJK_RANGES` (CJK radicals, symbols and
punctuation, kana, bopomofo, ideographs with extensions A-F, Hangul syllables, compatibility
ideographs, full-width forms); `lab/tokenizer.py` uses the same ranges for the lab tokenizer.

`text_counts(text)` splits a text into the classes real tokenizers price differently: CJK
characters, digits, whitespace and other characters (ASCII letters and punctuation, other
scripts), with its UTF-16 length. Everything here is pure and cheap (a code-point array against the ranges).
"""

from __future__ import annotations

import re
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

_CLASSES: Any = None
#: Classes of `_class_table`: CJK, ASCII digit, ASCII whitespace (space, tab, LF, CR); 0 is other.
_CJK, _DIGIT, _SPACE = 1, 2, 3
_DIGITS = b"0123456789"
_SPACES = b" \t\n\r"


def _class_table() -> Any:
    """The class of every BMP code point (uint8), built from `CJK_RANGES` once."""
    global _CLASSES
    if _CLASSES is None:
        import numpy as np

        table = np.zeros(0x10000, dtype=np.uint8)
        for lo, hi in CJK_RANGES:
            if lo <= 0xFFFF:
                table[lo: min(hi, 0xFFFF) + 1] = _CJK
        table[0x30:0x3A] = _DIGIT
        table[[0x20, 0x09, 0x0A, 0x0D]] = _SPACE
        _CLASSES = table
    return _CLASSES


def _code_points(text: str) -> Any:
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _astral_cjk(cps: Any) -> int:
    """CJK characters beyond the BMP (the table covers the BMP only)."""
    n = 0
    for lo, hi in CJK_RANGES:
        if hi > 0xFFFF:
            n += int(((cps >= max(lo, 0x10000)) & (cps <= hi)).sum())
    return n


def _classes(cps: Any) -> tuple[int, int, int]:
    """(CJK, digits, whitespace) among code points."""
    import numpy as np

    counts = np.bincount(_class_table()[np.minimum(cps, 0xFFFF)], minlength=4).tolist()
    cjk = counts[_CJK]
    if len(cps) and int(cps.max()) > 0xFFFF:
        cjk += _astral_cjk(cps)
    return cjk, counts[_DIGIT], counts[_SPACE]


def is_cjk(ch: str) -> bool:
    """Whether one character is CJK."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def cjk_count(text: str) -> int:
    """How many characters of `text` are CJK."""
    if text.isascii():
        return 0
    return _classes(_code_points(text))[0]


def text_counts(text: str) -> tuple[int, int, int, int, int]:
    """(UTF-16 length, code points, CJK, digits, whitespace) of `text`, in one pass: the length
    JavaScript sees and the classes (the other characters are code points - CJK - digits - whitespace)."""
    if text.isascii():
        b = text.encode("ascii")
        n = len(b)
        return n, n, 0, n - len(b.translate(None, _DIGITS)), n - len(b.translate(None, _SPACES))
    import numpy as np

    b16 = text.encode("utf-16-le", "surrogatepass")
    n16 = len(b16) // 2
    if n16 == len(text):  # no code point beyond the BMP: the UTF-16 units are the code points
        cls = _class_table()[np.frombuffer(b16, dtype=np.uint16)]
        return (n16, n16, int(np.count_nonzero(cls == _CJK)), int(np.count_nonzero(cls == _DIGIT)),
                int(np.count_nonzero(cls == _SPACE)))
    cps = _code_points(text)
    cjk, digits, space = _classes(cps)
    return n16, len(cps), cjk, digits, space
