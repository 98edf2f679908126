"""End to end: the real Claude Code CLI (2.1.332, print mode) against the lab server's Anthropic API.

The CLI is installed from npm at test time (``lab.claude_env``, into ``.cache/claude``). When it
cannot be installed the test FAILS, unless ``SESSIONTOOLS_SKIP_CLAUDE=1``. Two short recordings
(about 10 s together): a threshold run that must compact automatically, and a manual ``/compact``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.claude_driver import ClaudeRecording, record_claude
from lab.claude_env import SKIP_ENV, ClaudeUnavailable, ensure_claude, skip_requested


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def claude() -> None:
    try:
        ensure_claude()
    except ClaudeUnavailable as exc:
        if skip_requested():
            pytest.skip(f"{SKIP_ENV}=1: {exc}")
        pytest.fail(f"Claude Code cannot be installed ({exc}); set {SKIP_ENV}=1 to skip", pytrace=False)


@pytest.mark.e2e
def test_threshold_compaction_is_written(claude: None, tmp_path: Path) -> None:
    rec = ClaudeRecording("e2e-threshold", seed=3, prompts=2, profile="heavy", auto_window=100000, pct=14)
    out = tmp_path / "t.jsonl"
    res = record_claude(rec, out, workroot=tmp_path / "work", timeout=60)
    assert all(r.returncode == 0 for r in res.runs), [r.stderr for r in res.runs]
    assert res.seconds < 60
    assert res.mismatches == []
    lines = _lines(out)
    boundaries = [e for e in lines if e.get("type") == "system" and e.get("subtype") == "compact_boundary"]
    assert boundaries, "no compact_boundary: the threshold (11200) was never reached"
    meta = boundaries[0]["compactMetadata"]
    assert meta["trigger"] == "auto" and meta["preTokens"] > meta["postTokens"] > 0
    assert boundaries[0]["parentUuid"] is None and boundaries[0]["logicalParentUuid"]
    summaries = [e for e in lines if e.get("isCompactSummary")]
    assert len(summaries) == len(boundaries)
    assert "- Summary generation: 1" in summaries[0]["message"]["content"]
    kinds = [q.kind for q in res.requests]
    assert kinds.count("summarise") == len(boundaries)
    # usage as the server reported it, prefix cache included
    usage = [e["message"]["usage"] for e in lines if e.get("type") == "assistant"]
    assert any(u["cache_read_input_tokens"] > 0 for u in usage)
    tools = {b["name"] for e in lines if e.get("type") == "assistant" for b in e["message"]["content"]
             if b.get("type") == "tool_use"}
    assert tools >= {"Read", "Bash"}


@pytest.mark.e2e
def test_manual_compact_in_print_mode(claude: None, tmp_path: Path) -> None:
    rec = ClaudeRecording("e2e-manual", seed=5, prompts=2, manual_after=(0,))
    out = tmp_path / "m.jsonl"
    res = record_claude(rec, out, workroot=tmp_path / "work", timeout=60)
    assert all(r.returncode == 0 for r in res.runs), [r.stderr for r in res.runs]
    boundaries = [e for e in _lines(out) if e.get("subtype") == "compact_boundary"]
    assert [b["compactMetadata"]["trigger"] for b in boundaries] == ["manual"]


@pytest.mark.e2e
def test_js_release_does_not_compact_on_prompt_too_long(tmp_path: Path) -> None:
    """Claude Code 2.1.112 (the last JS release, installed from npm at test time) against a lab limit
    of 13,000 tokens: the request that no longer fits gets the API's "prompt is too long", the CLI
    writes it as a synthetic reply and exits 1; it never compacts (no boundary). The replay under its
    own rule agrees (the request fails, no compaction); under 2.1.332's rule it would compact."""
    try:
        ensure_claude("2.1.112")
    except ClaudeUnavailable as exc:
        if skip_requested():
            pytest.skip(f"{SKIP_ENV}=1: {exc}")
        pytest.fail(f"Claude Code 2.1.112 cannot be installed ({exc}); set {SKIP_ENV}=1 to skip", pytrace=False)
    from sessiontools.replay.transcripts import replay_transcript
    from sessiontools.transcript.claude_code import load_claude_transcript

    rec = ClaudeRecording("e2e-2.1.112-too-long", seed=3, prompts=3, profile="heavy", server_window=13000,
                          version="2.1.112", model="claude-sonnet-4-5")
    out = tmp_path / "r.jsonl"
    res = record_claude(rec, out, workroot=tmp_path / "work", timeout=120)
    assert res.runs[0].returncode == 0 and any(r.returncode == 1 for r in res.runs[1:])
    lines = _lines(out)
    assert not any(d.get("subtype") == "compact_boundary" for d in lines)
    assert any(d.get("isApiErrorMessage") and "Prompt is too long" in json.dumps(d.get("message")) for d in lines)
    t = load_claude_transcript(out)
    (own,) = replay_transcript(t, windows=[13000], reserves=[0], keeps=[0], policy=None)
    assert own.runs[0].compactions == [] and own.runs[0].failed_recoveries >= 1
    (new,) = replay_transcript(t, windows=[13000], reserves=[0], keeps=[0], policy=None, version="2.1.332")
    assert len(new.runs[0].compactions) >= 1
