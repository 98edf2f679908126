"""Only regular files are read (issue 27): a FIFO, a device or a socket is refused with its reason,
also when a glob matches it, and never blocks (it is never opened); a file over the size limit is
refused with the override named; symlink loops are reported, and `**` globs cannot loop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.robust.mutate import run

PI = SAMPLES / "pi0-tiny.jsonl"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess with a timeout: a blocked open would hang, not fail."""
    return subprocess.run([sys.executable, "-m", "sessiontools", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    f = tmp_path / "pipe.jsonl"
    os.mkfifo(f)
    (tmp_path / "ok.jsonl").write_bytes(PI.read_bytes())
    return f


@pytest.mark.parametrize("command", [["inspect"], ["export", "-o", "{tmp}/ds"], ["estimate-error", "--no-cache"],
                                     ["cut"]])
def test_fifo_is_refused_without_blocking(fifo: Path, command: list[str]) -> None:
    args = [a.replace("{tmp}", str(fifo.parent)) for a in command]
    p = _cli(args[0], str(fifo), *args[1:])
    assert p.returncode == 3, p.stderr
    assert f"error: {fifo}: a named pipe (FIFO), not a regular file; not read" in p.stderr
    assert "Traceback" not in p.stderr


def test_fifo_matched_by_a_glob_is_refused_and_the_others_read(fifo: Path) -> None:
    p = _cli("inspect", str(fifo.parent / "*.jsonl"), "--format", "json")
    assert p.returncode == 3, p.stderr
    assert "a named pipe (FIFO), not a regular file" in p.stderr
    assert '"sessions"' in p.stdout and "ok.jsonl" in p.stdout


def test_dev_zero_is_refused_under_a_memory_limit(tmp_path: Path) -> None:
    """`inspect /dev/zero` used to grow to 3.8 GB and end in MemoryError, `export` to hash forever;
    with 2 GiB of address space both now exit 3 at once (the device is never opened)."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
    for cmd in ("inspect", "export"):
        extra = f", '-o', '{tmp_path / 'ds'}'" if cmd == "export" else ""
        code = f"{limit}import sys; from sessiontools.cli import main; sys.exit(main(['{cmd}', '/dev/zero'{extra}]))"
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert p.returncode == 3, p.stderr
        assert "error: /dev/zero: a character device, not a regular file; not read" in p.stderr


def test_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        code, err = run(["inspect", str(path)])
    finally:
        s.close()
    assert code == 3 and "a socket, not a regular file" in err


def test_size_limit_and_its_override(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(PI.read_bytes())
    p = _cli("inspect", str(f), env={"SESSIONTOOLS_MAX_FILE_BYTES": "1000"})
    assert p.returncode == 3
    assert (f"error: {f}: {f.stat().st_size:,} bytes, over the limit of 1,000 bytes for one input file; not read "
            "(raise it with SESSIONTOOLS_MAX_FILE_BYTES=N, 0 for no limit)") in p.stderr
    assert _cli("inspect", str(f), env={"SESSIONTOOLS_MAX_FILE_BYTES": "0"}).returncode == 0
    bad = _cli("inspect", str(f), env={"SESSIONTOOLS_MAX_FILE_BYTES": "lots"})
    assert bad.returncode == 2 and "SESSIONTOOLS_MAX_FILE_BYTES='lots'" in bad.stderr


def test_symlink_loop_is_reported_and_double_star_globs_cannot_loop(tmp_path: Path) -> None:
    """A self-referencing link matched by a glob is an error line (was exit 70, "Symlink loop"); two
    directory links pointing at each other do not make a `**` glob walk forever."""
    d = tmp_path / "tree"
    (d / "a").mkdir(parents=True)
    (d / "b").mkdir()
    (d / "a" / "s.jsonl").write_bytes(PI.read_bytes())
    (d / "a" / "to-b").symlink_to("../b")
    (d / "b" / "to-a").symlink_to("../a")
    (d / "self.jsonl").symlink_to("self.jsonl")
    p = _cli("inspect", str(d / "**" / "*.jsonl"), "--format", "json")
    assert p.returncode == 3, p.stderr
    assert f"{d / 'self.jsonl'}: cannot read (Too many levels of symbolic links)" in p.stderr
    assert p.stdout.count('"path"') == 1  # a/s.jsonl once, not once per way round the loop
    p = _cli("inspect", str(d), "--format", "json")
    assert "internal error" not in p.stderr and p.stdout.count('"path"') == 1
