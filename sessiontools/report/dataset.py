"""Write the exported dataset: hive-partitioned Parquet any engine reads (docs/dataset.md).

Layout under the dataset directory `ROOT`:

    ROOT/_dataset.json                                   {"schema_version": 2, "tables": [...]}
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
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sessiontools.analysis.dataset import SCHEMA_VERSION, TABLES
from sessiontools.errors import UsageError
from sessiontools.report.writers import frame_bytes, write_atomic

MANIFEST = "_files"
META = "_dataset.json"


def _write_parquet(frame: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, frame_bytes(frame, "parquet"))  # (a temporary unique to this process and call)


class DatasetWriter:
    """Append frames to a dataset directory; `exported_hashes` are the files already in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        meta = root / META
        if root.exists() and not root.is_dir():
            raise UsageError(f"--output {root}: is a file; give a directory for the dataset")
        if meta.is_file():
            found = json.loads(meta.read_text(encoding="utf-8")).get("schema_version")
            if found != SCHEMA_VERSION:
                raise UsageError(f"{root}: a dataset of schema version {found}; this sessiontools writes version "
                                 f"{SCHEMA_VERSION}: export into a new directory")
        elif root.is_dir() and any(root.iterdir()):
            raise UsageError(f"--output {root}: the directory is not empty and holds no sessiontools dataset")
        self.parts: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
        self.manifest: list[dict[str, Any]] = []

    def exported_hashes(self) -> set[str]:
        import polars as pl

        files = sorted((self.root / MANIFEST).glob("*.parquet"))
        if not files:
            return set()
        return set(pl.read_parquet(files, columns=["content_hash"])["content_hash"].to_list())

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
        for (table, agent, month), frames in sorted(self.parts.items()):
            path = self.root / table / f"agent={agent}" / f"month={month}" / f"part-{run_id}.parquet"
            _write_parquet(pl.concat(frames, how="vertical"), path)
            written.append(path)
        if self.manifest:
            path = self.root / MANIFEST / f"part-{run_id}.parquet"
            _write_parquet(files_frame(self.manifest), path)
            written.append(path)
        meta = {"schema_version": SCHEMA_VERSION, "tables": list(TABLES), "partitions": ["agent", "month"],
                "manifest": MANIFEST, "docs": "docs/dataset.md in the sessiontools repository"}
        write_atomic(self.root / META, json.dumps(meta, indent=2) + "\n")
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
