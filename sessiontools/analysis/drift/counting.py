"""How summary lengths are counted: o200k / cl100k (tiktoken, offline vocabulary) or Pi's chars/4.

When the vocabulary cannot be loaded the counter falls back to chars/4 and says why
(`fallback_reason`); the CLI prints that note.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from sessiontools.errors import UsageError
from sessiontools.jsvalues import utf16_len


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """How summary lengths are counted: a name for the output and the counting function."""

    name: str
    count: Callable[[str], int]
    fallback_reason: str | None = None


def chars4_tokens(text: str) -> int:
    """Pi's estimate for a text: ceil(UTF-16 length / 4)."""
    return math.ceil(utf16_len(text) / 4)


TOKENIZERS = ("o200k", "cl100k", "chars4")


def token_counter(name: str = "o200k") -> TokenCounter:
    """A counter by name (`o200k`, `cl100k` via `tokens.vocab`, or `chars4`); falls back to chars4."""
    if name == "chars4":
        return TokenCounter("chars4", chars4_tokens)
    encodings = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
    if name not in encodings:
        raise UsageError(f"unknown tokenizer {name!r} (choose from {', '.join(TOKENIZERS)})")
    enc_name = encodings[name]
    try:
        from sessiontools.tokens.vocab import get_encoding

        enc = get_encoding(enc_name)
        encode = getattr(enc, "encode_ordinary", None) or (lambda t: enc.encode(t, disallowed_special=()))
        encode("probe")
    except Exception as exc:  # the offline vocabulary is optional: say so and count chars/4
        return TokenCounter("chars4", chars4_tokens, f"{enc_name} is not available ({type(exc).__name__}: {exc})")
    return TokenCounter(enc_name, lambda t: len(encode(t)))

