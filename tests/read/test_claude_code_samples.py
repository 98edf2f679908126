"""The Claude Code reader on the transcripts the real CLI wrote (sample_sessions/claude-code/).

Counts are compared with what plain ``json`` finds in the files (lab/claude_manifest.py, stored in
manifest.json), and every request's context is checked against the lab server's own count: the
lab tokenizer over the reconstructed messages must give exactly the recorded prompt tokens.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.claude_manifest import analyze_claude
from lab.claude_summary import CONTINUATION_MARKER
from lab.summarizer import drop_index
from lab.tokenizer import PseudoTokenizer
from sessiontools.transcript.claude_code import load_claude_transcript
from sessiontools.transcript.model import Role, Trigger

DIR = Path(__file__).resolve().parents[2] / "sample_sessions" / "claude-code"
MANIFEST = json.loads((DIR / "manifest.json").read_text()) if (DIR / "manifest.json").exists() else {}
#: The pinned 2.1.332's samples (recorded with --bare); the others are older releases' (claude-<version>).
PINNED = sorted(n for n, m in MANIFEST.items() if not m.get("version"))
pytestmark = pytest.mark.skipif(not MANIFEST, reason="sample_sessions/claude-code/manifest.json is absent")


def _limit(meta: dict) -> int | None:
    return meta["server_window"] if meta["auto_window"] is None else None


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_counts_equal_plain_json(name: str) -> None:
    meta = MANIFEST[name]
    path = DIR / f"{name}.jsonl"
    facts = analyze_claude(path).as_dict()
    assert facts == meta["facts"], "manifest.json is stale: run python -m lab.generate_claude --check"
    t = load_claude_transcript(path, provider_limit=_limit(meta))
    series = ".".join((meta.get("version") or "2.1").split(".")[:2])
    # 2.1.63 re-wrote six lines of the first compaction on the next --continue (same uuids): reported, first kept
    dup = [d for d in t.diagnostics if d.reason.startswith("duplicate uuid")] if name == "claude-2.1.63" else []
    assert len(dup) == (6 if name == "claude-2.1.63" else 0)
    assert [d for d in t.diagnostics if d not in dup] == [] and t.format == f"claude-code-{series}" and len(t.paths) == 1
    m = t.main
    assert len(m.requests) == facts["responses"]
    assert sum(1 for x in m.messages if x.role is Role.USER) == facts["prompts"]
    comps = facts["compactions"]
    if name == "claude-2.1.63":
        # 2.1.63 wrote its first compaction's boundary twice (same logicalParentUuid and preTokens; the lab
        # server answered three compact requests, not four): the reader counts it once
        assert len(meta["server"]["summarise_prompt_tokens"]) == len(comps) - 1
        assert comps[0]["preTokens"] == comps[1]["preTokens"]
        comps = [comps[0], *comps[2:]]  # the reader keeps the first copy
    assert len(m.compactions) == len(comps)
    threshold = meta["auto_window"] or meta.get("version")
    want = {"manual": Trigger.MANUAL, "auto": Trigger.THRESHOLD if threshold else Trigger.OVERFLOW}
    for c, f in zip(m.compactions, comps, strict=True):
        assert (c.line, c.trigger, c.tokens_before, c.tokens_after) == (f["line"], want[f["trigger"]],
                                                                         f["preTokens"], f["postTokens"])
        assert sum(b - a for a, b in c.kept) == f["preserved"]
        assert m.messages[c.index].role is Role.SUMMARY and c.summary and "Summary:" not in c.summary
    # usage deduplicated: one request per response, at its first line, with the usage of its final line
    # (Claude Code writes a line per content block; output is a running count, the last is the billed one)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    firsts: dict[str, int] = {}
    final: dict[str, dict] = {}
    for n, d in enumerate(lines, 1):
        if d.get("type") == "assistant":
            mid = d["message"]["id"]
            firsts.setdefault(mid, n)
            final[mid] = d["message"]["usage"]
    assert [(r.line, r.usage.input, r.usage.cache_read, r.usage.cache_write, r.usage.output) for r in m.requests] == [
        (n, final[mid]["input_tokens"], final[mid]["cache_read_input_tokens"],
         final[mid]["cache_creation_input_tokens"], final[mid]["output_tokens"]) for mid, n in firsts.items()]


def _segment(role: str, parts: list[str]) -> str:
    return "\n".join([role, *parts])


def _api_messages(msgs) -> list[tuple[str, list[str]]]:
    """The context as the API messages Claude Code sent: same-role neighbours merged (a user text
    block followed by another user line gets a trailing newline), the empty system message after the
    first user message (all observed in the lab's request dumps)."""
    out: list[tuple[str, list[str]]] = []
    for m in msgs:
        role = "assistant" if m.role is Role.ASSISTANT else "user"
        content = m.raw["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts = []
        for b in blocks:
            if b["type"] == "text":
                parts.append(b["text"])
            elif b["type"] == "tool_use":
                parts.append(f"<call {b['id']}>{b['name']} " + json.dumps(b["input"], ensure_ascii=False, sort_keys=True))
            elif b["type"] == "tool_result":
                c = b["content"]
                text = c if isinstance(c, str) else "".join(x.get("text", "") for x in c)
                parts.append(f"<result {b['tool_use_id']}>\n{text}")
        if out and out[-1][0] == role:
            prev = out[-1][1]
            if role == "user" and prev and not prev[-1].startswith("<result "):
                prev[-1] += "\n"  # Claude Code ends a merged user text block with a newline
            prev.extend(parts)
        else:
            out.append((role, parts))
        if len(out) == 1 and role == "user":
            out.append(("system", []))
    return out


@pytest.mark.parametrize("name", PINNED)  # --bare: the older releases send their full system prompt
def test_context_reproduces_the_servers_prompt_tokens(name: str) -> None:
    meta = MANIFEST[name]
    t = load_claude_transcript(DIR / f"{name}.jsonl", provider_limit=_limit(meta))
    work = f"/tmp/sessiontools-lab-claude/{name}"
    tok = PseudoTokenizer(meta["ratio"])
    date = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{4}/\d{2}/\d{2}\b")

    def count(msgs) -> int:
        segs = [_segment(r, p) for r, p in _api_messages(msgs)]
        segs = [date.sub("<date>", s).replace(f"{work}/workspace", "/workspace").replace(work, "/work") for s in segs]
        return sum(tok.count_segments(segs))

    m = t.main
    prefix = {r.usage.prompt - count(m.context(r)) for r in m.requests}
    assert len(prefix) == 1, f"context sizes disagree with the recorded usage: prefixes {sorted(prefix)}"
    assert 1000 < prefix.pop() < 1500  # system prompt + three tool schemas under --bare


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if MANIFEST[n]["facts"]["compactions"]))
def test_summaries_follow_the_lab_lossy_rule(name: str) -> None:
    seed = MANIFEST[name]["seed"]
    m = load_claude_transcript(DIR / f"{name}.jsonl").main
    prev: list[str] | None = None
    for g, c in enumerate(m.compactions, 1):
        # the older releases end the stored summary with a full stop
        assert c.summary.rstrip(".").endswith(f"- Summary generation: {g}") and CONTINUATION_MARKER not in c.summary
        done = [ln[6:] for ln in c.summary.splitlines() if ln.startswith("- [x] ")]
        if prev is not None and len(prev) >= 2:
            k = drop_index(seed, g, len(prev))
            kept = prev[:k] + prev[k + 1:]  # the seeded drop: exactly one previous Done item is lost
            # Done = (kept + new items)[-40:]: some tail of `kept` starts the new list
            assert any(done[:len(kept) - j] == kept[j:] for j in range(len(kept) + 1) if len(kept) - j <= len(done))
            if len(done) < 40:
                assert done[:len(kept)] == kept
        prev = done


def test_the_threshold_pair_records_one_workload() -> None:
    pair = [n for n in MANIFEST if n.startswith("claude-threshold-")]
    assert len(pair) == 2 and len({MANIFEST[n]["seed"] for n in pair}) == 1
    assert len({MANIFEST[n]["pct"] for n in pair}) == 2
    calls = []
    for n in pair:
        m = load_claude_transcript(DIR / f"{n}.jsonl").main
        ws = f"/tmp/sessiontools-lab-claude/{n}/workspace"
        calls.append([u.text.replace(ws, "/workspace") for x in m.messages if x.role is Role.ASSISTANT
                      for u in x.units if u.kind.value == "tool_call"])
        assert len(m.compactions) >= 3
    assert calls[0] == calls[1] and len(calls[0]) > 10
