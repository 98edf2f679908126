"""Caches: cached estimate-error rows are keyed on the whole package's code; cache notes raised in
`--jobs` workers reach the user; the default number of workers follows the input size."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from sessiontools.cli import main
from sessiontools.read import parallel
from sessiontools.tokens import fingerprint
from tests.conftest import SAMPLES


def test_fingerprint_follows_every_source_file(tmp_path: Path) -> None:
    """Any .py file of the package counts, not only the three that compute the rows."""
    pkg = tmp_path / "pkg"
    shutil.copytree(fingerprint.PACKAGE_ROOT, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = fingerprint.sources_hash(pkg)
    assert fingerprint.sources_hash(pkg) == before  # deterministic
    reader = sorted((pkg / "read").rglob("*.py"))[0]  # a reader module: not one of the old three
    reader.write_text(reader.read_text() + "\n# changed\n")
    changed = fingerprint.sources_hash(pkg)
    assert changed != before
    (pkg / "new_module.py").write_text("X = 1\n")
    assert fingerprint.sources_hash(pkg) != changed
    assert fingerprint.code_fingerprint().startswith(__import__("sessiontools").__version__ + "+")


def test_fingerprint_lists_the_files_rglob_lists(tmp_path: Path) -> None:
    """`sources_hash` walks with os.walk: the same files, order and hash as `Path.rglob("*.py")` (its
    earlier listing), __pycache__ and non-.py files apart, nested folders in relative-path order."""
    import hashlib

    def by_rglob(root: Path) -> str:
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
            if "__pycache__" in f.relative_to(root).parts:
                continue
            h.update(f.relative_to(root).as_posix().encode("utf-8") + b"\0")
            h.update(f.read_bytes() + b"\0")
        return h.hexdigest()[:16]

    for rel, text in {"a.py": "A", "b/c.py": "C", "b/__pycache__/c.py": "stale", "b-c.py": "dash", "b/d/e.py": "E",
                      "notes.txt": "no", "b/.hidden.py": "H"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert fingerprint.sources_hash(tmp_path) == by_rglob(tmp_path)
    assert fingerprint.sources_hash(fingerprint.PACKAGE_ROOT) == by_rglob(fingerprint.PACKAGE_ROOT)


def _result_keys(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [k for (k,) in conn.execute("SELECT key FROM results")]


def test_cached_rows_are_keyed_on_the_code_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Same file, same options, other code: the cached rows are not reused."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    args = ["estimate-error", str(SAMPLES / "pi0-tiny.jsonl"), "--format", "json", "--jobs", "1"]
    assert main(args) == 0
    keys = _result_keys(tmp_path / "tokens.sqlite")
    assert len(keys) == 1 and fingerprint.code_fingerprint() in keys[0]
    assert main(args) == 0
    assert _result_keys(tmp_path / "tokens.sqlite") == keys  # warm: reused
    monkeypatch.setattr(fingerprint, "code_fingerprint", lambda: "0.1.0+othercode")
    assert main(args) == 0
    assert len(_result_keys(tmp_path / "tokens.sqlite")) == 2  # recomputed under the new key
    capsys.readouterr()


def test_cache_notes_from_jobs_workers_are_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A corrupt cache is rebuilt inside a worker process; its note must still reach stderr (once)."""
    monkeypatch.setenv("SESSIONTOOLS_CACHE_DIR", str(tmp_path))
    (tmp_path / "tokens.sqlite").write_bytes(b"this is not an SQLite database" * 100)
    files = [str(SAMPLES / "pi0-tiny.jsonl"), str(SAMPLES / "pi0-chinese.jsonl")]
    code = main(["estimate-error", *files, "--format", "json", "--jobs", "2"])
    err = capsys.readouterr().err
    assert code == 0
    notes = [ln for ln in err.splitlines() if "unusable" in ln and "rebuilt" in ln]
    assert notes, err
    assert len(notes) == len(set(notes))


def test_default_jobs_follow_input_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small inputs run in-process (worker start-up costs more than it saves); large ones use the cores."""
    files = sorted(SAMPLES.glob("*.jsonl"))
    assert parallel.default_jobs(files) == 1
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(parallel, "BYTES_PER_WORKER", 1)
    assert parallel.default_jobs(files) == 4
    assert parallel.default_jobs(files[:2]) == 2  # never more workers than files
    assert parallel.default_jobs([tmp_path / "missing.jsonl"]) == 1
