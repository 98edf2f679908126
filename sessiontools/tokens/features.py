"""Features of text that real tokenizers price differently, and the calibrated model over them.

A context is described by `FEATURES`: a fixed overhead (1), its messages (per-message framing),
CJK characters, other characters of prose (user and assistant text, thinking, summaries, system),
other characters of code (tool-call names and JSON arguments, tool output), digits, whitespace,
images and, when the run counts them, a real tokenizer's tokens (`TOKENIZER_FEATURES`: o200k,
cl100k, and `model`: the request's own model tokenizer, `tokens.registry`). The calibrated model predicts A = coef . features with every coefficient >= 0 and below a
physical bound (`UPPER`): with a tokenizer column it can say "A = 1.02 * o200k + 12 per message +
corrections for CJK or code", which a provider that counts with that tokenizer needs (a character
model cannot match o200k on OpenAI models). A tokenizer not counted in a run is a column of zeros:
its coefficient stays at its prior, 0. `FeatureModel.trailing` prices messages without the
overhead, which is what the calibrated hybrid adds to the agent's last recorded usage.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.tokens.chars4 import ALL, CountRules
from sessiontools.tokens.text import text_counts

#: The feature counted with each request's own model tokenizer (`tokens.registry`; o200k where the
#: model has none): its encoding depends on the model, not on the feature.
MODEL_FEATURE = "model"
#: Features whose value is a tokenizer's count of the context (tiktoken encodings by estimator name;
#: `model`: the model's own tokenizer).
TOKENIZER_FEATURES: dict[str, str | None] = {"o200k": "o200k_base", "cl100k": "cl100k_base", MODEL_FEATURE: None}
FEATURES = ("overhead", "messages", "cjk", "prose", "code", "digits", "space", "images", *TOKENIZER_FEATURES)
#: A tokenizer-agnostic starting point (tokens per unit): the root of the hierarchy shrinks toward it.
PRIOR = (0.0, 4.0, 1.0, 0.25, 0.3, 0.4, 0.1, 1200.0, 0.0, 0.0, 0.0)
#: Physical upper bounds per coefficient (tokens per unit): a fit beyond one is clipped and reported.
UPPER = (200_000.0, 500.0, 4.0, 2.0, 2.0, 2.0, 1.0, 10_000.0, 2.0, 2.0, 2.0)


def full_coef(coef: Sequence[float]) -> tuple[float, ...]:
    """`coef` padded with zeros to one value per FEATURES entry."""
    return (*coef, *[0.0] * (len(FEATURES) - len(coef)))


@dataclass(frozen=True, slots=True)
class FeatureModel:
    """A = coef . features (coef in FEATURES order; a shorter tuple, from before the tokenizer
    features, leaves them at 0)."""

    coef: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "coef", full_coef(self.coef))

    @property
    def tokenizers(self) -> tuple[str, ...]:
        """The tokenizer features this model uses (non-zero coefficient): their counts are needed."""
        return tuple(n for n, c in zip(FEATURES, self.coef, strict=False) if n in TOKENIZER_FEATURES and c)

    def predict(self, features: Sequence[float]) -> float:
        """Tokens of a whole context (overhead included); missing trailing features count 0."""
        return float(sum(c * f for c, f in zip(self.coef, features, strict=False)))

    def trailing(self, features: Sequence[float]) -> float:
        """Tokens of messages added to a context (no fixed overhead)."""
        return float(sum(c * f for c, f in zip(self.coef[1:], features[1:], strict=False)))

    def to_dict(self) -> dict[str, float]:
        return {name: round(c, 6) for name, c in zip(FEATURES, self.coef, strict=True)}


def text_features(units: Iterable[tuple[str, bool]], images: int = 0, messages: int = 1) -> tuple[int, ...]:
    """FEATURES of text units `(text, is_code)`, plus `images` and `messages` (overhead column = 1);
    the tokenizer features are 0 (`message_features` counts them)."""
    _, cjk, prose, code, digits, space = text_classes(units)
    return (1, messages, cjk, prose, code, digits, space, images, *[0] * len(TOKENIZER_FEATURES))


def text_classes(units: Iterable[tuple[str, bool]]) -> tuple[int, int, int, int, int, int]:
    """(UTF-16 length, cjk, prose, code, digits, space) of text units `(text, is_code)`: the text
    features (other characters are code or prose by the unit's flag) and the length the agent counts."""
    utf16 = cjk = prose = code = digits = space = 0
    for text, is_code in units:
        n16, total, c, d, s = text_counts(text)
        utf16 += n16
        cjk += c
        digits += d
        space += s
        if is_code:
            code += total - c - d - s
        else:
            prose += total - c - d - s
    return utf16, cjk, prose, code, digits, space


def message_code_units(message: Mapping[str, Any], rules: CountRules | str = ALL) -> tuple[list[tuple[str, bool]], int]:
    """(text units with is-code flags, images) of a message, over the units Pi's chars/4 counts."""
    from sessiontools.tokens.units import message_units

    units = message_units(message, rules)
    role = message.get("role")
    code = role in ("toolResult", "bashExecution")
    flags = [code] * len(units.texts)
    if role == "assistant":
        flags = assistant_code_flags(message, len(units.texts))
    return list(zip(units.texts, flags, strict=True)), units.images


def assistant_code_flags(message: Mapping[str, Any], n: int) -> list[bool]:
    """Which of an assistant message's text units are code (tool name, JSON arguments)."""
    out: list[bool] = []
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        t = block.get("type")
        if t in ("text", "thinking"):
            v = block.get(t)
            if isinstance(v, str) and v:
                out.append(False)
        elif t == "toolCall":
            out.extend([True] * (int(isinstance(block.get("name"), str) and bool(block.get("name"))) + 1))
    return out if len(out) == n else [False] * n


@functools.cache
def _counter(encoding: str) -> Any:
    """One counter per encoding for the process (its cache spans replay's check points)."""
    from sessiontools.tokens.tiktoken_counter import TiktokenCounter

    return TiktokenCounter(encoding, num_threads=1)


def message_features(messages: Sequence[Mapping[str, Any]], rules: CountRules | str = ALL,
                tokenizers: Sequence[str] = (), model_encoding: str = "o200k_base") -> tuple[int, ...]:
    """FEATURES of a list of messages (for replay: the trailing part of a check point); the
    tokenizer features named in `tokenizers` are counted (offline), the others are 0. The `model`
    feature is counted with `model_encoding`
    (`tokens.registry.calibration_encoding(tokens.registry.encoding_for(provider, model))`)."""
    units: list[tuple[str, bool]] = []
    images = 0
    for m in messages:
        u, im = message_code_units(m, rules)
        units.extend(u)
        images += im
    counts = [sum(_counter(enc or model_encoding).count_messages(messages, rules)) if name in tokenizers else 0
              for name, enc in TOKENIZER_FEATURES.items()]
    return (*text_features(units, images, len(messages))[:-len(counts)], *counts)


def calibrated_hybrid(usage_tokens: int | None, trailing: Sequence[float], full: Sequence[float],
                      model: FeatureModel) -> float:
    """The calibrated hybrid: the agent's last recorded usage plus the calibrated count of the
    messages after it; with no usable usage, the calibrated count of the whole context."""
    if usage_tokens is None:
        return max(0.0, model.predict(full))
    return usage_tokens + max(0.0, model.trailing(trailing))
