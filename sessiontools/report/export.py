"""`sessiontools export`: session files -> rows (per file, in workers) -> the Parquet dataset.

1. `plan_export(root, files)`: a file whose path, size and mtime (`read.sources.file_stamp`, taken
   before it is read) are those the manifest recorded is skipped unread.
2. `ExportWorker` (picklable; `--jobs` processes or `--executor dask`): one file's rows, from
   `analysis.dataset.transcript_rows` and, with replay options, `replay.replay_records`. The read
   that parses a file also hashes its bytes (`read.parallel.FULL_DIGEST`): each file is read once.
3. `write_export(plan, results, digests)`: a file whose hash is in the manifest (its stamp changed,
   its bytes did not) or repeats one seen earlier in this run is skipped; the others become frames
   per table and partition (`analysis.dataset_frames`, `replay.frames`), written by
   `report.dataset.DatasetWriter`, then the manifest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontools.analysis.dataset import ExportOptions, FileRows, transcript_rows
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
            from sessiontools.errors import NothingToReplay
            from sessiontools.replay import replay_records

            try:
                rows.tables["replay_runs"] = cleaned_call(replay_records, source, **self.options.replay)
            except NothingToReplay:  # no model request: no replay row at any setting (not a run of 0 requests)
                rows.tables["replay_runs"] = []
        return rows


@dataclass(slots=True)
class ExportPlan:
    root: Path
    writer: DatasetWriter
    known: set[str]  # the content hashes the manifest holds
    new_files: list[str]  # the files to read
    stamps: dict[str, tuple[int, int] | None] = field(default_factory=dict)  # file -> (size, mtime_ns) before its read
    already: int = 0  # files skipped unread: path, size and mtime as exported before
    unchanged: int = 0  # files read and skipped: their bytes were exported before (a new stamp only)
    duplicates: int = 0  # files skipped: same bytes as another file of this run
    exported_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def plan_export(root: Path, files: Sequence[Any]) -> ExportPlan:
    """Which files to export into `root` (see the module docstring)."""
    from sessiontools.read.sources import file_stamp
    from sessiontools.read.values import clean_strings

    writer = DatasetWriter(root)
    plan = ExportPlan(root, writer, writer.exported_hashes(), [])
    stamps = writer.exported_stamps()
    for f in files:
        stamp = file_stamp(f)
        if stamp is not None and (clean_strings(str(f)), *stamp) in stamps:
            plan.already += 1
            continue
        plan.new_files.append(str(f))
        plan.stamps[str(f)] = stamp
    return plan


def _replay_frames(records: list[Any]) -> tuple[Any, Any]:
    """The runs and compactions frames of a file's typed run records (`replay.run_document.RunRecord`)."""
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


def _add_file(plan: ExportPlan, rows: FileRows, digest: str, run_id: str) -> dict[str, int]:
    from sessiontools.analysis.dataset_frames import table_frame
    from sessiontools.read.values import clean_strings

    file = rows.file
    sessions = rows.tables["sessions"]
    common = {"file": clean_strings(file), "content_hash": digest,  # (a file name not UTF-8)
              "session_id": sessions[0]["session_id"] if sessions else None}
    for table in ("sessions", "requests", "compactions", "summaries"):
        plan.writer.add(table, rows.agent, rows.month, table_frame(table, rows.tables[table], common))
    records = rows.tables.get("replay_runs") or []
    if records:
        runs, comps = _replay_frames(records)
        plan.writer.add("replay_runs", rows.agent, rows.month, _with_common(runs, common))
        plan.writer.add("replay_compactions", rows.agent, rows.month, _with_common(comps, common))
    counts = {t: len(rows.tables[t]) for t in ("sessions", "requests", "compactions")}
    size, mtime_ns = plan.stamps.get(file) or (None, None)
    plan.writer.record({**common, "agent": rows.agent, "month": rows.month, "status": "exported", "reason": None,
                        "exported_at": plan.exported_at, "run_id": run_id, **counts, "size": size,
                        "mtime_ns": mtime_ns})
    return counts


def _new_rows(plan: ExportPlan, results: Sequence[FileRows], digests: Sequence[str]) -> list[tuple[FileRows, str]]:
    """The files to write, each with its hash: not in the dataset and not a repeat of this run."""
    out, seen = [], set()
    for rows, digest in zip(results, digests, strict=True):
        if digest in plan.known:
            plan.unchanged += 1
        elif digest in seen:
            plan.duplicates += 1
        else:
            seen.add(digest)
            out.append((rows, digest))
    return out


def write_export(plan: ExportPlan, results: Sequence[FileRows], digests: Sequence[str]) -> dict[str, Any]:
    """Write the rows of every exported file (`digests`: the sha256 of each result's file, from the
    read that made it); a summary of what was written (for the CLI)."""
    from sessiontools.report.dataset import tables_written

    new = _new_rows(plan, results, digests)
    run_id = hashlib.sha256("".join(sorted(d for _, d in new)).encode()).hexdigest()[:16]
    totals = {"files": 0, "sessions": 0, "requests": 0, "compactions": 0}
    for rows, digest in new:
        counts = _add_file(plan, rows, digest, run_id)
        totals["files"] += 1
        for k, v in counts.items():
            totals[k] += v
    written = plan.writer.close(run_id) if new else []
    return {"run_id": run_id, **totals, "skipped_already_exported": plan.already + plan.unchanged,
            "skipped_duplicates": plan.duplicates, "parts": tables_written(written, plan.root)}
