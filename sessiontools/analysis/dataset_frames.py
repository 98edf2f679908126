"""Fixed schemas of the dataset tables, and polars frames of their rows (`analysis.dataset`).

Every table starts with the same columns: `schema_version`, `file` (the path or URL exported),
`content_hash` (sha256 of its bytes) and `session_id`. Partition columns (`agent`, `month`) are not
in the frames: they are the hive directories the writer (`report.dataset`) puts each file under.
Types are plain (strings, 64-bit integers, doubles, booleans) so that DuckDB, polars and Spark read
the files as they are; timestamps are the ISO strings the agents wrote. docs/dataset.md documents
every column; `tests/report/test_dataset.py` checks that it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.analysis.dataset import SCHEMA_VERSION

S, N, F, B = "str", "int", "float", "bool"

COMMON = {"schema_version": N, "file": S, "content_hash": S, "session_id": S}

COLUMNS: dict[str, dict[str, str]] = {
    "sessions": {
        "path_index": N, "leaf_id": S, "sidechain": B, "format": S, "models": S, "first_timestamp": S,
        "last_timestamp": S, "messages": N, "requests": N, "compactions": N, "overflows": N, "skipped_replies": N,
        "input_tokens": N, "cache_read_tokens": N, "cache_write_tokens": N, "output_tokens": N, "recorded_cost": F,
    },
    "requests": {
        "path_index": N, "n": N, "line": N, "request_id": S, "timestamp": S, "provider": S, "model": S,
        "stop_reason": S, "context_window": N, "input_tokens": N, "cache_read_tokens": N, "cache_write_tokens": N,
        "output_tokens": N, "prompt_tokens": N, "recorded_cost": F, "context_messages": N, "context_chars": N,
        "chars4_estimate": N, "chars4_error": N, "chars4_rel_error": F, "cjk_share": F, "tool_result_share": F,
        "code_share": F, "content_kind": S, "o200k_estimate": N, "cl100k_estimate": N,
    },
    "compactions": {
        "path_index": N, "n": N, "line": N, "compaction_id": S, "timestamp": S, "trigger": S, "tokens_before": N,
        "tokens_after": N, "writer": S, "summary_chars": N, "kept_messages": N,
    },
    "summaries": {
        "path_index": N, "n": N, "line": N, "compaction_id": S, "summary_format": S, "summary_chars": N,
        "sections": N, "section_names": S, "template_sections_absent": N, "section_compliance": F, "items": N,
        "split_turn": B, "read_files": N, "modified_files": N, "literals": N, "literal_paths": N,
        "literal_code": N, "literal_numbers": N, "literal_quoted": N, "literal_errors": N,
    },
}

#: The manifest of exported files (not partitioned): one row per file and export run.
FILES_COLUMNS = {
    "schema_version": N, "file": S, "content_hash": S, "agent": S, "month": S, "status": S, "reason": S,
    "exported_at": S, "run_id": S, "sessions": N, "requests": N, "compactions": N, "size": N, "mtime_ns": N,
}


def _dtype(kind: str) -> Any:
    import polars as pl

    return {S: pl.Utf8, N: pl.Int64, F: pl.Float64, B: pl.Boolean}[kind]


def schema(columns: dict[str, str]) -> dict[str, Any]:
    return {name: _dtype(kind) for name, kind in columns.items()}


def table_frame(table: str, rows: Sequence[dict[str, Any]], common: dict[str, Any]) -> Any:
    """The rows of one file's `table` with the common columns (`file`, `content_hash`, ...) first."""
    import polars as pl

    cols = {**COMMON, **COLUMNS[table]}
    base = {"schema_version": SCHEMA_VERSION, **common}
    data = [{**base, **{k: r.get(k) for k in COLUMNS[table]}} for r in rows]
    if not data:
        return pl.DataFrame(schema=schema(cols))
    return pl.DataFrame(data, schema=schema(cols))


def files_frame(rows: Sequence[dict[str, Any]]) -> Any:
    import polars as pl

    data = [{"schema_version": SCHEMA_VERSION, **{k: r.get(k) for k in FILES_COLUMNS if k != "schema_version"}}
            for r in rows]
    if not data:
        return pl.DataFrame(schema=schema(FILES_COLUMNS))
    return pl.DataFrame(data, schema=schema(FILES_COLUMNS))
