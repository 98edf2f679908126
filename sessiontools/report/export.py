"""`sessiontools export`: session files -> rows (per file, in workers) -> the Parquet dataset.

1. `plan_export(root, files)`: hash every file (`read.sources.content_digest`); a file whose hash is
   in the dataset's manifest, or repeats one seen earlier in this run, is skipped.
2. `ExportWorker` (picklable; `--jobs` processes or `--executor dask`): one file's rows, from
   `analysis.dataset.transcript_rows` and, with replay options, `replay.replay_records`.
3. `write_export(plan, results)`: frames per table and partition (`analysis.dataset_frames`,
   `replay.frames`), written by `report.dataset.DatasetWriter`, then the manifest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontools.analysis.dataset import ExportOptions, FileRows, transcript_rows
from sessiontools.errors import InputError
from sessiontools.replay.registry import replay_agents
from sessiontools.report.dataset import DatasetWriter


@dataclass(frozen=True, slots=True)
class ExportWorker:
    """The per-file function of `export`: any agent's loaded file -> `FileRows` (with its `file`)."""

    options: ExportOptions = ExportOptions()

    def __call__(self, source: Any) -> FileRows:
        from sessiontools.read.values import cleaned_call
        from sessiontools.transcript.load import transcript_of

        t = transcript_of(source, all_leaves=True)
        rows = transcript_rows(t, self.options)
        rows.file = str(source.path)
        if self.options.replay is not None and source.agent in replay_agents(self.options.replay.get("policy")):
            from sessiontools.replay import replay_records

            rows.tables["replay_runs"] = cleaned_call(replay_records, source, **self.options.replay)
        return rows


@dataclass(slots=True)
class ExportPlan:
    root: Path
    writer: DatasetWriter
    hashes: dict[str, str]  # file -> content hash, for the files to export
    new_files: list[str]
    already: int = 0  # files skipped: exported before
    duplicates: int = 0  # files skipped: same bytes as another file of this run
    exported_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def plan_export(root: Path, files: Sequence[Any]) -> ExportPlan:
    """Which files to export into `root` (see the module docstring)."""
    from sessiontools.read.sources import content_digest

    writer = DatasetWriter(root)
    known = writer.exported_hashes()
    plan = ExportPlan(root, writer, {}, [])
    seen: set[str] = set()
    for f in files:
        try:
            h = content_digest(f)
        except InputError:  # left to the reader, which reports it like every command does
            plan.new_files.append(str(f))
            continue
        if h in known:
            plan.already += 1
        elif h in seen:
            plan.duplicates += 1
        else:
            seen.add(h)
            plan.hashes[str(f)] = h
            plan.new_files.append(str(f))
    return plan


def _replay_frames(records: list[dict[str, Any]]) -> tuple[Any, Any]:
    from sessiontools.replay.frames import compactions_frame, runs_frame

    return runs_frame(records), compactions_frame(records)


def _with_common(frame: Any, common: dict[str, Any]) -> Any:
    """A replay frame with the dataset's common columns first (its `session` column is `file`)."""
    import polars as pl

    from sessiontools.analysis.dataset import SCHEMA_VERSION

    frame = frame.drop("session")
    lead = [pl.lit(SCHEMA_VERSION, pl.Int64).alias("schema_version"), pl.lit(common["file"], pl.Utf8).alias("file"),
            pl.lit(common["content_hash"], pl.Utf8).alias("content_hash"),
            pl.lit(common["session_id"], pl.Utf8).alias("session_id")]
    return frame.select(lead + [pl.col(c) for c in frame.columns])


def _add_file(plan: ExportPlan, rows: FileRows, run_id: str) -> dict[str, int]:
    from sessiontools.analysis.dataset_frames import table_frame
    from sessiontools.read.values import clean_strings

    file = rows.file
    sessions = rows.tables["sessions"]
    common = {"file": clean_strings(file), "content_hash": plan.hashes.get(file),  # (a file name not UTF-8)
              "session_id": sessions[0]["session_id"] if sessions else None}
    for table in ("sessions", "requests", "compactions", "summaries"):
        plan.writer.add(table, rows.agent, rows.month, table_frame(table, rows.tables[table], common))
    records = rows.tables.get("replay_runs") or []
    if records:
        runs, comps = _replay_frames(records)
        plan.writer.add("replay_runs", rows.agent, rows.month, _with_common(runs, common))
        plan.writer.add("replay_compactions", rows.agent, rows.month, _with_common(comps, common))
    counts = {t: len(rows.tables[t]) for t in ("sessions", "requests", "compactions")}
    plan.writer.record({**common, "agent": rows.agent, "month": rows.month, "status": "exported", "reason": None,
                        "exported_at": plan.exported_at, "run_id": run_id, **counts})
    return counts


def write_export(plan: ExportPlan, results: Sequence[FileRows]) -> dict[str, Any]:
    """Write the rows of every exported file; a summary of what was written (for the CLI)."""
    from sessiontools.report.dataset import tables_written

    run_id = hashlib.sha256("".join(sorted(plan.hashes.values())).encode()).hexdigest()[:16]
    totals = {"files": 0, "sessions": 0, "requests": 0, "compactions": 0}
    for rows in results:
        counts = _add_file(plan, rows, run_id)
        totals["files"] += 1
        for k, v in counts.items():
            totals[k] += v
    written = plan.writer.close(run_id) if results else []
    return {"run_id": run_id, **totals, "skipped_already_exported": plan.already,
            "skipped_duplicates": plan.duplicates, "parts": tables_written(written, plan.root)}
