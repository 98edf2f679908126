"""Build-once synthetic corpora for the other agents' readers (Codex rollouts, Claude Code
transcripts), with the same sizes, seeding and completion stamp as bench/corpus.py (Pi).

A generator is `session(rng, n, target_bytes) -> Generated`: the files of one session (paths
relative to the corpus directory: a Claude Code session may bring subagent files beside it) and
what it intended (agent requests, compactions), which tests/bench/test_corpus_agents.py checks
against `sessiontools inspect`.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson


@dataclass
class Generated:
    """One generated session: its files (relative path -> bytes) and what it is meant to contain."""

    files: dict[str, bytes]
    requests: int
    compactions: int
    sidechains: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


Generator = Callable[[random.Random, int, int], Generated]


class Lines:
    """A JSONL file being written: orjson lines and a running byte count."""

    def __init__(self) -> None:
        self.out: list[bytes] = []
        self.size = 0

    def add(self, obj: dict) -> int:
        b = orjson.dumps(obj)
        self.out.append(b)
        self.size += len(b) + 1
        return len(self.out)  # the 1-based line just written

    def data(self) -> bytes:
        return b"\n".join(self.out) + b"\n"


def stamp_time(k: int) -> str:
    """An ISO timestamp that advances one second per step `k` (wraps after a day: never parsed as order)."""
    return f"2026-01-01T{(k // 3600) % 24:02d}:{(k // 60) % 60:02d}:{k % 60:02d}.{k % 1000:03d}Z"


def sizes(rng: random.Random, total_mb: float):  # type: ignore[no-untyped-def]
    """Session sizes, mostly small, some medium, a few large (log-uniform 10 KB .. 8 MB), as bench/corpus.py."""
    budget = int(total_mb * 1024 * 1024)
    while budget > 0:
        target = int(math.exp(rng.uniform(math.log(10_000), math.log(8_000_000))))
        target = min(target, budget) if budget > 10_000 else budget
        written = yield target
        budget -= written


def generate(gen: Generator, total_mb: float, seed: int) -> list[Generated]:
    """Every session of a corpus, in memory (tests use a small `total_mb`)."""
    rng = random.Random(seed)
    out: list[Generated] = []
    it = sizes(rng, total_mb)
    target = next(it, None)
    n = 0
    while target is not None:
        g = gen(rng, n, target)
        out.append(g)
        n += 1
        try:
            target = it.send(g.size)
        except StopIteration:
            target = None
    return out


def build(gen: Generator, out: Path, total_mb: float = 100, seed: int = 7) -> list[Path]:
    """Write a corpus into `out` (skipped when a complete corpus with the same parameters is there).
    Returns every file (sessions and subagent files), sorted: the bytes the bench parses."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = out / f".complete-{seed}-{total_mb:g}"
    if not stamp.exists():
        for old in sorted(out.rglob("*.jsonl")):
            old.unlink()
        for g in generate(gen, total_mb, seed):
            for rel, data in g.files.items():
                p = out / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
        stamp.write_text("ok\n")
    return sorted(out.rglob("*.jsonl"))


def main(gen: Generator, default_out: str, doc: str | None) -> None:
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--out", type=Path, default=Path(default_out))
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    fs = build(gen, a.out, a.mb, a.seed)
    print(f"{len(fs)} files, {sum(f.stat().st_size for f in fs) / 1e6:.1f} MB in {a.out}")
