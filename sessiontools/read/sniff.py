"""Which agent wrote a file, from its first line, without importing that agent's reader: detection
(`read.sources.reader_for`) asks every reader in turn, and importing the Codex reader (its records'
dataclasses, its checks) to say no cost every Claude Code run about 0.015 s of CPU."""

from __future__ import annotations

from collections.abc import Mapping

from sessiontools.read.lines import line_views
from sessiontools.read.parse import parse_line

_MAP = (dict, Mapping)  # a dict (what JSON gives) is tested first, without the ABC machinery


def is_rollout(data: bytes) -> bool:
    """Whether the first line looks like a Codex rollout (for agent detection)."""
    first = next((line for line in (bytes(raw) for _, raw, _ in line_views(data[:65536])) if line.strip()), b"")
    parsed = parse_line(first, 1, "<sniff>")
    if not parsed.objects:
        return False
    obj = parsed.objects[0]
    if obj.get("type") == "session_meta" and isinstance(obj.get("payload"), _MAP):
        return True
    return isinstance(obj.get("id"), str) and "instructions" in obj and "type" not in obj
