"""Probe recordings of the native Claude Code releases around the 2.1.153 row boundary: the real CLI
(print mode, `lab.claude_driver.record_claude`, seed 3, 3 heavy prompts, model claude-sonnet-4-5)
against the lab server with a provider limit of 13,000 tokens (tests/fixtures/claude_probes).

- 2.1.150 (the 2.1.140 - 2.1.152 row; 2.1.152 recorded the same): the request that no longer fits
  gets "prompt is too long", written as a synthetic reply; the CLI exits 1 and never compacts, as the
  JS releases (no reactive compaction: `ClaudeCodeRule.reactive` False);
- 2.1.153: it compacts reactively (two `auto` boundaries at 13,133 and 6,027 tokens, each keeping
  the rounds of its `preservedSegment`) and retries (the row's `reactive`).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from sessiontools.policies.claude_code_rules import rule_for
from sessiontools.replay.transcripts import replay_transcript
from sessiontools.transcript.claude_code import load_claude_transcript
from sessiontools.transcript.model import Trigger

PROBES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_probes"


def _load(name: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(gzip.decompress((PROBES / f"{name}.jsonl.gz").read_bytes()))
    return load_claude_transcript(path, provider_limit=13_000)


def test_2_1_150_does_not_compact_on_prompt_too_long(tmp_path: Path) -> None:
    t = _load("claude-2.1.150-too-long", tmp_path)
    assert t.settings.get("version") == "2.1.150" and not rule_for("2.1.150").reactive
    assert not t.main.compactions and len(t.main.overflows) == 2
    (own,) = replay_transcript(t, windows=[13_000], reserves=[0], keeps=[0], policy=None)
    assert not own.runs[0].compactions and own.runs[0].failed_recoveries >= 1
    (new,) = replay_transcript(t, windows=[13_000], reserves=[0], keeps=[0], policy=None, version="2.1.153")
    assert len(new.runs[0].compactions) >= 1  # under the next row's rule it would have compacted


def test_2_1_153_compacts_reactively(tmp_path: Path) -> None:
    t = _load("claude-2.1.153-too-long", tmp_path)
    assert t.settings.get("version") == "2.1.153" and rule_for("2.1.153").reactive
    assert [(c.trigger, c.tokens_before) for c in t.main.compactions] == [
        (Trigger.OVERFLOW, 13_133), (Trigger.OVERFLOW, 6_027)]
    (own,) = replay_transcript(t, windows=[13_000], reserves=[0], keeps=[0], policy=None)
    assert len(own.runs[0].compactions) >= 1
