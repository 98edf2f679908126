"""Write the exported dataset: hive-partitioned Parquet any engine reads (docs/dataset.md).

Layout under the dataset directory `ROOT`:

    ROOT/_dataset.json                                   {"schema_version": 6, "tables": [...]}
    ROOT/_files/part-<run>.parquet                       the manifest: one row per exported file
    ROOT/<table>/agent=<agent>/month=<YYYY-MM>/part-<run>.parquet

`agent` and `month` (of the session's first timestamp, `unknown` when undated) are directory
partitions, not columns in the files: DuckDB (`hive_partitioning = true`), polars
(`hive_partitioning=True`) and Spark (partition discovery) add them as columns. Each export run
writes new part files named by the run (a hash of what it exported), never rewrites old ones, and
renames each file into place only once it is complete. The manifest is written last: a file is
"exported" (and skipped by the next run) only when its rows are all on disk.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sessiontools.analysis.dataset import SCHEMA_VERSION, TABLES
from sessiontools.errors import OutputError, UsageError
from sessiontools.report.writers import frame_bytes, write_atomic

MANIFEST = "_files"
META = "_dataset.json"


def _write_parquet(frame: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, frame_bytes(frame, "parquet"))  # (a temporary unique to this process and call)


LOCK = ".sessiontools.lock"
#: How long an export waits for another export into the same directory to finish (seconds).
LOCK_TIMEOUT = 600.0
_PART = re.compile(r"part-([0-9a-f]+)\.parquet")


def _ours(entry: Path) -> bool:
    """Whether a top-level entry of a dataset directory is one sessiontools writes (so a directory
    holding only such entries, e.g. the parts of a killed first export, is a dataset to resume)."""
    return (entry.name in (META, MANIFEST, LOCK) or (entry.is_dir() and entry.name in TABLES)
            or (entry.name.startswith(".") and ".sessiontools-" in entry.name))


@contextmanager
def dataset_lock(root: Path, timeout: float = LOCK_TIMEOUT, on_wait: Any = None) -> Iterator[None]:
    """An exclusive lock on the dataset directory (`ROOT/.sessiontools.lock`, flock): concurrent
    exports into one directory run one after the other. Waits up to `timeout` seconds, then raises
    `OutputError` saying who holds it; `on_wait()` is called once when it has to wait. Released
    when the block ends, or when the process dies (a killed export never leaves a stale lock)."""
    import fcntl
    import time

    if root.exists() and not root.is_dir():
        raise UsageError(f"--output {root}: is a file; give a directory for the dataset")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise OutputError(f"{root}: cannot create the dataset directory or its lock ({exc.strerror or exc})") from exc
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "another process"
                    raise OutputError(f"{root}: another export is writing into this dataset (pid {holder}); "
                                      f"waited {timeout:g} s: try again when it has finished, or wait longer with "
                                      "SESSIONTOOLS_LOCK_TIMEOUT=SECONDS") from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


class DatasetWriter:
    """Append frames to a dataset directory; `exported_hashes` are the files already in it.

    Make it while holding `dataset_lock(root)`: it reads the manifest and removes what an earlier
    run that was killed or failed left behind (part files of runs the manifest does not name, our
    temporaries), which only a writer that holds the lock may do."""

    def __init__(self, root: Path) -> None:
        self.root = root
        meta = root / META
        if root.exists() and not root.is_dir():
            raise UsageError(f"--output {root}: is a file; give a directory for the dataset")
        if meta.is_file():
            try:
                found = json.loads(meta.read_text(encoding="utf-8")).get("schema_version")
            except (ValueError, AttributeError):
                found = "unknown"
            if found != SCHEMA_VERSION:
                raise UsageError(f"{root}: a dataset of schema version {found}; this sessiontools writes version "
                                 f"{SCHEMA_VERSION}: export into a new directory")
        elif root.is_dir() and not all(_ours(e) for e in root.iterdir()):
            raise UsageError(f"--output {root}: the directory is not empty and holds no sessiontools dataset")
        self.parts: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
        self.manifest: list[dict[str, Any]] = []
        self.removed = self._clean() if root.is_dir() else []

    def committed_runs(self) -> set[str]:
        """The runs the manifest names: their part files are the dataset (others are not)."""
        import polars as pl

        files = sorted((self.root / MANIFEST).glob("part-*.parquet"))
        if not files:
            return set()
        return set(pl.read_parquet(files, columns=["run_id"])["run_id"].to_list())

    def _clean(self) -> list[Path]:
        """Remove part files of runs the manifest does not name, and our temporaries: what a killed
        or failed run left. Never counted: readers of the manifest ignore them; now they are gone."""
        committed = self.committed_runs()
        removed = []
        for table in TABLES:
            for f in sorted((self.root / table).rglob("*")):
                m = _PART.fullmatch(f.name)
                stale = (m is not None and m.group(1) not in committed) or ".sessiontools-" in f.name
                if stale and f.is_file():
                    f.unlink()
                    removed.append(f)
        for f in sorted((self.root / MANIFEST).glob(".*.sessiontools-*")) + sorted(self.root.glob(".*.sessiontools-*")):
            f.unlink()
            removed.append(f)
        return removed

    def exported_hashes(self) -> set[str]:
        import polars as pl

        files = sorted((self.root / MANIFEST).glob("*.parquet"))
        if not files:
            return set()
        return set(pl.read_parquet(files, columns=["content_hash"])["content_hash"].to_list())

    def exported_stamps(self) -> set[tuple[str, int, int]]:
        """(file, size, mtime_ns) of every exported local file, as stat'ed before its read."""
        import polars as pl

        files = sorted((self.root / MANIFEST).glob("*.parquet"))
        if not files:
            return set()
        frame = pl.read_parquet(files, columns=["file", "size", "mtime_ns"]).drop_nulls()
        return set(frame.iter_rows())

    def add(self, table: str, agent: str, month: str, frame: Any) -> None:
        if frame.height:
            self.parts[(table, agent, month)].append(frame)

    def record(self, row: dict[str, Any]) -> None:
        self.manifest.append(row)

    def close(self, run_id: str) -> list[Path]:
        """Write every buffered part and then the manifest; the paths written, in order."""
        import polars as pl

        from sessiontools.analysis.dataset_frames import files_frame

        written = []
        self.root.mkdir(parents=True, exist_ok=True)
        meta = {"schema_version": SCHEMA_VERSION, "tables": list(TABLES), "partitions": ["agent", "month"],
                "manifest": MANIFEST, "docs": "docs/dataset.md in the sessiontools repository"}
        write_atomic(self.root / META, json.dumps(meta, indent=2) + "\n")  # first: a killed run leaves a dataset
        for (table, agent, month), frames in sorted(self.parts.items()):
            path = self.root / table / f"agent={agent}" / f"month={month}" / f"part-{run_id}.parquet"
            _write_parquet(pl.concat(frames, how="vertical"), path)
            written.append(path)
        if self.manifest:
            path = self.root / MANIFEST / f"part-{run_id}.parquet"
            _write_parquet(files_frame(self.manifest), path)
            written.append(path)
        self.parts.clear()
        self.manifest = []
        return written


def tables_written(paths: Iterable[Path], root: Path) -> dict[str, int]:
    """How many part files each table got (for the summary line)."""
    out: dict[str, int] = {}
    for p in paths:
        name = p.relative_to(root).parts[0]
        out[name] = out.get(name, 0) + 1
    return out
