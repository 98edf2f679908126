"""Issue 24's measure: Pi's exact walk (`replay.session.replay_session`) against the one transcript walk
(`replay.walk.simulate_path` on the Pi transcript built in the policy's version), run by run, on every
reported field of the run record (compactions with place, tokens and kind, overflows, rejections,
peak, check points, late/early, costs, cache classes, thrash, each request's truth and count).

    python -m lab.walk_parity [FILES...] [--tokenizer chars4|o200k|auto ...] [--grid small|recorded] [--show N]

Without FILES: every Pi sample and the shared Pi sessions (`../shared/sessions/pi`). Prints one
line per differing run (sample, policy, setting, tokenizer: the first differing fields) and the
counts by field, so each cause can be closed and the count shown to fall.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
SHARED = ROOT.parent / "shared" / "sessions" / "pi"
WINDOWS = (16000, 24000, 32000)
RESERVES = (3000, 4000)
KEEPS = (2000, 4000)


def default_files() -> list[Path]:
    shared = sorted(SHARED.glob("*.jsonl")) if SHARED.is_dir() else []
    return [*sorted(SAMPLES.glob("*.jsonl")), *shared]


def _recorded_setting(path: Path) -> tuple[int, int, int] | None:
    m = json.loads((SAMPLES / "manifest.json").read_text()).get(path.stem) if path.parent == SAMPLES else None
    return (m["window"], m["reserve"], m["keep"]) if m else None


def _requests(pr: Any, run: Any) -> list[tuple[Any, ...]]:
    return [(p.entry_id, round(p.truth, 6), p.truth_source.value, None if p.policy_count is None else
             round(p.policy_count, 6), p.overflow, p.output, p.epoch, p.recorded_context) for p in run.requests]


def record(pr: Any, run: Any) -> dict[str, Any]:
    """A run's record with its index-free fields only (the walks index requests differently: entries
    by base index, messages by message index; entry ids are the same)."""
    from sessiontools.replay.session import run_record

    rec = run_record(pr, run)
    for k in ("session", "agent", "truth_model"):
        rec.pop(k, None)
    rec["requests"] = _requests(pr, run)
    rec["recorded_points"] = [round(t, 6) for _, t in pr.recorded_points(run)]
    return rec


def diff(a: Any, b: Any, at: str = "") -> Iterator[str]:
    """The paths of the fields where `a` and `b` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            yield from diff(a.get(k), b.get(k), f"{at}.{k}" if at else str(k))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from diff(x, y, f"{at}[{i}]")
    elif isinstance(a, list) and isinstance(b, list):
        yield f"{at}#len"
    elif a != b:
        yield at


def _field(path: str) -> str:
    """A difference's field without its positions (`compactions[3].tokens_before` -> `compactions.tokens_before`)."""
    import re

    return re.sub(r"\[\d+\]", "", path)


def compare(file: Path, policy: str, tokenizer: str, grid: str,
            settings: tuple[Sequence[int], Sequence[int], Sequence[int]] | None = None,
            ) -> list[tuple[tuple[int, int, int], list[str], Any]]:
    """(setting, differing fields, (exact, walk) records) of each run of `file` under `policy`, over
    `settings` (windows, reserves, keeps) or the `grid`."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay.session import replay_session
    from sessiontools.replay.transcripts import replay_transcript
    from sessiontools.transcript.pi.neutral import pi_transcript

    s = load_source(file)
    rec = _recorded_setting(file)
    if settings is not None:
        ws, rs, ks = (list(x) for x in settings)
    elif grid == "recorded" and rec:
        ws, rs, ks = [rec[0]], [rec[1]], [rec[2]]
    else:
        ws, rs, ks = list(WINDOWS), list(RESERVES), list(KEEPS)
    (exact,) = replay_session(s, windows=ws, reserves=rs, keeps=ks, policy=policy, truth_tokenizer=tokenizer)
    t = pi_transcript(s, pi_version=policy[-1])
    (walked,) = replay_transcript(t, windows=ws, reserves=rs, keeps=ks, policy=policy, truth_tokenizer=tokenizer)
    out = []
    for a, b in zip(exact.runs, walked.runs, strict=True):
        st = a.settings
        ra, rb = record(exact, a), record(walked, b)
        out.append(((st.context_window, st.reserve_tokens, st.keep_recent_tokens), list(diff(ra, rb)), (ra, rb)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--tokenizer", action="append", choices=("chars4", "o200k", "auto"))
    ap.add_argument("--policy", action="append", choices=("pi-0", "pi-1"))
    ap.add_argument("--grid", choices=("small", "recorded"), default="small")
    ap.add_argument("--show", type=int, default=6, help="differing fields shown per run")
    ap.add_argument("--quiet", action="store_true", help="counts only")
    a = ap.parse_args(argv)
    runs = same = 0
    by_field: Counter[str] = Counter()
    by_first: Counter[str] = Counter()
    for tok in a.tokenizer or ["chars4"]:
        for f in a.files or default_files():
            for pol in a.policy or ["pi-0", "pi-1"]:
                for setting, fields, _ in compare(f, pol, tok, a.grid):
                    runs += 1
                    if not fields:
                        same += 1
                        continue
                    names = sorted({_field(x) for x in fields})
                    by_field.update(names)
                    by_first[_field(fields[0])] += 1
                    if not a.quiet:
                        print(f"{f.stem} {pol} {setting} {tok}: {len(fields)} fields: {', '.join(fields[:a.show])}")
    print(f"\n{same} of {runs} runs identical on every field")
    print("runs differing, by field:", *(f"  {n:4d} {k}" for k, n in by_field.most_common()), sep="\n")
    print("runs differing, by first differing field:", *(f"  {n:4d} {k}" for k, n in by_first.most_common()), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
