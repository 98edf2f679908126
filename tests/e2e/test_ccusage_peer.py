"""Our Claude Code and Codex usage and cost against ccusage 20.0.24's, on the bundled samples.

ccusage (npm ``ccusage@20.0.24`` with its native linux-x64 build; 20.0.26 has none) is installed at
test time by ``lab.ccusage_env`` into ``.cache/ccusage`` (``make test`` installs it first). When the
registry cannot be reached the test is skipped with the reason. It runs offline (``--offline``:
its embedded LiteLLM and models.dev prices) over the samples laid out where it looks: ``CLAUDE_CONFIG_DIR/projects/
<project>/<session>.jsonl`` and ``CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``, as hard links
(it skips symlinks), one file per directory: ccusage counts a response once across every file it
reads, and the lab server gives identical requests identical message ids across sessions.

Asserted per session: input, output, cache read and cache write tokens equal ccusage's to the
token; cost within 2% of ccusage's. The lab's model ids are priced by neither (Codex's ``lab-model``)
or not by both (``claude-opus-5-5``, newer than ccusage 20.0.24's price copy), so the cost is
compared on copies of the samples with the model renamed to priced ids (and, for Claude Code, part of each cache write moved to the
1-hour cache, which is priced apart). The Claude Code samples were recorded before the lab server
sent the 5-minute / 1-hour split of cache writes; Claude Code then writes zeros there and ccusage,
which reads the split, counts no cache write at all: the copies carry the split the API sends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lab.ccusage_env import VERSION, CcusageEnv, CcusageUnavailable, ensure_ccusage, run_ccusage
from sessiontools.analysis.inspect import inspect_source
from sessiontools.read.sources import load_source

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = sorted((ROOT / "sample_sessions" / "claude-code").glob("*.jsonl"))
CODEX = sorted((ROOT / "sample_sessions" / "codex").glob("*.jsonl"))
CODEX_MANIFEST = json.loads((ROOT / "sample_sessions" / "codex" / "manifest.json").read_text())
CLAUDE_MODELS = ("claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")
#: Gateway models Claude Code users record (ANTHROPIC_BASE_URL): LiteLLM lacks them, ccusage prices them
#: from its embedded models.dev snapshot and so do we (models.json's models.dev entries).
GATEWAY_MODELS = ("deepseek-v4-pro", "deepseek-v4-flash", "MiniMax-M2.7")
CODEX_MODELS = ("gpt-5.3-codex", "gpt-5.1-codex-max", "gpt-5.4")


@pytest.fixture(scope="module")
def ccusage() -> CcusageEnv:
    try:
        return ensure_ccusage()
    except CcusageUnavailable as exc:
        pytest.skip(f"ccusage {VERSION} could not be installed from npm, the comparison did NOT RUN: {exc}")


def _ours(path: Path) -> dict[str, Any]:
    return inspect_source(load_source(path))


def _compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _claude_copy(src: Path, dest: Path, model: str | None, hour_share: float) -> None:
    out = []
    for raw in src.read_bytes().splitlines():
        if not raw.strip():
            continue
        o = json.loads(raw)
        msg = o.get("message") if isinstance(o, dict) else None
        if isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
            u = msg["usage"]
            write = int(u.get("cache_creation_input_tokens") or 0)
            hour = int(write * hour_share)
            u["cache_creation"] = {"ephemeral_5m_input_tokens": write - hour, "ephemeral_1h_input_tokens": hour}
            if model and msg.get("model") not in (None, "<synthetic>"):
                msg["model"] = model
        out.append(_compact(o))
    dest.write_bytes(b"".join(out))


def _codex_copy(src: Path, dest: Path, model: str) -> None:
    out = []
    for raw in src.read_bytes().splitlines():
        if not raw.strip():
            continue
        o = json.loads(raw)
        pay = o.get("payload")
        if o.get("type") == "turn_context" and isinstance(pay, dict) and pay.get("model"):
            pay["model"] = model
        if o.get("type") == "session_meta" and isinstance(pay, dict):
            pay["model_provider"] = "openai"  # the lab's provider is "lab"
        out.append(_compact(o))
    dest.write_bytes(b"".join(out))


def _claude_peer(env: CcusageEnv, file: Path, home: Path) -> dict[str, Any]:
    (home / "projects" / "-lab").mkdir(parents=True)
    os.link(file, home / "projects" / "-lab" / file.name)
    doc = run_ccusage("claude", home, env=env)
    (s,) = doc["sessions"]
    return s


def _codex_peer(env: CcusageEnv, file: Path, home: Path) -> dict[str, Any]:
    day = home / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    os.link(file, day / f"rollout-2026-01-01T00-00-00-{file.stem}.jsonl")
    doc = run_ccusage("codex", home, env=env)
    (s,) = doc["sessions"]
    return s


def _tokens(peer: dict[str, Any]) -> dict[str, int]:
    return {"input": peer["inputTokens"], "output": peer["outputTokens"], "cache_read": peer["cacheReadTokens"],
            "cache_write": peer["cacheCreationTokens"]}


@pytest.mark.e2e
@pytest.mark.parametrize("sample", CLAUDE, ids=lambda p: p.stem)
def test_claude_code_totals_and_cost_equal_ccusage(ccusage: CcusageEnv, sample: Path, tmp_path: Path) -> None:
    lab = tmp_path / "lab.jsonl"
    _claude_copy(sample, lab, None, 0.0)
    peer = _claude_peer(ccusage, lab, tmp_path / "h0")
    ours = _ours(lab)
    assert peer["outputTokens"] > 0 and ours["usage"]["cache_write"] > 0
    assert ours["usage"] == _tokens(peer)
    # (the lab records `claude-opus-5-5`: LiteLLM's list has it now, ccusage 20.0.24's embedded copy
    # does not, so the cost is compared on the renamed copies below)
    for k, model in enumerate(CLAUDE_MODELS):
        priced = tmp_path / f"{model}.jsonl"
        _claude_copy(sample, priced, model, hour_share=0.25 * k)  # 0, 1/4, 1/2 of writes for an hour
        peer = _claude_peer(ccusage, priced, tmp_path / f"h{k + 1}")
        ours = _ours(priced)
        assert ours["usage"] == _tokens(peer), model
        assert ours["cost_source"] == "catalogue" and peer["totalCost"] > 0
        assert ours["cost"] == pytest.approx(peer["totalCost"], rel=0.02), model
    for k, model in enumerate(GATEWAY_MODELS):  # gateways answer with no 1-hour split
        priced = tmp_path / f"{model}.jsonl"
        _claude_copy(sample, priced, model, hour_share=0.0)
        peer = _claude_peer(ccusage, priced, tmp_path / f"g{k}")
        ours = _ours(priced)
        assert ours["usage"] == _tokens(peer), model
        assert ours["cost_source"] == "catalogue" and peer["totalCost"] > 0
        assert ours["cost"] == pytest.approx(peer["totalCost"], rel=0.02), model


@pytest.mark.e2e
@pytest.mark.parametrize("sample", CODEX, ids=lambda p: p.stem)
def test_codex_totals_and_cost_equal_ccusage(ccusage: CcusageEnv, sample: Path, tmp_path: Path) -> None:
    peer = _codex_peer(ccusage, sample, tmp_path / "h0")  # the recorded file itself, hard-linked
    ours = _ours(sample)
    assert ours["usage"] == _tokens(peer)  # every billed call, compaction summaries included
    spec = CODEX_MANIFEST[sample.stem]["spec"]
    if spec.get("model", "lab-model") == "lab-model":
        assert ours["cost"] is None and peer["costUSD"] == 0
    else:  # recorded with a real model's name (gpt-5.1-codex): priced as it is
        assert ours["cost_source"] == "catalogue" and peer["costUSD"] > 0
        assert ours["cost"] == pytest.approx(peer["costUSD"], rel=0.02)
    for k, model in enumerate(CODEX_MODELS):
        priced = tmp_path / f"{model}.jsonl"
        _codex_copy(sample, priced, model)
        peer = _codex_peer(ccusage, priced, tmp_path / f"h{k + 1}")
        ours = _ours(priced)
        assert ours["usage"] == _tokens(peer), model
        assert ours["cost_source"] == "catalogue" and peer["costUSD"] > 0
        assert ours["cost"] == pytest.approx(peer["costUSD"], rel=0.02), model
