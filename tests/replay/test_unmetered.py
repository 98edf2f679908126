"""A reply recorded with no usage, a zero usage or a zero prompt ("unmetered") is an `UnmeteredReply`:
no request, no request point billed at a truth of 0, nothing fitted to it, counted in the run record
(`unmetered_replies`). The shape (synthetic: a sample with one reply's prompt usage zeroed) is what a
gateway that reports no usage writes; before, Claude Code's reader made it a request whose recorded
truth was 0, and Pi's neutral adapter dropped it without a count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontools.read.sources import load_source
from sessiontools.replay.invariants import violations
from sessiontools.replay.run_document import record_of
from sessiontools.replay.session import replay_source
from sessiontools.transcript.load import load_transcript
from tests.conftest import SAMPLES


def _zero_claude(src: Path, dst: Path, nth: int) -> None:
    """`src` with the prompt usage of its `nth` assistant message (every line of it) zeroed."""
    lines = src.read_text().splitlines()
    ids: list[str] = []
    for ln in lines:
        d = json.loads(ln)
        mid = (d.get("message") or {}).get("id") if d.get("type") == "assistant" else None
        if mid and (d["message"].get("usage") or {}) and mid not in ids:
            ids.append(mid)
    target = ids[nth]
    out = []
    for ln in lines:
        d = json.loads(ln)
        if d.get("type") == "assistant" and (d.get("message") or {}).get("id") == target:
            d["message"]["usage"].update(input_tokens=0, cache_creation_input_tokens=0, cache_read_input_tokens=0)
            d["message"]["usage"].pop("cache_creation", None)
            ln = json.dumps(d)
        out.append(ln)
    dst.write_text("\n".join(out) + "\n")


def _zero_pi(src: Path, dst: Path, nth: int) -> None:
    """`src` (Pi) with the prompt usage of its `nth` assistant reply zeroed (its output kept)."""
    out, k = [], 0
    for ln in src.read_text().splitlines():
        d = json.loads(ln)
        msg = d.get("message") or {}
        if msg.get("role") == "assistant" and isinstance(msg.get("usage"), dict) and msg.get("stopReason") == "toolUse":
            if k == nth:
                msg["usage"].update(input=0, cacheRead=0, cacheWrite=0, totalTokens=msg["usage"].get("output", 0))
                ln = json.dumps(d)
            k += 1
        out.append(ln)
    dst.write_text("\n".join(out) + "\n")


def _records(f: Path, policy: str | None, **grid: Any) -> list[dict[str, Any]]:
    return [record_of(pr, run, timeline=True).to_dict(timeline=True)
            for pr in replay_source(load_source(f), policy=policy, summary_tokens=None, models=[], leaf=None,
                                    all_leaves=False, **grid) for run in pr.runs]


@pytest.mark.parametrize(("sample", "zero", "policy"), [
    ("claude-code/claude-2.1.12.jsonl", _zero_claude, None),
    ("pi1-pair-a.jsonl", _zero_pi, "codex"),
])
def test_an_unmetered_reply_is_counted_not_billed_at_zero(tmp_path: Path, sample: str, zero: Any,
                                                          policy: str | None) -> None:
    src, f = SAMPLES / sample, tmp_path / Path(sample).name
    zero(src, f, 4)
    before, after = load_transcript(src).paths[0], load_transcript(f).paths[0]
    assert [u.reason for u in after.unmetered] == ["zero prompt"] and not before.unmetered
    assert len(after.requests) == len(before.requests) - 1
    assert all(r.usage.prompt > 0 for r in after.requests)
    grid = {"windows": [16000, 48000], "reserves": [3000], "keeps": [4000]}
    old, new = _records(src, policy, **grid), _records(f, policy, **grid)
    for o, r in zip(old, new, strict=True):
        assert (o["unmetered_replies"], r["unmetered_replies"]) == (0, 1)
        assert len(r["timeline"]["truth"]) == len(o["timeline"]["truth"]) - 1  # no request point for it
        assert min(t for _, t in r["timeline"]["truth"]) > 0  # no request point at a truth of 0
        assert violations(r) == []


@pytest.mark.parametrize(("sample", "zero", "policy"), [
    ("claude-code/claude-2.1.12.jsonl", _zero_claude, None),
    ("pi1-pair-a.jsonl", _zero_pi, None),
    ("pi1-pair-a.jsonl", _zero_pi, "claude-code"),
])
def test_export_and_the_replay_rows_count_the_unmetered_reply(tmp_path: Path, sample: str, zero: Any,
                                                               policy: str | None) -> None:
    """The replay rows (`export --replay-*`'s `replay_runs`, `replay -f parquet`) carry the run
    record's `unmetered_replies` (before, only the JSON record had it)."""
    import polars as pl

    from sessiontools.cli import main

    f = tmp_path / Path(sample).name
    zero(SAMPLES / sample, f, 4)
    (rec,) = _records(f, policy, windows=[48000], reserves=[3000], keeps=[4000])
    assert rec["unmetered_replies"] == 1
    argv = ["export", str(f), "-o", str(tmp_path / "ds"), "--jobs", "1", "--replay-window", "48000",
            "--replay-reserve", "3000", "--replay-keep", "4000", *(["--replay-policy", policy] if policy else [])]
    assert main(argv) == 0
    runs = pl.read_parquet(tmp_path / "ds" / "replay_runs" / "**" / "*.parquet", hive_partitioning=True)
    assert runs["unmetered_replies"].to_list() == [1]
    out = tmp_path / "runs.parquet"
    assert main(["replay", str(f), "--context-window", "48000", "--reserve", "3000", "--keep-recent", "4000",
                 *(["--policy", policy] if policy else []), "-f", "parquet", "-o", str(out)]) == 0
    assert pl.read_parquet(out)["unmetered_replies"].to_list() == [1]
