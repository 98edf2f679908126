"""Write ``sessiontools/data/agent_prices.json`` (the price table of `transcript.prices`) from LiteLLM's price list.

    python -m lab.extract_prices <model_prices_and_context_window.json> [--litellm-version V]
        [--models-dev GIT_DIR --models-dev-commit REV]

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
Bedrock twin when the Anthropic entry lacks them. models.json (Pi's catalogue, lab/extract_models.mjs)
is not touched.

``--models-dev``: a clone of the models.dev catalogue (the ``anomalyco/models.dev`` repository; a
bare clone will do) read at ``--models-dev-commit``. ccusage 20.0.24 embeds a models.dev snapshot
next to its LiteLLM one and prices from it the ids LiteLLM lacks (the gateway models DeepSeek and
MiniMax users record: ``deepseek-v4-pro``, ``MiniMax-M2.7``). The first-party providers of those
gateways (`MODELS_DEV_PROVIDERS`) are added for every id LiteLLM does not price:
``providers/<p>/models/<id>.toml`` ``[cost]`` ``input`` / ``output`` / ``cache_read`` (0 when absent)
/ ``cache_write`` (absent: the input price, as ccusage charges a write a catalogue gives no price
for: these providers cache automatically and bill a cache miss as input), ``[limit] context``;
``via`` names the file. LiteLLM's entry wins where both have one. ``periods``: rates from a date on,
with a ``peak`` window (DeepSeek's V4 billing from 2026-08-16: `DEEPSEEK_PERIODS`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "sessiontools" / "data" / "agent_prices.json"
#: Providers whose Anthropic-compatible endpoints Claude Code users reach through ANTHROPIC_BASE_URL
#: (the transcript records their own model ids: `MiniMax-M2.1`, `glm-4.7`); ccusage prices those ids
#: with LiteLLM's `minimax/...` and `zai/...` entries (to the cent on the real files).
GATEWAY_PROVIDERS = ("minimax", "zai")
#: models.dev providers read with --models-dev: the first-party APIs of gateway models LiteLLM lacks.
MODELS_DEV_PROVIDERS = ("deepseek", "minimax")
#: models.dev ids left out: aliases DeepSeek re-points at its current model (V3, V3.2, V4 Flash), so
#: one catalogue date's price misprices sessions of another; ccusage 20.0.24 does not charge them
#: this entry either (a million tokens of each class: $0.70 and $3.01, against this entry's $0.5628).
MODELS_DEV_SKIP = frozenset({("deepseek", "deepseek-chat"), ("deepseek", "deepseek-reasoner")})
#: DeepSeek's peak / off-peak billing of V4 from 2026-08-16 16:00 UTC: models.dev states it in comments
#: (its schema has no time of day): providers/deepseek/models/deepseek-v4-pro.toml at 2b3ef3b67d7d
#: ([cost] = the peak rate 1.32 / 3.96 / 0.044, off-peak half) and deepseek-v4-flash.toml at
#: 21846c48e59b ([cost] = the off-peak rate 0.22 / 0.66 / 0.007, peak double, Mon-Fri), both citing
#: DeepSeek's pricing page. Peak is 01:00-04:00 and 06:00-10:00 UTC, Monday to Friday. ccusage 20.0.24
#: bills the same (bisected on one-line sessions: the switch at 16:00:00, the hour edges, weekends).
PEAK_HOURS_UTC = [[1, 4], [6, 10]]
PEAK_DAYS = "Mon-Fri"
DEEPSEEK_PERIODS = {
    "deepseek-v4-pro": ("2026-08-16T16:00:00Z", {"input": 0.66, "output": 1.98, "cache_read": 0.022},
                        {"input": 1.32, "output": 3.96, "cache_read": 0.044}),
    "deepseek-v4-flash": ("2026-08-16T16:00:00Z", {"input": 0.22, "output": 0.66, "cache_read": 0.007},
                          {"input": 0.44, "output": 1.32, "cache_read": 0.014}),
}
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


def models_dev_entry(provider: str, model_id: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """One models.dev model file as an `agent_prices` entry (see the module docstring), or None."""
    cost = doc.get("cost") or {}
    inp, out = _number(cost.get("input")), _number(cost.get("output"))
    if inp is None or out is None:
        return None
    read, write = _number(cost.get("cache_read")), _number(cost.get("cache_write"))
    rates = {"input": inp, "output": out, "cache_read": 0.0 if read is None else read,
             "cache_write": inp if write is None else write}
    m: dict[str, Any] = {"provider": provider, "id": model_id, "cost_per_million": rates}
    window = (doc.get("limit") or {}).get("context")
    if isinstance(window, int):
        m["context_window"] = window
    m["via"] = f"models.dev providers/{provider}/models/{model_id}.toml"
    if provider == "deepseek" and model_id in DEEPSEEK_PERIODS:
        start, off_peak, peak = DEEPSEEK_PERIODS[model_id]
        m["periods"] = [{"from": start, "cost_per_million": _with_write(off_peak),
                         "peak": {"days": PEAK_DAYS, "hours_utc": PEAK_HOURS_UTC, "cost_per_million": _with_write(peak)}}]
    return m


def _with_write(rates: dict[str, float]) -> dict[str, float]:
    return {**rates, "cache_write": rates["input"]}


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def models_dev(git_dir: Path, commit: str) -> list[dict[str, Any]]:
    """The `MODELS_DEV_PROVIDERS` models of a models.dev clone at `commit`."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "--git-dir", str(git_dir), *a], check=True, capture_output=True,
                              text=True).stdout

    out = []
    for provider in MODELS_DEV_PROVIDERS:
        root = f"providers/{provider}/models/"
        for path in git("ls-tree", "-r", "--name-only", commit, root).split():
            model_id = path[len(root):-len(".toml")]
            if path.endswith(".toml") and (provider, model_id) not in MODELS_DEV_SKIP:
                m = models_dev_entry(provider, model_id, tomllib.loads(git("show", f"{commit}:{path}")))
                if m:
                    out.append(m)
    return out


