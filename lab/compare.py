"""Compare two recordings of the same sample modulo what Pi does not let us fix.

``python -m lab.compare A.jsonl B.jsonl`` (or two directories) normalises both files and reports
the first difference. Normalisation:

* entry ids (8-hex), the session id and the ids they are referenced by (``parentId``,
  ``firstKeptEntryId``, ``fromId``, ``targetId``) are replaced by their order of first appearance;
* ``timestamp`` fields (ISO strings in entries, milliseconds in messages) and ``durationMs`` are
  dropped;
* the absolute Pi install path (1.x stores the system prompt, which names it) is replaced by
  ``<pi>``.

Exit status 0 when every file pair is identical after normalisation.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_ID_KEYS = ("id", "parentId", "firstKeptEntryId", "fromId", "targetId")
_DROP_KEYS = ("timestamp", "durationMs")
_PI_PATH = re.compile(r"/[^\s\"'<>]*?/node_modules/@[\w-]+/pi-coding-agent")


def normalize(lines: list[dict]) -> list:
    ids: dict[str, str] = {}

    def nid(v):
        if v is None:
            return None
        if v not in ids:
            ids[v] = f"#{len(ids)}"
        return ids[v]

    def walk(obj):
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k in _DROP_KEYS:
                    continue
                out[k] = nid(v) if k in _ID_KEYS and (isinstance(v, str) or v is None) else walk(v)
            return out
        if isinstance(obj, list):
            return [walk(x) for x in obj]
        if isinstance(obj, str):
            return _PI_PATH.sub("<pi>", obj)
        return obj

    return [walk(e) for e in lines]


def compare_files(a: Path, b: Path) -> str | None:
    la = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines() if x.strip()]
    lb = [json.loads(x) for x in b.read_text(encoding="utf-8").splitlines() if x.strip()]
    na, nb = normalize(la), normalize(lb)
    for i, (x, y) in enumerate(zip(na, nb, strict=False)):
        if x != y:
            return f"line {i + 1} differs:\n  {json.dumps(x)[:400]}\n  {json.dumps(y)[:400]}"
    if len(na) != len(nb):
        return f"{len(na)} vs {len(nb)} lines"
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m lab.compare A B   (files or directories)", file=sys.stderr)
        return 2
    a, b = Path(args[0]), Path(args[1])
    pairs = ([(a / p.name, p) for p in sorted(b.glob("*.jsonl")) if (a / p.name).exists()]
             if a.is_dir() else [(a, b)])
    bad = 0
    for x, y in pairs:
        diff = compare_files(x, y)
        print(f"{x.name}: {'identical (normalised)' if diff is None else diff}")
        bad += diff is not None
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
