"""A fingerprint of the code that computes cached results: the package version and a hash of every
`.py` source of the package, so that a cached result never outlives any change to the code that
made it (readers, context builder, port, tokenizers, analysis alike). Computed once per process.
It lives beside the token store (`tokens.store`) whose per-session results it keys (estimate-error's
rows, replay's counter choices), low enough in the layers for both, and imports nothing heavy."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

#: The `sessiontools` package folder (this module is sessiontools/tokens/fingerprint.py).
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def sources_hash(root: Path) -> str:
    """sha256 (first 16 hex digits) over every `*.py` below `root`: relative path and bytes, in path order."""
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        if "__pycache__" in f.parts:
            continue
        h.update(f.relative_to(root).as_posix().encode("utf-8") + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@cache
def code_fingerprint() -> str:
    """`<version>+<sources hash>` of the installed sessiontools package."""
    from sessiontools import __version__

    return f"{__version__}+{sources_hash(PACKAGE_ROOT)}"
