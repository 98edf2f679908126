"""Write the ``agent_prices`` section of ``sessiontools/data/models.json`` from LiteLLM's price list.

    python -m lab.extract_prices <model_prices_and_context_window.json> [--litellm-version V]

The list is LiteLLM's ``model_prices_and_context_window.json`` (the PyPI ``litellm`` wheel ships it
as ``litellm/model_prices_and_context_window_backup.json``); it is what ccusage prices with (its
``pricing.rs`` embeds it at build time). Kept: the chat models of the two providers whose CLIs
sessiontools reads without a recorded cost (Claude Code: ``litellm_provider`` ``anthropic``; Codex:
``openai``), the models of the Anthropic-compatible gateways Claude Code users point
``ANTHROPIC_BASE_URL`` at (``minimax``, ``zai``: `GATEWAY_PROVIDERS`), and the Anthropic models LiteLLM lists only under Bedrock now
(``anthropic.<id>-v1:0``, the same list prices), so older transcripts stay priced.

Per model, dollars per million tokens: ``input``, ``output``, ``cache_read``, ``cache_write`` (the
5-minute write), ``cache_write_1h`` (LiteLLM's ``..._above_1hr``, else twice the input price: the
1-hour write, as Anthropic and ccusage price it); ``long_context``: the rates above a prompt of
``above_tokens`` (LiteLLM's ``..._above_200k_tokens`` / ``..._above_272k_tokens``), filled from the
Bedrock twin when the Anthropic entry lacks them. Nothing else in models.json is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "sessiontools" / "data" / "models.json"
#: Providers whose Anthropic-compatible endpoints Claude Code users reach through ANTHROPIC_BASE_URL
#: (the transcript records their own model ids: `MiniMax-M2.1`, `glm-4.7`); ccusage prices those ids
#: with LiteLLM's `minimax/...` and `zai/...` entries (to the cent on the real files).
GATEWAY_PROVIDERS = ("minimax", "zai")
_OPENAI = re.compile(r"^(gpt-4\.1|gpt-5|o3|o4|codex)")
_CLASSES = (("input", "input_cost_per_token"), ("output", "output_cost_per_token"),
            ("cache_read", "cache_read_input_token_cost"), ("cache_write", "cache_creation_input_token_cost"))


def _per_million(v: Any) -> float | None:
    return round(float(v) * 1e6, 6) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _rates(e: dict[str, Any], suffix: str = "") -> dict[str, float]:
    out = {}
    for ours, theirs in _CLASSES:
        v = _per_million(e.get(theirs + suffix))
        if v is not None:
            out[ours] = v
    return out


def _entry(provider: str, model_id: str, e: dict[str, Any], twin: dict[str, Any] | None) -> dict[str, Any] | None:
    base = _rates(e)
    if "input" not in base or "output" not in base:
        return None
    base.setdefault("cache_read", 0.0)
    base.setdefault("cache_write", 0.0)
    if provider == "anthropic":
        hour = _per_million(e.get("cache_creation_input_token_cost_above_1hr"))
        base["cache_write_1h"] = hour if hour is not None else round(base["input"] * 2, 6)
    out: dict[str, Any] = {"provider": provider, "id": model_id, "cost_per_million": base}
    window = e.get("max_input_tokens")
    if isinstance(window, int):
        out["context_window"] = window
    for above in (200_000, 272_000):
        suffix = f"_above_{above // 1000}k_tokens"
        tier = _rates(e, suffix) or (_rates(twin, suffix) if twin else {})
        if tier:
            filled = {k: tier.get(k, base.get(k, 0.0)) for k in ("input", "output", "cache_read", "cache_write")}
            if provider == "anthropic":
                filled["cache_write_1h"] = round(filled["input"] * 2, 6)
            out["long_context"] = {"above_tokens": above, "cost_per_million": filled}
            break
    return out


def extract(prices: dict[str, Any]) -> list[dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, e in prices.items():
        if not isinstance(e, dict) or e.get("mode") not in ("chat", "responses"):
            continue
        prov = e.get("litellm_provider")
        if prov == "anthropic" and key.startswith("claude-"):
            twin = next((v for k, v in prices.items()
                         if re.fullmatch(rf"anthropic\.{re.escape(key)}(?:-\d{{8}})?-v\d+(?::\d+)?", k)), None)
            m = _entry("anthropic", key, e, twin)
        elif prov == "openai" and _OPENAI.match(key):
            m = _entry("openai", key, e, None)
        elif prov in GATEWAY_PROVIDERS and key.startswith(f"{prov}/"):
            key = key.split("/", 1)[1]
            m = _entry(prov, key, e, None)
            if m:
                m["via"] = f"{prov}/{key}"
        else:
            continue
        if m:
            out[(prov, key)] = m
    # Anthropic models LiteLLM lists only under Bedrock (retired from its anthropic section)
    for key, e in prices.items():
        mm = re.fullmatch(r"anthropic\.(claude-[a-z0-9-]+?)-v\d+(?::\d+)?", key)
        if mm and isinstance(e, dict) and ("anthropic", mm.group(1)) not in out:
            m = _entry("anthropic", mm.group(1), e, None)
            if m:
                m["via"] = key
                out[("anthropic", mm.group(1))] = m
    return [out[k] for k in sorted(out)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prices", type=Path)
    ap.add_argument("--litellm-version", default="?")
    args = ap.parse_args()
    prices = json.loads(args.prices.read_text())
    doc = json.loads(MODELS.read_text())
    models = extract(prices)
    doc["agent_prices"] = {
        "source": f"LiteLLM model_prices_and_context_window.json (PyPI litellm {args.litellm_version}), "
                  "as ccusage 20 prices Claude Code and Codex sessions; lab/extract_prices.py",
        "rules": "dollars per million tokens; cache_write = 5-minute write, cache_write_1h = 1-hour write; "
                 "long_context rates apply to every class of a request whose prompt (input + cache read + "
                 "cache write) exceeds above_tokens",
        "models": models,
    }
    text = _dump(doc)
    fd, tmp = tempfile.mkstemp(dir=MODELS.parent, prefix=".models-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, MODELS)
    print(f"{len(models)} agent prices written to {MODELS}")
    return 0


def _dump(doc: dict[str, Any]) -> str:
    """models.json's layout: one model per line (as lab/extract_models.mjs writes it)."""
    head = {k: v for k, v in doc.items() if k not in ("models", "agent_prices")}
    lines = ["{"]
    lines += [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines.append(' "models": [')
    lines.append(",\n".join("  " + json.dumps(m, separators=(",", ":")) for m in doc["models"]))
    lines.append(" ],")
    ap = doc["agent_prices"]
    lines.append(' "agent_prices": {')
    lines.append(f'  "source": {json.dumps(ap["source"])},')
    lines.append(f'  "rules": {json.dumps(ap["rules"])},')
    lines.append('  "models": [')
    lines.append(",\n".join("   " + json.dumps(m, separators=(",", ":")) for m in ap["models"]))
    lines.append("  ]")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
