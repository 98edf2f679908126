"""A transcript message's text count: chars/4 of its text, or a tokenizer's count of its units
(`text_counter`, `chars4`). Re-exported by `policies.base`."""

from __future__ import annotations

from typing import Any


def text_counter(tokenizer: str | None) -> Any:
    """`Message -> tokens` of a transcript message's text units: chars/4 of its text (None), or
    tokenizer `tokenizer`'s count of its units, 1200 per image, cached by content (`tokens.registry`)."""
    if tokenizer is None:
        return _text_chars4
    from sessiontools.tokens.registry import shared_units_counter

    count = shared_units_counter(tokenizer)

    def by_tokenizer(message: Any) -> int:
        units = message.units
        return count(tuple(u.text for u in units if u.text), sum(1 for u in units if u.kind == "image"))

    return by_tokenizer


def _text_chars4(message: Any) -> int:
    return chars4(len(message.text))


def chars4(chars: int) -> int:
    """ceil(chars / 4): the chars/4 estimate of a text."""
    return -(-chars // 4)
