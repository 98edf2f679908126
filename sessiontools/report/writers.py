"""Machine-readable output: JSON with a schema_version; tables via polars."""

from __future__ import annotations

from typing import Any

import orjson

SCHEMA_VERSION = 1


def envelope(command: str, **body: Any) -> dict[str, Any]:
    """`{"schema_version": 1, "command": ..., ...}` in a stable key order."""
    return {"schema_version": SCHEMA_VERSION, "command": command, **body}


def dumps_json(obj: Any) -> bytes:
    """Deterministic, indented JSON (byte-identical for identical input)."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
