"""The model catalogue a Codex release embeds (`codex-rs/core/models.json`, compiled into the binary).

``python -m lab.codex_catalogue 0.77.0 0.121.0 0.171.0`` installs each release (``lab.codex_env``) and
prints, per model slug, the ``context_window``, ``max_context_window`` and ``auto_compact_token_limit``
the release ships (``--json`` for a machine-readable dump). This is how the windows in
``sessiontools.policies.codex_rules.CATALOGUES`` were read: every release from 0.77 on embeds the file
(0.63.0 does not: its windows are codex-rs's prefix rules in code); ``auto_compact_token_limit`` is null
for every model of every release read, so the limit is codex-rs's default, 90% of the window.

The binary is read as bytes: the catalogue is the JSON object that starts with ``{"models": [``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

_START = re.compile(rb'\{\s*"models"\s*:\s*\[')
FIELDS = ("context_window", "max_context_window", "auto_compact_token_limit", "effective_context_window_percent")


def embedded_catalogue(binary: Path) -> list[dict[str, Any]]:
    """The models of the first embedded catalogue in `binary` ([] when it embeds none)."""
    data = binary.read_bytes()
    decoder = json.JSONDecoder()
    for m in _START.finditer(data):
        text = data[m.start():m.start() + 4_000_000].decode("utf-8", "replace")
        try:
            obj, _ = decoder.raw_decode(text)
        except ValueError:
            continue
        models = obj.get("models") if isinstance(obj, dict) else None
        if isinstance(models, list):
            return [x for x in models if isinstance(x, dict)]
    return []


def windows(binary: Path) -> dict[str, dict[str, Any]]:
    """slug -> the window and limit fields of the release's catalogue."""
    return {str(x.get("slug")): {f: x.get(f) for f in FIELDS} for x in embedded_catalogue(binary)}


def main(argv: list[str] | None = None) -> int:
    from lab.codex_env import CodexUnavailable, ensure_codex

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="+")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for v in args.versions:
        try:
            out[v] = windows(ensure_codex(v).binary)
        except CodexUnavailable as exc:
            print(f"{v}: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    for v, table in out.items():
        print(f"{v}: {len(table)} models" + ("" if table else " (no embedded catalogue)"))
        for slug, f in sorted(table.items()):
            print(f"  {slug:28} window {f['context_window']}  max {f['max_context_window']}  "
                  f"limit {f['auto_compact_token_limit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
