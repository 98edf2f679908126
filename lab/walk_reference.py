"""Issue 24: the exact walk's answers, frozen before it was deleted (`tests/replay/data/walk_reference.json.gz`).

    python -m lab.walk_reference [--out PATH]

Runs Pi's exact walk (`replay.session.replay_session`, deleted in session 10: the file was written at
commit 8a46fd0, the last with both walks; regenerate from there) over every Pi sample (W 16k/24k/32k x reserve 3000/4000 x keep 2000/4000 x pi-0/pi-1
x truth counter chars4/o200k/auto) and the real Pi sessions in `../shared/sessions/pi` (same grid,
chars4 and o200k), and the synthetic fixtures of the event kinds the real sessions taught (`FIXTURES`:
aborted and failed replies, a reply sharing its line with a compaction; chars4), each run's
index-free record (`record`) keyed by `run_key`.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
SHARED = ROOT.parent / "shared" / "sessions" / "pi"
WINDOWS = (16000, 24000, 32000)
RESERVES = (3000, 4000)
KEEPS = (2000, 4000)
OUT = Path(__file__).resolve().parent.parent / "tests" / "replay" / "data" / "walk_reference.json.gz"
POLICIES = ("pi-0", "pi-1")
SAMPLE_COUNTERS = ("chars4", "o200k", "auto")
SHARED_COUNTERS = ("chars4", "o200k")


def _requests(run: Any) -> list[tuple[Any, ...]]:
    return [(p.entry_id, round(p.truth, 6), p.truth_source.value, None if p.policy_count is None else
             round(p.policy_count, 6), p.overflow, p.output, p.epoch, p.recorded_context) for p in run.requests]


def record(pr: Any, run: Any) -> dict[str, Any]:
    """A run's record with its index-free fields only (the two walks indexed requests differently:
    entries by base index, messages by message index; entry ids are the same), each request's truth,
    source and count, and the recorded points."""
    from sessiontools.replay.session import run_record

    rec = run_record(pr, run)
    for k in ("session", "agent", "truth_model"):
        rec.pop(k, None)
    rec["requests"] = _requests(run)
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


def run_key(name: str, policy: str, counter: str, setting: tuple[int, int, int]) -> str:
    return f"{name}|{policy}|{counter}|{setting[0]}|{setting[1]}|{setting[2]}"


def canonical(rec: Any) -> str:
    """The record as the file stores it (JSON, tuples as lists): what the comparison reads back."""
    return json.dumps(rec, sort_keys=True, separators=(",", ":"))


def _floats(v: Any) -> Any:
    """`v` with every number a float: the field comparison (`diff`) takes 3 == 3.0, and so
    does the digest."""
    if isinstance(v, dict):
        return {k: _floats(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_floats(x) for x in v]
    return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


def digest(rec: Any) -> str:
    """A run record's digest (numbers compared by value, as the field comparison compares them)."""
    return hashlib.sha256(canonical(_floats(rec)).encode()).hexdigest()[:20]


_ZERO = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}


def _lines(sample: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in (SAMPLES / f"{sample}.jsonl").read_text().splitlines()]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def unusable_fixture(sample: str, out: Path) -> Path:
    """`sample` with every other run-final reply, by turns: aborted with an empty usage, aborted with
    its usage kept (0.x checks it by that usage: 10k+ tokens over the threshold), and an error that is
    no overflow (a server error, no content, no usage)."""
    lines = _lines(sample)
    stops = [e for e in lines if e.get("type") == "message" and e["message"].get("role") == "assistant"
             and e["message"].get("stopReason") == "stop"]
    for n, e in enumerate(stops[1::2][:6]):
        m = e["message"]
        if n % 3 == 0:
            m.update(stopReason="aborted", usage=dict(_ZERO), errorMessage="Request was aborted")
        elif n % 3 == 1:
            m.update(stopReason="aborted", errorMessage="Request was aborted")
        else:
            m.update(stopReason="error", usage=dict(_ZERO), content=[], errorMessage="500 Internal server error")
    return _write(out, [json.dumps(e) for e in lines])


def glued_fixture(sample: str, out: Path) -> Path:
    """`sample` with each compaction glued onto its reply's line (two JSON values on one line: the
    reader recovers both, the reply and the compaction sharing a line number)."""
    raw = (SAMPLES / f"{sample}.jsonl").read_text().splitlines()
    lines: list[str] = []
    for line in raw:
        if json.loads(line).get("type") == "compaction" and lines:
            lines[-1] += line
        else:
            lines.append(line)
    return _write(out, lines)


#: (fixture, sample, policies): the synthetic fixtures frozen with the samples.
FIXTURES = (
    *(("unusable", s, POLICIES) for s in ("pi0-threshold-5x", "pi1-threshold-5x", "pi1-overflow")),
    ("glued", "pi0-threshold-5x", ("pi-0",)),
    ("glued", "pi1-threshold-5x", ("pi-1",)),
)


def fixture_file(kind: str, sample: str, folder: Path) -> Path:
    """The fixture `kind` of `sample`, written in `folder` as `<kind>~<sample>.jsonl` (its run key's name)."""
    make = unusable_fixture if kind == "unusable" else glued_fixture
    return make(sample, folder / f"{kind}~{sample}.jsonl")


def the_set(folder: Path | None = None) -> list[tuple[Path, str, str, bool]]:
    """(file, policy, counter, stored in full) of every frozen (file x policy x counter); each over the
    grid. `folder`: where the fixtures are written (None: none)."""
    out = [(f, p, c, True) for f in sorted(SAMPLES.glob("*.jsonl")) for p in POLICIES for c in SAMPLE_COUNTERS]
    if folder is not None:
        out += [(fixture_file(k, s, folder), p, "chars4", True) for k, s, pols in FIXTURES for p in pols]
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
    import tempfile

    samples: dict[str, Any] = {}
    shared: dict[str, str] = {}
    folder = Path(tempfile.mkdtemp(prefix="walk_reference"))
    for f, pol, c, full in the_set(folder):
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
