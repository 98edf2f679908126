"""Every output is written atomically (issue 27): a temporary in the same directory, fsync'd, renamed
over the target. A write error (an injected ENOSPC, or a real full tmpfs) or Ctrl-C leaves the
previous file as it was, names the file and the OS error, exits 3, and leaves no temporary."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sessiontools.errors import OutputError
from sessiontools.report import writers
from sessiontools.report.writers import atomic_open, write_atomic
from tests.conftest import SAMPLES
from tests.robust.mutate import run

PI = SAMPLES / "pi0-tiny.jsonl"
OLD = b'{"previous": "output", "valid": true}\n'


def _enospc(*_a: object, **_k: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if ".sessiontools-" in p.name)


def test_write_atomic_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    f = tmp_path / "o.json"
    f.write_bytes(OLD)
    f.chmod(0o640)
    write_atomic(f, "new\n")
    assert f.read_text() == "new\n"
    assert f.stat().st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def test_write_error_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "o.json"
    f.write_bytes(OLD)
    monkeypatch.setattr(writers.os, "fsync", _enospc)
    with pytest.raises(OutputError) as info:
        write_atomic(f, b"x" * 100_000)
    assert str(info.value) == f"{f}: cannot write (No space left on device); the previous file is left as it was"
    assert f.read_bytes() == OLD
    assert _leftovers(tmp_path) == []


def test_interrupt_removes_the_temporary(tmp_path: Path) -> None:
    f = tmp_path / "o.txt"
    f.write_bytes(OLD)
    with pytest.raises(KeyboardInterrupt), atomic_open(f) as fh:
        fh.write("half of a table")
        raise KeyboardInterrupt
    assert f.read_bytes() == OLD
    assert _leftovers(tmp_path) == []


def _outputs(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """Every way a command writes a file: (arguments, the file written)."""
    p = str(PI)
    return {
        "inspect-json": (["inspect", p, "-o", str(tmp / "o.json")], "o.json"),
        "inspect-table": (["inspect", p, "-o", str(tmp / "o.txt")], "o.txt"),
        "estimate-csv": (["estimate-error", p, "--no-cache", "-o", str(tmp / "o.csv")], "o.csv"),
        "estimate-parquet": (["estimate-error", p, "--no-cache", "-o", str(tmp / "o.parquet")], "o.parquet"),
        "estimate-plot": (["estimate-error", p, "--no-cache", "--format", "json", "--plot", str(tmp / "p.svg")], "p.svg"),
        "estimate-calibration": (["estimate-error", p, "--no-cache", "--format", "json", "--save-calibration",
                                  str(tmp / "c.json")], "c.json"),
        "replay-plot": (["replay", p, "--format", "json", "--context-window", "8000", "--reserve", "1000",
                         "--plot", str(tmp / "r.png")], "r.png"),
        "replay-compactions": (["replay", p, "--format", "json", "--context-window", "8000", "--reserve", "1000",
                                "--compactions-output", str(tmp / "c.csv")], "c.csv"),
        "diff-markdown": (["diff-summaries", p, "--format", "markdown", "-o", str(tmp / "d.md")], "d.md"),
        "report-html": (["report", p, "-o", str(tmp / "r.html"), "--context-window", "8000", "--reserve", "1000"],
                        "r.html"),
    }


@pytest.mark.parametrize("case", sorted(_outputs(Path("."))))
def test_every_output_goes_through_the_atomic_writer(case: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With the disk full (fsync raising ENOSPC) the command names the file and the error, exits 3,
    and the previous file is byte-identical; without the fault the same command writes the file."""
    args, name = _outputs(tmp_path)[case]
    target = tmp_path / name
    target.write_bytes(OLD)
    with monkeypatch.context() as m:
        m.setattr(writers.os, "fsync", _enospc)
        code, err = run(args)
    assert code == 3, err
    assert f"error: {target}: cannot write (No space left on device); the previous file is left as it was" in err
    assert target.read_bytes() == OLD
    assert _leftovers(tmp_path) == []
    code, err = run(args)
    assert code == 0, err
    assert target.read_bytes() != OLD and target.stat().st_size > 0


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 64 KiB tmpfs (needs root and mount; skipped cleanly otherwise)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)  # (a file still open: detach)


def test_real_full_disk_keeps_the_previous_output(tiny_tmpfs: Path) -> None:
    """A valid previous -o JSON on a 64 KiB tmpfs; the new output (far larger) does not fit: the old
    file is intact and valid, the error names it, exit 3, no temporary is left."""
    import json

    target = tiny_tmpfs / "o.json"
    target.write_bytes(OLD)
    (tiny_tmpfs / "filler").write_bytes(b"f" * 48 * 1024)  # what is left is far less than the output
    files = sorted(SAMPLES.glob("pi*.jsonl"))
    code, err = run(["inspect", *map(str, files), "--format", "json", "--all-leaves", "-o", str(target)])
    assert code == 3, err
    assert f"{target}: cannot write (No space left on device)" in err
    assert json.loads(target.read_bytes()) == json.loads(OLD)
    assert _leftovers(tiny_tmpfs) == []
