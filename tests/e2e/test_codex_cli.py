"""End to end: the real Codex CLI (0.171.0, `codex exec` + `resume`) against the lab Responses server.

Installs the pinned CLI from npm at test time (lab.codex_env). The test FAILS when it cannot be
installed, unless SESSIONTOOLS_SKIP_CODEX=1 is set. About 10 s once installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.codex_driver import CodexRecording, record
from lab.codex_env import SKIP_ENV, CodexUnavailable, ensure_codex, skip_requested
from lab.codex_manifest import analyze


def _ensure() -> None:
    if skip_requested():
        pytest.skip(f"{SKIP_ENV}=1: the Codex CLI end-to-end test is switched off")
    try:
        ensure_codex()
    except CodexUnavailable as exc:
        pytest.fail(f"the pinned Codex CLI cannot be installed ({exc}); set {SKIP_ENV}=1 to skip", pytrace=False)


@pytest.mark.e2e
def test_real_codex_writes_a_rollout_with_compactions(tmp_path: Path) -> None:
    _ensure()
    rec = CodexRecording("e2e-codex", seed=71, prompts=5, context_window=64000, auto_compact_limit=15500)
    out = tmp_path / "rollout.jsonl"
    result = record(rec, out, workroot=tmp_path / "work", timeout=60)
    assert all(r.returncode == 0 for r in result.runs), [r.stderr for r in result.runs if r.returncode]
    assert result.seconds < 60, f"recording took {result.seconds:.0f}s"

    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["cli_version"] == "0.171.0"
    types = {x["type"] for x in lines}
    assert {"session_meta", "turn_context", "response_item", "event_msg", "compacted"} <= types
    events = {x["payload"].get("type") for x in lines if x["type"] == "event_msg"}
    assert {"task_started", "token_count", "task_complete"} <= events
    items = {x["payload"].get("type") for x in lines if x["type"] == "response_item"}
    assert {"message", "function_call", "function_call_output"} <= items
    calls = [json.loads(x["payload"]["arguments"]) for x in lines
             if x["type"] == "response_item" and x["payload"].get("type") == "function_call"]
    assert calls and all("cmd" in c for c in calls)

    # The server saw what the rollout records: compaction requests marked by Codex's header.
    kinds = [r.kind for r in result.requests]
    compacted = [x for x in lines if x["type"] == "compacted"]
    assert len(compacted) >= 1 and kinds.count("compaction") == len(compacted)
    assert all("- Summary generation: " in c["payload"]["message"] for c in compacted)
    assert any(r.cached_tokens > 0 for r in result.requests), "prefix cache never hit"

    # Codex's rule: fired when last total + bytes/4 of the newer items reaches the limit.
    facts = analyze(out)
    assert facts.user_prompts == 5 and facts.overflows == 0
    for c in facts.compactions:
        assert c.tokens_before is not None and c.tokens_before + c.estimate_after >= rec.auto_compact_limit
