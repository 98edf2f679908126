"""Context windows and prices of models: the bundled catalogue, Pi's own `models.json`, `--models`.

`sessiontools/data/models.json` is extracted from the model catalogue shipped inside
`@earendil-works/pi-ai` (every provider module; see its `source` and `extracted` fields; regenerate
with `node lab/extract_models.mjs <pi-ai dir>`). Users add or override models with files in Pi's own
`models.json` format (`{"providers": {NAME: {"models": [{"id", "contextWindow", "maxTokens",
"cost": {"input", "output", "cacheRead", "cacheWrite"}}]}}}`, dollars per million tokens): the CLI
passes `$PI_CODING_AGENT_DIR/models.json` when it exists and every `--models PATH`; core code never
reads the environment.

Lookup is by (provider, model id): exact in the user's files, then exact in the bundled catalogue,
then the same provider without a date suffix (`-20250929`). A model id is never taken from another
provider (a custom provider's GLM-5 is not z.ai's GLM-5): it is "not in the catalogue" instead. Only
a file that records no provider at all is matched by id alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import orjson

from sessiontools.errors import InputError
from sessiontools.read.values import real


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str
    id: str
    context_window: int
    max_tokens: int | None
    prices: dict[str, float] | None  # dollars per token: input, output, cache_read, cache_write
    source: str = "bundled"  # "bundled" or the path of the models.json it came from


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Any]:
    """The bundled catalogue (parsed once)."""
    return orjson.loads(resources.files("sessiontools").joinpath("data/models.json").read_bytes())


def _info(m: dict[str, Any]) -> ModelInfo:
    cost = m.get("cost_per_million")
    prices = {k: float(v) / 1e6 for k, v in cost.items()} if cost else None
    return ModelInfo(m["provider"], m["id"], int(m["context_window"]), m.get("max_tokens"), prices)


def read_model_file(data: bytes, source: str) -> list[ModelInfo]:
    """The models of a models.json file (custom providers' windows and prices), in the format of the
    default agent home's (`read.sources.read_models_file`)."""
    from sessiontools.read.sources import read_models_file

    return [ModelInfo(provider, mid, window, max_tokens, prices, source)
            for provider, mid, window, max_tokens, prices in read_models_file(data, source)]


_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def lookup(provider: str | None, model: str | None, extra: Sequence[ModelInfo] = ()) -> ModelInfo | None:
    """The entry for a recorded provider/model (see the module docstring), or None."""
    if not model:
        return None
    for m in extra:
        if m.id == model and m.provider == provider:
            return m
    models = catalogue()["models"]
    if provider is None:
        hit = next((m for m in models if m["id"] == model), None)
        return _info(hit) if hit else None
    for m in models:
        if m["id"] == model and m["provider"] == provider:
            return _info(m)
    bare = _DATE_SUFFIX.sub("", model)
    for m in models:
        if m["provider"] == provider and _DATE_SUFFIX.sub("", m["id"]) == bare:
            return _info(m)
    return None


def load_model_files(paths: Iterable[str]) -> tuple[ModelInfo, ...]:
    """Models from files in Pi's `models.json` format, later files first (they override)."""
    out: list[ModelInfo] = []
    for p in reversed(list(paths)):
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise InputError(f"{p}: cannot read ({exc.strerror})") from exc
        out.extend(read_model_file(data, p))
    return tuple(out)


def recorded_prices(costs: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> dict[str, float] | None:
    """Per-token prices by class implied by itemised recorded costs: (usage, usage.cost) pairs with
    Pi's keys (input, output, cacheRead, cacheWrite). A class with no tokens gets no price."""
    keys = (("input", "input"), ("output", "output"), ("cache_read", "cacheRead"), ("cache_write", "cacheWrite"))
    tokens = dict.fromkeys((k for k, _ in keys), 0.0)
    dollars = dict.fromkeys((k for k, _ in keys), 0.0)
    for usage, cost in costs:
        for ours, theirs in keys:
            tokens[ours] += real(usage.get(theirs))
            dollars[ours] += real(cost.get(theirs))
    if not any(dollars.values()):
        return None
    return {k: dollars[k] / tokens[k] for k in tokens if tokens[k] > 0}
