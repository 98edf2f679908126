"""The command lines whose JSON output is kept in tests/golden/ and must not drift.

`python -m tests.golden.cases --write` regenerates the files (do it only for a change you list in the
closing note of the issue that makes it); `tests/golden/test_golden.py` compares.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "out"
SHARED = ROOT.parent / "shared" / "sessions" / "pi"

SAMPLES = "sample_sessions"
PI_SAMPLES = [f"{SAMPLES}/{n}" for n in sorted(p.name for p in (ROOT / SAMPLES).glob("*.jsonl"))]

#: name -> argv after `sessiontools` (run from the repository root; every one with --format json)
CASES: dict[str, list[str]] = {
    "inspect-samples": ["inspect", SAMPLES],
    "replay-samples-demo": ["replay", SAMPLES, "--context-window", "16000,24000", "--reserve", "3000",
                            "--keep-recent", "4000"],
    "replay-samples-recorded": ["replay", SAMPLES, "--reserve", "3000", "--keep-recent", "4000",
                                "--context-window", "24000"],
    "replay-branches-all-leaves": ["replay", f"{SAMPLES}/pi1-branches.jsonl", "--all-leaves",
                                   "--context-window", "24000", "--reserve", "4000", "--keep-recent", "6000"],
    "estimate-error-samples": ["estimate-error", SAMPLES],
    "diff-summaries-samples": ["diff-summaries", SAMPLES],
    **{f"cut-{Path(p).stem}": ["cut", p] for p in PI_SAMPLES},
}
SHARED_CASES: dict[str, list[str]] = {
    "inspect-shared": ["inspect", "../shared/sessions/pi"],
    "replay-shared": ["replay", "../shared/sessions/pi", "--reserve", "16384,32768"],
    "estimate-error-shared": ["estimate-error", "../shared/sessions/pi"],
    "diff-summaries-shared": ["diff-summaries", "../shared/sessions/pi"],
    **{f"cut-shared-{n}": ["cut", f"../shared/sessions/pi/{n}.jsonl"]
       for n in ("before-compaction", "compact", "large-session", "session")},
}


def run_case(argv: list[str], cache_dir: str) -> tuple[int, bytes]:
    env = {**os.environ, "SESSIONTOOLS_CACHE_DIR": cache_dir, "NO_COLOR": "1", "COLUMNS": "200"}
    exe = Path(sys.executable).parent / "sessiontools"
    jobs = [] if argv[0] == "cut" else ["--jobs", "1"]
    proc = subprocess.run([str(exe), *argv, "--format", "json", *jobs], cwd=ROOT, env=env,
                          capture_output=True, timeout=600)
    return proc.returncode, proc.stdout


def all_cases() -> dict[str, list[str]]:
    return {**CASES, **(SHARED_CASES if SHARED.is_dir() else {})}


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    only = set(sys.argv[2:])
    with tempfile.TemporaryDirectory() as cache:
        for name, argv in all_cases().items():
            if only and name not in only:
                continue
            code, out = run_case(argv, cache)
            (GOLDEN / f"{name}.json").write_bytes(out)
            (GOLDEN / f"{name}.exit").write_text(f"{code}\n")
            print(f"{name}: exit {code}, {len(out)} bytes")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "--write":
        raise SystemExit("usage: python -m tests.golden.cases --write [NAME...]")
    main()
