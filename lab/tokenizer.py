"""Deterministic pseudo-tokenizer and prefix cache used by the lab model server.

Real providers count tokens with their own BPE vocabularies; Pi only estimates them as
``ceil(chars / 4)``.  The lab server needs a *different* but fully reproducible count so that the
usage Pi records (``input``, ``cacheRead``, ``output``) disagrees with chars/4 the way real usage
does, most of all for Chinese text.

Rules (documented in lab/README.md, keep both in sync):

* A character is CJK when its code point lies in one of ``CJK_RANGES`` (CJK ideographs, CJK
  punctuation, full-width forms, kana, Hangul).
* ``count(text) = ceil(n_other / chars_per_token) + ceil(n_cjk * cjk_tokens_per_char)``.
  Defaults: ``chars_per_token = 3.2`` and ``cjk_tokens_per_char = 1.0``.
* A chat request is split into *segments*: the tool definitions, then each message in order.
  Each segment costs ``count(segment text) + MESSAGE_OVERHEAD`` tokens (``MESSAGE_OVERHEAD = 4``);
  the prompt size is the sum over all segments.
* Prefix cache: segment *i* has the chain hash ``h_i = sha256(h_{i-1} + segment_i)``.  The cache
  remembers every chain hash it has stored.  For a new request, the cached prefix is the longest
  run of leading segments whose chain hashes are all known; ``cached_tokens`` is the token count of
  that prefix rounded *down* to a multiple of ``block`` (default 64) and never more than the prompt
  size.  After answering, all chain hashes of the request are stored.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # Half-width and full-width forms
    (0x20000, 0x2FA1F),  # CJK Extensions B-F and supplement
)

MESSAGE_OVERHEAD = 4


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    for lo, hi in CJK_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def cjk_count(text: str) -> int:
    """Number of CJK characters in ``text``."""
    return sum(1 for ch in text if ord(ch) >= 0x2E80 and is_cjk(ch))


@dataclass(frozen=True)
class PseudoTokenizer:
    """``ceil(other_chars / chars_per_token) + ceil(cjk_chars * cjk_tokens_per_char)``."""

    chars_per_token: float = 3.2
    cjk_tokens_per_char: float = 1.0

    def count(self, text: str) -> int:
        if not text:
            return 0
        n_cjk = cjk_count(text)
        n_other = len(text) - n_cjk
        return math.ceil(n_other / self.chars_per_token) + math.ceil(n_cjk * self.cjk_tokens_per_char)

    def count_segments(self, segments: Iterable[str]) -> list[int]:
        return [self.count(s) + MESSAGE_OVERHEAD for s in segments]


def _chain(prev: bytes, segment: str) -> bytes:
    return hashlib.sha256(prev + segment.encode("utf-8", "surrogatepass")).digest()


@dataclass
class PrefixCache:
    """Provider-side prefix cache over request segments (see module docstring)."""

    block: int = 64
    _seen: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup_and_store(self, segments: list[str], tokens: list[int]) -> int:
        """Return ``cached_tokens`` for this request, then remember its prefixes."""
        assert len(segments) == len(tokens)
        with self._lock:
            h = b""
            hashes = []
            for seg in segments:
                h = _chain(h, seg)
                hashes.append(h)
            cached = 0
            for hh, tok in zip(hashes, tokens, strict=True):
                if hh not in self._seen:
                    break
                cached += tok
            self._seen.update(hashes)
        total = sum(tokens)
        cached = (cached // self.block) * self.block if self.block > 0 else cached
        return min(cached, total)
