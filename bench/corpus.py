"""A deterministic synthetic corpus of Pi sessions for `make bench`.

A few hundred v3 sessions of mixed sizes (from tens of KB to tens of MB) and languages (English
prose, code, Chinese), with runs of tool calls and usage that grows with the context the way a
provider reports it (a fixed overhead plus about 1.3 tokens per chars/4, more for Chinese).
Everything comes from a seeded random generator, so the same seed gives the same bytes.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

import orjson

EN = (
    "The session manager appends every entry to the file and keeps the tree in memory. "
    "When the context grows past the threshold, the agent summarises the older part and keeps the rest. "
)
CODE = (
    "def prepare(entries, settings):\n    boundary = find_boundary(entries)\n"
    "    for i, entry in enumerate(entries[boundary:]):\n        if entry.type == 'message':\n"
    "            total += estimate(entry.message)\n    return Preparation(boundary, total)\n"
)
ZH = "会话管理器把每个条目追加到文件中，并在内存中维护树结构。当上下文超过阈值时，代理会总结较早的部分并保留其余部分。"


def _text(rng: random.Random, chars: int, lang: str) -> str:
    base = {"en": EN, "code": CODE, "zh": ZH}[lang]
    start = rng.randrange(len(base))
    reps = chars // len(base) + 2
    return (base * reps)[start: start + chars]


def session(rng: random.Random, n: int, target_bytes: int) -> bytes:
    """One session of roughly `target_bytes`, written as Pi writes it (one JSON object a line)."""
    lang = rng.choice(["en", "en", "code", "zh"])
    ratio = {"en": 1.3, "code": 1.4, "zh": 2.6}[lang]
    ts = 1_767_225_600_000 + n * 86_400_000
    lines = [orjson.dumps({"type": "session", "version": 3, "id": f"bench-{n:04d}",
                           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": f"/work/bench{n}"})]
    size = len(lines[0])
    parent = None
    k = 0
    ctx_chars = 0
    overhead = 4000
    calls = 0

    def add(entry: dict) -> None:
        nonlocal parent, k, size
        k += 1
        entry = {"id": f"{n:04x}{k:06x}", "parentId": parent,
                 "timestamp": f"2026-01-01T{(k // 3600) % 24:02d}:{(k // 60) % 60:02d}:{k % 60:02d}.000Z", **entry}
        b = orjson.dumps(entry)
        lines.append(b)
        size += len(b) + 1
        parent = entry["id"]

    while size < target_bytes:
        prompt = _text(rng, rng.randrange(80, 600), lang)
        add({"type": "message", "message": {"role": "user", "content": prompt, "timestamp": ts + k}})
        ctx_chars += len(prompt)
        for step in range(rng.randrange(1, 7)):
            last = step > 0 and rng.random() < 0.3
            reply = _text(rng, rng.randrange(40, 900), lang)
            content: list[dict] = [{"type": "text", "text": reply}]
            if not last:
                calls += 1
                content.append({"type": "toolCall", "id": f"call_{calls}", "name": rng.choice(["read", "bash", "edit"]),
                                "arguments": {"path": f"src/mod{rng.randrange(50)}.py"}})
            prompt_tokens = overhead + math.ceil(ratio * ctx_chars / 4)
            cache_read = int(prompt_tokens * 0.8)
            out = rng.randrange(50, 600)
            add({"type": "message", "message": {
                "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {"input": prompt_tokens - cache_read, "output": out, "cacheRead": cache_read, "cacheWrite": 0,
                          "totalTokens": prompt_tokens + out,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop" if last else "toolUse", "timestamp": ts + k}})
            ctx_chars += len(reply) + 40
            if last:
                break
            result = _text(rng, rng.choice([200, 1500, 6000, 20000]), lang)
            add({"type": "message", "message": {"role": "toolResult", "toolCallId": f"call_{calls}", "toolName": "read",
                                                "content": [{"type": "text", "text": result}], "isError": False,
                                                "timestamp": ts + k}})
            ctx_chars += len(result)
        # Keep contexts bounded like a compacting agent would (a cheap stand-in for real compactions).
        if ctx_chars > 600_000:
            ctx_chars = 120_000
    return b"\n".join(lines) + b"\n"


def build(out: Path, total_mb: float = 300, seed: int = 7) -> list[Path]:
    """Write the corpus into `out` (skipped when a complete corpus with the same parameters is there)."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = out / f".complete-{seed}-{total_mb:g}"
    if stamp.exists():
        return sorted(out.glob("*.jsonl"))
    for old in out.glob("*.jsonl"):
        old.unlink()
    rng = random.Random(seed)
    budget = int(total_mb * 1024 * 1024)
    files = []
    n = 0
    while budget > 0:
        # Mostly small sessions, some medium, a few large (log-uniform 10 KB .. 8 MB).
        target = int(math.exp(rng.uniform(math.log(10_000), math.log(8_000_000))))
        target = min(target, budget) if budget > 10_000 else budget
        data = session(rng, n, target)
        p = out / f"s{n:04d}.jsonl"
        p.write_bytes(data)
        files.append(p)
        budget -= len(data)
        n += 1
    stamp.write_text("ok\n")
    return files


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("bench/corpus"))
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    fs = build(a.out, a.mb, a.seed)
    print(f"{len(fs)} sessions, {sum(f.stat().st_size for f in fs) / 1e6:.1f} MB in {a.out}")
