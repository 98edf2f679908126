"""The Codex reader on the rollouts the real Codex CLI wrote (sample_sessions/codex): its counts equal
the plain-json facts (lab.codex_manifest), Codex's compaction rule holds at every check, and the
summaries lose exactly what the lab summariser's seeded rule says."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from lab.codex_manifest import _bytes4, _model_generated, analyze
from lab.summarizer import KEEP_DONE, drop_index
from sessiontools.read.codex import load_rollout
from sessiontools.transcript.codex import codex_transcript
from sessiontools.transcript.model import Role

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions" / "codex"
MANIFEST = json.loads((SAMPLES / "manifest.json").read_text()) if (SAMPLES / "manifest.json").exists() else {}
NAMES = sorted(MANIFEST)


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_plain_json(name: str) -> None:
    path = SAMPLES / f"{name}.jsonl"
    facts = analyze(path)
    t = codex_transcript(load_rollout(path))
    p = t.main
    # 0.171 writes `ordinal` on every line (its own schema); older releases the wrapped 2025 schema
    assert t.diagnostics == [] and t.format == ("codex-0.171" if facts.cli_versions == ["0.171.0"] else "codex-2025")
    assert len(p.requests) == facts.agent_requests
    assert len(p.overflows) == facts.overflows
    assert [c.line for c in p.compactions] == [c.line for c in facts.compactions]
    assert [c.tokens_before for c in p.compactions] == [c.tokens_before for c in facts.compactions]
    assert p.skipped["compaction summarisation call"] == facts.compaction_calls
    # (the facts' maximum counts the summarisation calls too: before 0.171 one can be the largest call)
    assert max((r.usage.total for r in p.requests), default=0) <= facts.max_total_tokens
    if facts.cli_versions == ["0.171.0"]:
        assert max((r.usage.total for r in p.requests), default=0) == facts.max_total_tokens
    assert all(r.context_window == facts.model_context_window for r in p.requests)
    assert sum(1 for m in p.messages if m.role == Role.USER and m.text.startswith("Task ")) >= facts.user_prompts
    for r in p.requests:
        ctx = p.context(r)
        # (0.63 and 0.77 record no base_instructions in session_meta: no system message)
        assert (ctx[0].role == Role.SYSTEM) == (p.messages[0].role == Role.SYSTEM) and ctx[-1].index < r.index
        assert p.messages[r.index].role == Role.ASSISTANT
    for c in p.compactions:
        assert c.summary and "- Summary generation: " in c.summary and c.tokens_after
        after = [r for r in p.requests if r.line > c.line]
        if after:
            assert c.index in set(after[0].context_indices())


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _checks(path: Path) -> list[tuple[int, int, bool]]:
    """(last total, bytes/4 of the items after the newest model item, compacted next) at each point
    where Codex checks its limit: after every agent response, once its tool outputs are recorded
    (Codex writes a response's items and tool outputs before its token_count). Plain json."""
    out: list[tuple[int, int, bool]] = []
    prev_total = None
    items: list[dict] = []
    for d in _lines(path):
        kind, p = d["type"], d["payload"]
        if kind == "response_item":
            items.append(p)
        elif kind == "event_msg" and p.get("type") == "token_count" and p.get("info"):
            info = p["info"]
            if info["total_token_usage"] == prev_total:
                continue
            prev_total = info["total_token_usage"]
            last = info["last_token_usage"]
            if last["input_tokens"] or last["output_tokens"]:
                out.append((last["total_tokens"], _suffix(items), False))
                items = []
        elif kind == "compacted":
            out.pop()  # the summarisation call; the check before it is the one that fired
            total, est, _ = out[-1]
            out[-1] = (total, est, True)
            items = []
    return out


def _suffix(items: list[dict]) -> int:
    idx = max((i for i, it in enumerate(items) if _model_generated(it)), default=-1)
    return sum(_bytes4(it) for it in items[idx + 1:])


@pytest.mark.parametrize("name", [n for n in NAMES if "pair" in n])
def test_codex_rule_holds_at_every_check(name: str) -> None:
    limit = MANIFEST[name]["effective_limit"]
    checks = _checks(SAMPLES / f"{name}.jsonl")
    fired = [(t, e) for t, e, c in checks if c]
    assert len(fired) == len(MANIFEST[name]["facts"]["compactions"])
    assert all(t + e >= limit for t, e in fired)
    # no check that stayed below the limit compacted, none above it went without compacting. One check
    # in codex-pair-b lands exactly on the limit (18902 + 598 = 19500) and did not fire although
    # codex-rs compares with >=: Codex's own serialisation of that tool output is a few bytes shorter
    # than this reconstruction (2391 bytes here; <= 2388 gives 597), so a tie is not decidable here.
    assert all(t + e <= limit for t, e, c in checks if not c)


_DONE_RE = re.compile(r"^- \[x\] (.*)$", re.M)


def _done(summary: str) -> list[str]:
    body = summary.split("### Done", 1)[1].split("###", 1)[0]
    return [d for d in _DONE_RE.findall(body) if d != "(nothing yet)"]


def _generation(summary: str) -> int:
    m = re.search(r"- Summary generation: (\d+)", summary)
    assert m
    return int(m.group(1))


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["facts"]["compactions"]])
def test_summaries_drop_exactly_the_seeded_item(name: str) -> None:
    if MANIFEST[name]["spec"]["prompts"] > 14:
        pytest.skip("over 14 prompts the Done list's compression (lab.summarizer) is not modelled by this check")
    seed = MANIFEST[name]["spec"]["seed"]
    summaries = [c.summary for c in codex_transcript(load_rollout(SAMPLES / f"{name}.jsonl")).main.compactions]
    assert [_generation(s) for s in summaries] == list(range(1, len(summaries) + 1))
    for prev, cur in zip(summaries, summaries[1:], strict=False):
        d_prev, d_cur = _done(prev), _done(cur)
        g = _generation(cur)
        k = drop_index(seed, g, len(d_prev))
        expected_kept = d_prev if k is None else d_prev[:k] + d_prev[k + 1:]
        if len(expected_kept) + 1 <= KEEP_DONE:
            assert d_cur[:len(expected_kept)] == expected_kept
        lost = Counter(d_prev) - Counter(d_cur)
        assert lost == (Counter() if k is None else Counter([d_prev[k]])) or len(d_cur) == KEEP_DONE
