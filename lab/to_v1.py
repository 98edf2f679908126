"""Convert a linear Pi v3 session file into Pi's legacy v1 format (for the legacy reader).

Current Pi only writes v3, so ``sample_sessions/v1-tiny.jsonl`` is produced from a generated v3
session by this documented conversion, the inverse of ``migrateV1ToV2`` in Pi's
``dist/core/session-manager.js``:

* the header keeps ``type``/``id``/``timestamp``/``cwd`` but loses ``version`` (v1 had none; Pi
  reads a missing version as 1);
* every other entry loses ``id`` and ``parentId`` (v1 is a plain linear sequence);
* a ``compaction`` entry's ``firstKeptEntryId`` becomes ``firstKeptEntryIndex``: the index of the
  kept entry in the file's entry list, counting the header line as index 0 (``migrateV1ToV2``
  resolves it with ``entries[firstKeptEntryIndex]`` over exactly that list);
* message roles are unchanged (the v2->v3 ``hookMessage`` -> ``custom`` rename does not occur in
  generated sessions).

Only linear sessions can be converted (the file order must be the parent chain); a session with
branches is rejected.

Usage: ``python -m lab.to_v1 IN.jsonl OUT.jsonl``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def to_v1(lines: list[dict]) -> list[dict]:
    if not lines or lines[0].get("type") != "session":
        raise ValueError("first line must be the session header")
    entries = lines[1:]
    index_of = {}
    prev = None
    for i, e in enumerate(entries, start=1):
        if e.get("parentId") != prev:
            raise ValueError(f"entry {e.get('id')} is not linear (parentId {e.get('parentId')} != {prev})")
        prev = e.get("id")
        index_of[e["id"]] = i
    header = {k: v for k, v in lines[0].items() if k != "version"}
    out = [header]
    for e in entries:
        conv = {k: v for k, v in e.items() if k not in ("id", "parentId")}
        if e.get("type") == "compaction":
            kept = conv.pop("firstKeptEntryId")
            conv["firstKeptEntryIndex"] = index_of[kept]
        out.append(conv)
    return out


def convert_file(src: Path, dst: Path) -> None:
    lines = [json.loads(ln) for ln in src.read_text(encoding="utf-8").splitlines() if ln.strip()]
    out = to_v1(lines)
    dst.write_text("".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in out),
                   encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m lab.to_v1 IN.jsonl OUT.jsonl", file=sys.stderr)
        return 2
    convert_file(Path(args[0]), Path(args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
