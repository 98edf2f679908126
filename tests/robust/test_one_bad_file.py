"""One bad file does not sink a run: the others are read and reported, the bad one is named, and the
exit code says so (3), as the README documents."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontools.read import parallel
from tests.robust.mutate import BASES, first_line, mutated, run, write


def _dir_of_20(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    for i in range(19):
        shutil.copy(BASES["pi"], d / f"good-{i:02d}.jsonl")
    return d


def test_odd_value_file_among_good_ones_is_read_with_a_diagnostic(tmp_path: Path) -> None:
    """19 good files and one with `"role": {"a": []}`: all 20 are reported, the odd line named, exit 0."""
    d = _dir_of_20(tmp_path)
    lines = BASES["pi"].read_text().splitlines()
    i = first_line(lines, lambda r: r.get("type") == "message" and r["message"].get("role") == "user")
    write(d / "odd.jsonl", mutated(lines, i, ("message", "role"), {"a": []}))
    code, err = run(["inspect", str(d), "--format", "json", "-o", str(tmp_path / "o.json")])
    assert code == 0, err
    assert len(json.loads((tmp_path / "o.json").read_text())["sessions"]) == 20
    assert f"{d / 'odd.jsonl'}:{i + 1}: message.role: not a string (dict); dropped" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_still_fails_is_named_and_the_others_are_reported(tmp_path: Path, jobs: str) -> None:
    """A bug on one file (here an injected exception in its analysis) becomes that file's error: the
    other 19 are in the output, the file is named, the exit code is 3 (not 70, not an empty run)."""
    d = _dir_of_20(tmp_path)
    shutil.copy(BASES["pi"], d / "odd.jsonl")
    script = (
        "import sys, sessiontools.analysis.inspect as m\n"
        "orig = m.inspect_source\n"
        "def boom(s, **kw):\n"
        "    if s.path.endswith('odd.jsonl'): raise RuntimeError('injected')\n"
        "    return orig(s, **kw)\n"
        "m.inspect_source = boom\n"
        "from sessiontools.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"}
    out = tmp_path / "o.json"
    p = subprocess.run([sys.executable, "-c", script, "inspect", str(d), "--format", "json", "-o", str(out),
                        "--jobs", jobs], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 3, p.stderr
    assert len(json.loads(out.read_text())["sessions"]) == 19
    assert f"{d / 'odd.jsonl'}: internal error while reading or analysing this file (RuntimeError: injected)" in p.stderr
    assert "Traceback" not in p.stderr


def test_memory_error_on_one_file_is_contained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a MemoryError while one file is read leaves the others alone."""
    import sessiontools.read.sources as sources

    d = _dir_of_20(tmp_path)
    shutil.copy(BASES["pi"], d / "odd.jsonl")
    orig = sources.load_source

    def load(path, **kw):  # type: ignore[no-untyped-def]
        if str(path).endswith("odd.jsonl"):
            raise MemoryError
        return orig(path, **kw)

    monkeypatch.setattr(parallel, "load_source", load)
    code, err = run(["inspect", str(d), "--format", "json", "-o", str(tmp_path / "o.json"), "--jobs", "1"])
    assert code == 3
    assert "odd.jsonl: internal error while reading or analysing this file (out of memory)" in err
    assert len(json.loads((tmp_path / "o.json").read_text())["sessions"]) == 19


def test_named_unreadable_file_exits_3_and_the_others_are_read(tmp_path: Path) -> None:
    """A named file without read permission: `error: F: permission denied`, the other file is still
    reported, exit 3 (click's own readability check used to stop the whole run with exit 2)."""
    import tempfile

    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: root reads any file")
    d = Path(tempfile.mkdtemp()) if root else tmp_path  # (pytest's own tmp is private to root)
    try:
        d.chmod(0o755)
        good, bad = d / "good.jsonl", d / "bad.jsonl"
        shutil.copy(BASES["pi"], good)
        shutil.copy(BASES["pi"], bad)
        good.chmod(0o644)
        bad.chmod(0)
        cmd = [sys.executable, "-m", "sessiontools", "inspect", str(bad), str(good), "--format", "json"]
        if root:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd="/",
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        assert p.returncode == 3, p.stderr
        assert f"error: {bad}: permission denied" in p.stderr
        assert len(json.loads(p.stdout)["sessions"]) == 1
    finally:
        if root:
            shutil.rmtree(d)
