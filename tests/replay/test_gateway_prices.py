"""Replay prices a gateway's model Claude Code records under `anthropic` (MiniMax, GLM, DeepSeek ids)
from the agents' price list inspect uses, when the catalogue lacks it and its rates do not change with
the time of day; DeepSeek V4 (billed by the hour from 2026-08-16) stays unknown in replay, never $0."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sessiontools.cli import main
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "claude-code" / "claude-2.0.77.jsonl"


def _replay(tmp_path: Path, model: str) -> dict:  # type: ignore[type-arg]
    if not SAMPLE.exists():
        pytest.skip("sample_sessions/claude-code is empty")
    f = tmp_path / f"{model}.jsonl"
    f.write_bytes(re.sub(rb'"model":"claude-[^"]*"', f'"model":"{model}"'.encode(), SAMPLE.read_bytes()))
    out = tmp_path / f"{model}.json"
    assert main(["replay", str(f), "--format", "json", "-o", str(out)]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    return run  # type: ignore[no-any-return]


def test_a_gateway_model_the_catalogue_lacks_is_priced_from_the_agent_price_list(tmp_path: Path) -> None:
    run = _replay(tmp_path, "MiniMax-M2.7")
    assert run["prices"]["source"] == "agent prices"
    assert run["prices"]["per_million"] == pytest.approx(
        {"input": 0.3, "output": 1.2, "cache_read": 0.06, "cache_write": 0.375})
    assert run["metrics"]["cost_agent"] > 0


def test_rates_by_the_hour_are_not_flattened_into_one_price(tmp_path: Path) -> None:
    run = _replay(tmp_path, "deepseek-v4-pro")
    assert run["prices"]["source"] == "none" and run["metrics"]["cost"] is None
