"""Machine-readable output: JSON with a schema_version; tables via polars."""

from __future__ import annotations

from typing import Any

import orjson

SCHEMA_VERSION = 1


def envelope(command: str, **body: Any) -> dict[str, Any]:
    """`{"schema_version": 1, "command": ..., ...}` in a stable key order."""
    return {"schema_version": SCHEMA_VERSION, "command": command, **body}


def dumps_json(obj: Any) -> bytes:
    """Deterministic, indented JSON (byte-identical for identical input).

    Session text can hold lone UTF-16 surrogates (JSON allows them as escapes); orjson refuses
    them, so such output is written by the standard library with \\u escapes instead.
    """
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    except TypeError:
        import json

        return json.dumps(obj, indent=2, ensure_ascii=True, default=str).encode("ascii") + b"\n"
