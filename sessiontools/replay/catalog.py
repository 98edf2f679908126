"""Context windows and prices of common models.

`sessiontools/data/models.json` is extracted from the model catalogue shipped inside the pinned
`@earendil-works/pi-ai` package (see its `source` and `extracted` fields; regenerate with
`node lab/extract_models.mjs <pi-ai dir>`). It covers Anthropic, OpenAI (+ Codex), Google,
DeepSeek, Z.ai (GLM), Qwen, xAI, Mistral, Moonshot/Kimi and MiniMax models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str
    id: str
    context_window: int
    max_tokens: int | None
    prices: dict[str, float] | None  # dollars per token: input, output, cache_read, cache_write


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Any]:
    """The bundled catalogue (parsed once)."""
    return orjson.loads(resources.files("sessiontools").joinpath("data/models.json").read_bytes())


def _info(m: dict[str, Any]) -> ModelInfo:
    cost = m.get("cost_per_million")
    prices = {k: float(v) / 1e6 for k, v in cost.items()} if cost else None
    return ModelInfo(m["provider"], m["id"], int(m["context_window"]), m.get("max_tokens"), prices)


_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def lookup(provider: str | None, model: str | None) -> ModelInfo | None:
    """The catalogue entry for a recorded provider/model: exact, then by id, then without a date suffix."""
    if not model:
        return None
    models = catalogue()["models"]
    for m in models:
        if m["id"] == model and m["provider"] == provider:
            return _info(m)
    for m in models:
        if m["id"] == model:
            return _info(m)
    bare = _DATE_SUFFIX.sub("", model)
    for m in models:
        if _DATE_SUFFIX.sub("", m["id"]) == bare:
            return _info(m)
    return None
