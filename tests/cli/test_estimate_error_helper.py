"""A cold estimate-error run counts in vocabulary helper processes (`tokens.remote`); its every figure
is the run's without them (the same process started with the cache file already there, so that
this process loads the vocabularies and counts itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(str(p) for p in (ROOT / "sample_sessions").glob("pi*.jsonl"))

DRIVER = """
import sys
from sessiontools.tokens import remote
started = []
run = remote.Helper.run
def recorded(self):
    started.append(self.name)
    return run(self)
remote.Helper.run = recorded
from sessiontools.cli import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code or 0
sys.stderr.write(f"helpers {sorted(started)} left {sorted(remote._HELPERS)}\\n")
sys.exit(code)
"""


def _run(tmp: Path, name: str, args: list[str], warm_file: bool) -> tuple[bytes, str]:
    cache = tmp / name
    cache.mkdir()
    if warm_file:
        (cache / "tokens.sqlite").write_bytes(b"")  # an (empty) cache on disk: no helper
    out = tmp / f"{name}.json"
    proc = subprocess.run([sys.executable, "-c", DRIVER, "estimate-error", *SAMPLES, *args, "--format", "json",
                           "-o", str(out), "--jobs", "1"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, SESSIONTOOLS_CACHE_DIR=str(cache)), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes(), proc.stderr.strip().splitlines()[-1]


@pytest.mark.skipif(not hasattr(os, "fork") or len(SAMPLES) < 3, reason="the helper is forked; needs the samples")
def test_cold_run_with_helpers_gives_the_same_report(tmp_path: Path) -> None:
    """Every estimator (both vocabularies: two helpers at once)."""
    cold, seen = _run(tmp_path, "cold", [], warm_file=False)
    assert seen == "helpers ['cl100k_base', 'o200k_base'] left []"
    plain, seen = _run(tmp_path, "plain", [], warm_file=True)
    assert seen == "helpers [] left []"
    assert cold == plain
