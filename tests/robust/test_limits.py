"""Input limits and odd lines (issue 27): a line over the per-line limit is skipped with its
`file:line` reason in every reader, and `SESSIONTOOLS_MAX_LINE_BYTES` overrides the limit; a Claude
Code line holding a lone surrogate escape is repaired, not skipped; the dataset's lock timeout is
`SESSIONTOOLS_LOCK_TIMEOUT`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, MAX_LINE_BYTES_ENV
from sessiontools.read.sources import load_source
from tests.robust.mutate import BASES, first_line, mutated, run, write

#: (base, a predicate picking a line whose text can be padded, the key path of that text)
_PADDABLE = {
    "pi": (lambda r: r.get("type") == "message" and r["message"].get("role") == "user"
           and isinstance(r["message"].get("content"), list), ("message", "content", 0, "text")),
    "claude": (lambda r: r.get("type") == "user" and isinstance(r.get("message", {}).get("content"), str),
               ("message", "content")),
    "codex": (lambda r: r.get("type") == "response_item" and r["payload"].get("type") == "message"
              and r["payload"].get("role") == "user", ("payload", "content", 0, "text")),
}


def _long_line_file(tmp_path: Path, agent: str) -> tuple[Path, int, int]:
    """The agent's base with one line padded past all others: (file, its line, a limit only it passes)."""
    lines = BASES[agent].read_text().splitlines()
    longest = max(len(x.encode()) for x in lines)
    pred, path = _PADDABLE[agent]
    i = first_line(lines, pred)
    out = write(tmp_path / f"{agent}.jsonl", mutated(lines, i, path, "x" * (longest + 10_000)))
    return out, i + 1, longest + 1


@pytest.mark.parametrize("agent", sorted(_PADDABLE))
def test_a_line_over_the_limit_is_skipped_with_its_reason(tmp_path: Path, agent: str) -> None:
    f, line, limit = _long_line_file(tmp_path, agent)
    whole = load_source(f)
    assert not any("over the limit" in d.reason for d in whole.diagnostics)
    limited = load_source(f, max_line_bytes=limit)
    hits = [d for d in limited.diagnostics if f"over the limit of {limit:,} bytes for one line" in d.reason]
    assert [(d.path, d.line, d.kind) for d in hits] == [(str(f), line, "skipped")]
    assert MAX_LINE_BYTES_ENV in hits[0].reason  # the override is named
    # the other lines are still read
    n_whole = len(getattr(whole, "entries", None) or getattr(whole, "records", None) or ())
    n_limited = len(getattr(limited, "entries", None) or getattr(limited, "records", None) or ())
    assert 0 < n_limited < n_whole


def test_the_default_limit_is_far_above_real_lines() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 256 * 1024**2


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "SESSIONTOOLS_DEBUG"} | env
    return subprocess.run([sys.executable, "-m", "sessiontools", *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_the_line_limit_is_overridden_from_the_environment(tmp_path: Path) -> None:
    f, line, limit = _long_line_file(tmp_path, "pi")
    p = _cli(["inspect", str(f), "--format", "json"], {MAX_LINE_BYTES_ENV: str(limit)})
    assert p.returncode == 0, p.stderr
    assert f"{f}:{line}: line of " in p.stderr and f"over the limit of {limit:,} bytes" in p.stderr
    p = _cli(["inspect", str(f), "--format", "json", "--strict"], {MAX_LINE_BYTES_ENV: str(limit)})
    assert p.returncode == 3  # a skipped line fails --strict
    p = _cli(["inspect", str(f), "--format", "json", "--strict"], {MAX_LINE_BYTES_ENV: "0"})
    assert p.returncode == 0, p.stderr  # 0: no limit
    assert "over the limit" not in p.stderr


@pytest.mark.parametrize("value", ["ten", "-1", "1.5"])
def test_a_bad_line_limit_is_a_usage_error(tmp_path: Path, value: str) -> None:
    p = _cli(["inspect", str(BASES["pi"])], {MAX_LINE_BYTES_ENV: value})
    assert p.returncode == 2
    assert p.stderr.startswith(f"error: {MAX_LINE_BYTES_ENV}=") and "Traceback" not in p.stderr


def test_claude_code_line_with_a_lone_surrogate_is_repaired(tmp_path: Path) -> None:
    lines = BASES["claude"].read_text().splitlines()
    pred, path = _PADDABLE["claude"]
    i = first_line(lines, pred)
    f = write(tmp_path / "s.jsonl", mutated(lines, i, path, "before \ud800 after"))
    assert "\\ud800" in f.read_text()
    cf = load_source(f)
    notes = [d for d in cf.diagnostics if d.line == i + 1]
    assert [(d.reason, d.kind) for d in notes] == [("lone surrogate escape(s) in 1 string(s) replaced by U+FFFD",
                                                   "recovered")]
    good = load_source(BASES["claude"])
    assert len(cf.records) == len(good.records)  # the line is read, not skipped as "not JSON"
    rec = next(r for r in cf.records if r.line == i + 1)
    assert rec.content == "before \ufffd after"
    code, err = run(["inspect", str(f), "--format", "json", "-o", str(tmp_path / "o.json")])
    assert code == 0, err
    assert "not JSON" not in err


def test_claude_code_line_that_is_not_json_is_still_skipped(tmp_path: Path) -> None:
    lines = BASES["claude"].read_text().splitlines()
    f = write(tmp_path / "s.jsonl", [*lines[:2], '{"type": "user", "x": "\\ud800"', *lines[2:]])
    cf = load_source(f)
    assert [(d.line, d.reason) for d in cf.diagnostics if d.line == 3] == [(3, "not JSON")]


def test_lock_timeout_from_the_environment(tmp_path: Path) -> None:
    """Another process holds the dataset's lock: with SESSIONTOOLS_LOCK_TIMEOUT=1 the export gives up
    after about a second, exit 3, one line naming the holder and the variable; nothing is written."""
    ds = tmp_path / "ds"
    ds.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(ds / '.sessiontools.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, str(os.getpid()).encode(), 0)\n"
        "print('held', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        t0 = time.monotonic()
        p = _cli(["export", str(BASES["pi"]), "-o", str(ds)], {"SESSIONTOOLS_LOCK_TIMEOUT": "1"})
        elapsed = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    assert p.returncode == 3, p.stderr
    assert "waited 1 s" in p.stderr and f"pid {holder.pid}" in p.stderr and "SESSIONTOOLS_LOCK_TIMEOUT" in p.stderr
    assert "Traceback" not in p.stderr
    assert elapsed < 30
    assert sorted(x.name for x in ds.iterdir()) == [".sessiontools.lock"]
    # once the lock is free, the same export succeeds
    p = _cli(["export", str(BASES["pi"]), "-o", str(ds)], {"SESSIONTOOLS_LOCK_TIMEOUT": "1"})
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("value", ["soon", "-3", "inf"])
def test_a_bad_lock_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    p = _cli(["export", str(BASES["pi"]), "-o", str(tmp_path / "ds")], {"SESSIONTOOLS_LOCK_TIMEOUT": value})
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error: SESSIONTOOLS_LOCK_TIMEOUT=")
    assert not (tmp_path / "ds").exists()
