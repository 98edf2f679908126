"""Issue 24's speed measure: the CPU of the one walk over a 25-setting grid (`replay.walk`, as
`replay_transcript` runs it), per set of files. (Pi's exact walk, the other side until session 10,
is deleted: the exact columns stay empty.)

    python -m lab.walk_speed [--set samples|shared|codex|claude ...] [--rounds N] [--profile SET]

Only the walks are timed (`time.process_time` around each grid's settings: `simulate` calls on the
exact side, `transcripts._runs` on the one walk's side, `PathGrid` included), not reading or the truth
fit, which both sides share. Rounds interleave the exact walk, the one walk by the step alone
(`replay.walk_bulk.ENABLED` off) and the one walk with its bulk path; the best round of each is
printed, with the load average. Grids: Pi files 5 reserves x 5 keeps at one window (a sample's recorded window, else
128k), each as a fraction of the window; Codex 5 windows x 5 limits; Claude Code 5 windows x 5
autocompact percentages. `--profile SET` prints cProfile's top functions of the one walk's grids over SET.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
SHARED = ROOT.parent / "shared" / "sessions" / "pi"
SETS = ("samples", "shared", "codex", "claude")
FRACTIONS = (0.04, 0.08, 0.12, 0.16, 0.2)
WINDOWS = (64_000, 96_000, 128_000, 200_000, 272_000)
CODEX_LIMITS = (60_000, 100_000, 140_000, 180_000, 220_000)  # capped at 90% of the window from 0.100 on
CLAUDE_PCTS = (50, 60, 70, 80, 90)


def files_of(name: str) -> list[Path]:
    if name == "samples":
        return sorted(SAMPLES.glob("*.jsonl"))
    if name == "shared":
        return sorted(SHARED.glob("*.jsonl")) if SHARED.is_dir() else []
    return sorted((ROOT / "bench" / f"corpus-{'codex' if name == 'codex' else 'claude-code'}").glob("*.jsonl"))


def _pi_window(path: Path) -> int:
    m = json.loads((SAMPLES / "manifest.json").read_text()).get(path.stem) if path.parent == SAMPLES else None
    return int(m["window"]) if m else 128_000


class _Clock:
    """CPU seconds spent inside the wrapped function (outermost calls only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.depth = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **k: Any) -> Any:
            self.depth += 1
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.seconds += time.process_time() - t
        return timed


@contextmanager
def _patched(module: Any, name: str, clock: _Clock) -> Iterator[None]:
    orig = getattr(module, name)
    setattr(module, name, clock.wrap(orig))
    try:
        yield
    finally:
        setattr(module, name, orig)


def _walk(t: Any, name: str, w: int | None) -> Any:
    from sessiontools.replay.transcripts import replay_transcript

    if name in ("samples", "shared"):
        assert w is not None
        rs = [max(1, int(w * f)) for f in FRACTIONS]
        return replay_transcript(t, windows=[w], reserves=rs, keeps=rs, policy=None)
    if name == "codex":
        return replay_transcript(t, windows=list(WINDOWS), reserves=[0], keeps=[0], policy=None,
                               limits=list(CODEX_LIMITS))
    return replay_transcript(t, windows=list(WINDOWS), reserves=[0], keeps=[0], policy=None,
                           claude={"autocompact_pcts": list(CLAUDE_PCTS)})


def load_set(name: str) -> list[tuple[Path, Any, Any, int | None]]:
    """(file, source, transcript the one walk reads, Pi window) of each readable file of a set."""
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.load import load_transcript
    from sessiontools.transcript.pi.neutral import pi_transcript

    out = []
    for f in files_of(name):
        if name in ("samples", "shared"):
            src = load_source(f)
            out.append((f, src, pi_transcript(src, pi_version="0"), _pi_window(f)))
        else:
            out.append((f, None, load_transcript(f), None))
    return out


def one_round(name: str, loaded: Sequence[tuple[Path, Any, Any, int | None]],
              bulk: bool = True) -> tuple[float | None, float]:
    """(exact walk CPU or None, one walk CPU) of one pass over a set's grids (`bulk`: with
    `replay.walk_bulk`, else the step alone)."""
    from sessiontools.replay import transcripts as transcripts_mod
    from sessiontools.replay import walk_bulk

    exact: float | None = None  # Pi's exact walk was deleted in session 10 (issue 24): no exact side
    co = _Clock()
    walk_bulk.ENABLED = bulk
    try:
        with _patched(transcripts_mod, "_runs", co):
            for _, _, t, w in loaded:
                _walk(t, name, w)
    finally:
        walk_bulk.ENABLED = True
    return exact, co.seconds


def profile(name: str, loaded: Sequence[tuple[Path, Any, Any, int | None]], top: int = 25) -> None:
    import cProfile
    import pstats

    from sessiontools.replay import transcripts as transcripts_mod

    pr = cProfile.Profile()
    orig = transcripts_mod._runs

    def runs(*a: Any, **k: Any) -> Any:
        pr.enable()
        try:
            return orig(*a, **k)
        finally:
            pr.disable()

    transcripts_mod._runs = runs  # type: ignore[assignment]
    try:
        for _, _, t, w in loaded:
            _walk(t, name, w)
    finally:
        transcripts_mod._runs = orig  # type: ignore[assignment]
    pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", choices=SETS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", choices=SETS)
    a = ap.parse_args(argv)
    if a.profile:
        profile(a.profile, load_set(a.profile))
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; best of {a.rounds} interleaved rounds (CPU seconds)")
    for name in a.set or SETS:
        loaded = load_set(name)
        if not loaded:
            print(f"{name}: no files")
            continue
        one_round(name, loaded)  # warm: caches every later round reuses (truth fits, counters)
        best: dict[str, float] = {}
        for _ in range(a.rounds):
            for side, bulk in (("step", False), ("bulk", True)):
                e, o = one_round(name, loaded, bulk)
                best[side] = min(best.get(side, o), o)
                if e is not None:
                    best["exact"] = min(best.get("exact", e), e)
        exact = best.get("exact")
        cells = [f"exact walk {exact:.3f} s"] if exact else []
        cells += [f"one walk, step alone {best['step']:.3f} s", f"with walk_bulk {best['bulk']:.3f} s"]
        if exact:
            cells += [f"one/exact {best['step'] / exact:.2f}x -> {best['bulk'] / exact:.2f}x"]
        print(f"{name} ({len(loaded)} files, 25 settings each): " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
