"""Issue 24: the exact walk's answers, frozen before it was deleted (`tests/replay/data/walk_reference.json.gz`).

    python -m lab.walk_reference [--out PATH]

Runs Pi's exact walk (`replay.session.replay_session`, deleted in session 10: regenerate from a commit
before that one) over every Pi sample (W 16k/24k/32k x reserve 3000/4000 x keep 2000/4000 x pi-0/pi-1
x truth counter chars4/o200k/auto) and the real Pi sessions in `../shared/sessions/pi` (same grid,
chars4 and o200k), each run's index-free record (`lab.walk_parity.record`) keyed by `run_key`.
`tests/replay/test_walk_reference.py` replays the same set through the one walk and compares the
records field by field. The real sessions' records are stored by digest only (their text stays out
of the repository; the test compares their digests and, on a difference, says which run).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.walk_parity import KEEPS, RESERVES, SAMPLES, SHARED, WINDOWS, record

OUT = Path(__file__).resolve().parent.parent / "tests" / "replay" / "data" / "walk_reference.json.gz"
POLICIES = ("pi-0", "pi-1")
SAMPLE_COUNTERS = ("chars4", "o200k", "auto")
SHARED_COUNTERS = ("chars4", "o200k")


def run_key(name: str, policy: str, counter: str, setting: tuple[int, int, int]) -> str:
    return f"{name}|{policy}|{counter}|{setting[0]}|{setting[1]}|{setting[2]}"


def canonical(rec: Any) -> str:
    """The record as the file stores it (JSON, tuples as lists): what the comparison reads back."""
    return json.dumps(rec, sort_keys=True, separators=(",", ":"))


def _floats(v: Any) -> Any:
    """`v` with every number a float: the field comparison (`lab.walk_parity.diff`) takes 3 == 3.0, and so
    does the digest."""
    if isinstance(v, dict):
        return {k: _floats(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_floats(x) for x in v]
    return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


def digest(rec: Any) -> str:
    """A run record's digest (numbers compared by value, as the field comparison compares them)."""
    return hashlib.sha256(canonical(_floats(rec)).encode()).hexdigest()[:20]


def the_set() -> list[tuple[Path, str, str, bool]]:
    """(file, policy, counter, stored in full) of every frozen (file x policy x counter); each over the grid."""
    out = [(f, p, c, True) for f in sorted(SAMPLES.glob("*.jsonl")) for p in POLICIES for c in SAMPLE_COUNTERS]
    shared = sorted(SHARED.glob("*.jsonl")) if SHARED.is_dir() else []
    out += [(f, p, c, False) for f in shared for p in POLICIES for c in SHARED_COUNTERS]
    return out


def exact_records(file: Path, policy: str, counter: str) -> dict[tuple[int, int, int], dict[str, Any]]:
    from sessiontools.read.sources import load_source
    from sessiontools.replay.session import replay_session  # type: ignore[attr-defined]

    (pr,) = replay_session(load_source(file), windows=list(WINDOWS), reserves=list(RESERVES), keeps=list(KEEPS),
                           policy=policy, truth_tokenizer=counter)
    return {(r.settings.context_window, r.settings.reserve_tokens, r.settings.keep_recent_tokens): record(pr, r)
            for r in pr.runs}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    samples: dict[str, Any] = {}
    shared: dict[str, str] = {}
    for f, pol, c, full in the_set():
        for setting, rec in exact_records(f, pol, c).items():
            key = run_key(f.stem, pol, c, setting)
            if full:
                samples[key] = json.loads(canonical(rec))
            else:
                shared[key] = digest(rec)
        print(f"{f.stem} {pol} {c}", file=sys.stderr)
    doc = {"schema_version": 1, "windows": WINDOWS, "reserves": RESERVES, "keeps": KEEPS,
           "samples": samples, "shared": shared}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as z:
        z.write(canonical(doc).encode())
    tmp.replace(a.out)
    print(f"{len(samples)} sample runs, {len(shared)} shared runs -> {a.out} ({a.out.stat().st_size:,} bytes)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
