"""Text normalisation and similarity used to match summary items.

CJK characters are the package's one definition (`sessiontools.tokens.text.CJK_RANGES`): CJK text
has no spaces, so similarity compares its characters one by one.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from sessiontools.tokens.text import CJK_OR_RUN_RE as _CJK_OR_RUN
from sessiontools.tokens.text import CJK_RE as CJK_CHARS

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"[^\W_](?:[\w./@:#+-]*[^\W_])?")
PLACEHOLDER = re.compile(
    r"^\((?:none|n/?a|nothing[^)]*|no [^)]*|not applicable|empty|unknown[^)]*)\)(?:\s*:.*)?$"
    r"|^(?:none|n/a|no prior history|no content to summarize|no summary generated)$"
)


def normalise(text: str) -> str:
    """Casefolded text without markdown emphasis, backticks, checkboxes and trailing punctuation."""
    t = unicodedata.normalize("NFKC", text)
    t = t.replace("**", "").replace("__", "").replace("`", "")
    t = re.sub(r"^\s*\[[ xX]\](?:\s+|$)", "", t)
    t = _WS.sub(" ", t).strip().casefold()
    return t.rstrip(" .:;,")


def tokens(key: str) -> Counter[str]:
    """Word tokens of a normalised text (CJK runs split into characters), with multiplicity."""
    out: Counter[str] = Counter()
    for tok in _TOKEN.findall(key):
        if CJK_CHARS.search(tok):  # no spaces in CJK text: compare characters
            for part in _CJK_OR_RUN.findall(tok):
                out[part] += 1
        else:
            out[tok] += 1
    return out


def dice(a: Counter[str], b: Counter[str], na: int, nb: int) -> float:
    if na + nb == 0:
        return 1.0
    return 2 * sum((a & b).values()) / (na + nb)


def text_similarity(a: str, b: str) -> float:
    """Dice coefficient of the word tokens of two texts (0..1; 1 for two empty texts)."""
    ta, tb = tokens(normalise(a)), tokens(normalise(b))
    return dice(ta, tb, sum(ta.values()), sum(tb.values()))