def merge(litellm: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """LiteLLM's entries, then `extra`'s for the (provider, id) LiteLLM lacks, sorted as extract's."""
    have = {(m["provider"], m["id"].lower()) for m in litellm}
    added = [m for m in extra if (m["provider"], m["id"].lower()) not in have]
    return sorted(litellm + added, key=lambda m: (m["provider"], m["id"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prices", type=Path)
    ap.add_argument("--litellm-version", default="?")
    ap.add_argument("--models-dev", type=Path, help="a models.dev clone (git directory)")
    ap.add_argument("--models-dev-commit", default="HEAD")
    args = ap.parse_args()
    prices = json.loads(args.prices.read_text())
    models = extract(prices)
    source = (f"LiteLLM model_prices_and_context_window.json (PyPI litellm {args.litellm_version}), "
              "as ccusage 20 prices Claude Code and Codex sessions")
    if args.models_dev:
        commit = subprocess.run(["git", "--git-dir", str(args.models_dev), "rev-parse", args.models_dev_commit],
                                check=True, capture_output=True, text=True).stdout.strip()
        models = merge(models, models_dev(args.models_dev, commit))
        source += (f"; models.dev (anomalyco/models.dev at {commit[:12]}) providers "
                   f"{', '.join(MODELS_DEV_PROVIDERS)} for the ids LiteLLM lacks, as ccusage 20.0.24's "
                   "embedded models.dev snapshot prices them")
    table = {
        "source": source + "; lab/extract_prices.py",
        "rules": "dollars per million tokens; cache_write = 5-minute write, cache_write_1h = 1-hour write; "
                 "long_context rates apply to every class of a request whose prompt (input + cache read + "
                 "cache write) exceeds above_tokens",
        "models": models,
    }
    fd, tmp = tempfile.mkstemp(dir=TABLE.parent, prefix=".agent_prices-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        fh.write(_dump(table))
    os.replace(tmp, TABLE)
    print(f"{len(models)} agent prices written to {TABLE}")
    return 0


def _dump(table: dict[str, Any]) -> str:
    """The table's layout: one model per line (a refresh diffs line by line)."""
    lines = ["{", f' "source": {json.dumps(table["source"])},', f' "rules": {json.dumps(table["rules"])},', ' "models": [']
    lines.append(",\n".join("  " + json.dumps(m, separators=(",", ":")) for m in table["models"]))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
