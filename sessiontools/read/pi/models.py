"""Pi's `models.json` (custom providers' windows and prices): `{"providers": {NAME: {"models": [{"id",
"contextWindow", "maxTokens", "cost": {"input", "output", "cacheRead", "cacheWrite"}}]}}}`, dollars per
million tokens (`replay.catalog` makes its `ModelInfo` of each row)."""

from __future__ import annotations

from typing import Any

import orjson

from sessiontools.errors import InputError
from sessiontools.read.values import real

#: The window Pi's model registry gives a models.json model without `contextWindow` (0.73.1
#: `model-registry.js`, 1.6.0 `provider-composer.js`: `contextWindow ?? 128000`): it ran with that window.
DEFAULT_CONTEXT_WINDOW = 128000

#: One model: (provider, id, context window, max tokens, dollars per token by class or None).
ModelRow = tuple[str, str, int, Any, dict[str, float] | None]


def read_models(data: bytes, source: str) -> list[ModelRow]:
    """The models of a file in Pi's `models.json` format (custom providers)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON ({exc})") from exc
    providers = doc.get("providers") if isinstance(doc, dict) else None
    if not isinstance(providers, dict):
        raise InputError(f"{source}: no \"providers\" object (Pi's models.json format)")
    out: list[ModelRow] = []
    for name, prov in providers.items():
        for m in (prov.get("models") or []) if isinstance(prov, dict) else []:
            if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                continue
            window = real(m.get("contextWindow"), None) if "contextWindow" in m else DEFAULT_CONTEXT_WINDOW
            if window is None or window <= 0:
                continue
            cost = m.get("cost") if isinstance(m.get("cost"), dict) else None
            prices = None
            if cost is not None:
                keys = (("input", "input"), ("output", "output"), ("cache_read", "cacheRead"), ("cache_write", "cacheWrite"))
                prices = {ours: real(cost.get(theirs)) / 1e6 for ours, theirs in keys}
            out.append((str(name), m["id"], int(window), m.get("maxTokens"), prices))
    return out
