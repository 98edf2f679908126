"""inspect's cost line says where the cost comes from, and never shows $0 for a session no model of
which has a price (issue 25: "recorded cost $0.0000" for agents that record no cost)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read.sources import load_source
from sessiontools.report.inspect import cost_text, inspect_headline, inspect_table, inspect_totals_table

ROOT = Path(__file__).resolve().parents[2]


def _render(renderable) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    Console(file=buf, width=160, color_system=None).print(renderable)
    return buf.getvalue()


def test_cost_text_by_source() -> None:
    assert cost_text({"cost": 1.5, "cost_source": "recorded"}) == "$1.5000 (recorded)"
    assert cost_text({"cost": 0.25, "cost_source": "catalogue"}) == "$0.2500 (catalogue prices)"
    text = cost_text({"cost": None, "cost_source": "none", "unpriced_models": {"lab/lab-model": 3}})
    assert text.startswith("none") and "lab/lab-model" in text and "$" not in text
    part = cost_text({"cost": 0.5, "cost_source": "catalogue", "unpriced_requests": 2,
                      "unpriced_models": {"anthropic/glm-4.7": 2}})
    assert "2 request(s) of anthropic/glm-4.7 not priced" in part


def test_unpriced_codex_sample_shows_no_dollar_amount_and_priced_claude_does() -> None:
    codex = inspect_source(load_source(ROOT / "sample_sessions" / "codex" / "codex-pair-a.jsonl"))
    claude = inspect_source(load_source(ROOT / "sample_sessions" / "claude-code" / "claude-manual.jsonl"))
    assert codex["cost"] is None and codex["cost_source"] == "none"
    out = _render(inspect_table(codex))
    assert "$0.0000" not in out and "none (no recorded cost" in out
    assert claude["cost_source"] == "catalogue" and claude["cost"] > 0
    assert "(catalogue prices)" in _render(inspect_table(claude))
    totals = _render(inspect_totals_table([codex, claude]))
    assert "-" in totals
    head = inspect_headline([codex, claude])
    assert "(1 session(s) without a price)" in head and "recorded cost" not in head
