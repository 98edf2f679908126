"""An agent CLI's version string read as numbers, for the rule tables keyed by release (Claude Code's
`policies.claude_code_rules`, Codex's `policies.codex_rules`) and for `--cli-version`."""

from __future__ import annotations

import re


def parse_version(version: str | None) -> tuple[int, ...] | None:
    """`"2.1.63"` -> (2, 1, 63); None for anything that does not start with a dotted number."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None
