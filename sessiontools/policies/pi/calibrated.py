"""Pi's calibrated hybrid (for replay): Pi's own check point with the messages after the newest trusted
usage counted by a calibrated feature model instead of chars/4 (`tokens.features.calibrated_hybrid`,
the same number `tokens.hybrid` gives estimate-error from the neutral transcript)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def pi_calibrated_hybrid(messages: Sequence[Any], pi_version: str, model: Any,
                         model_encoding: str = "o200k_base") -> float:
    """The calibrated hybrid for a Pi context (for replay): Pi's own check point (last trusted usage,
    `estimateContextTokens`) with the trailing messages counted by `model` (a
    `tokens.features.FeatureModel`, e.g. `load_calibration(...).lookup(provider, model_id)`) instead
    of chars/4; with no trusted usage, `model` over the whole context.

    `messages`: Pi's message dicts of the context (as `build_context` gives them).
    `model_encoding`: the tokenizer of the `model` feature,
    `tokens.registry.calibration_encoding_for(provider, model_id)` (o200k when the model has none).
    """
    from sessiontools.policies.pi.usage import estimate_context_tokens
    from sessiontools.tokens.features import calibrated_hybrid, message_features

    est = estimate_context_tokens(messages, pi_version)
    need = getattr(model, "tokenizers", ())
    full = message_features(messages, pi_version, need, model_encoding)
    if est.last_usage_index is None:
        return calibrated_hybrid(None, full, full, model)
    trailing = message_features(messages[est.last_usage_index + 1:], pi_version, need, model_encoding)
    return calibrated_hybrid(est.usage_tokens, trailing, full, model)
