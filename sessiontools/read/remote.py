"""Session files behind fsspec URLs (`s3://bucket/sessions/`, `gs://...`, `memory://...`).

Local paths never come here: a path is a URL only when it has a scheme other than `file` (and is
not a Windows drive letter). fsspec is imported lazily, only for such URLs; it comes with the
`dask` extra (`pip install sessiontools[dask]`) and its own protocol packages (`s3fs`, `gcsfs`).
Credentials are fsspec's business (its config and the provider's usual variables).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from sessiontools.errors import InputError
from sessiontools.read.files import open_error

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(/?)(.*)$", re.S)


def url_of(path: str | os.PathLike[str]) -> str | None:
    """The fsspec URL `path` names, else None (a local path).

    `scheme://...` with a scheme other than `file`. A `pathlib.Path` (what Typer makes of an
    argument) folds `memory://x` into `memory:/x`: that form is taken back when fsspec knows the
    scheme, so `Path("s3://bucket/key")` is the URL it was typed as.
    """
    s = os.fspath(path)
    m = _SCHEME.match(s)
    if m is None or m.group(1).lower() == "file":
        return None
    if m.group(2):
        return s
    if not isinstance(path, PurePath) or not _known_protocol(m.group(1)):
        return None
    return f"{m.group(1)}://{m.group(3)}"


def _known_protocol(scheme: str) -> bool:
    try:
        from fsspec.registry import known_implementations, registry
    except ImportError:
        return False
    return scheme in known_implementations or scheme in registry


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for what `url_of` takes as an fsspec URL."""
    return url_of(path) is not None


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise InputError(f"{url}: reading URLs needs fsspec: pip install 'sessiontools[dask]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # unknown protocol, or its package (s3fs, gcsfs) missing
        raise InputError(f"{url}: cannot open this URL ({exc})") from None


def read_url(url: str, limit: int | None = None) -> bytes:
    """The bytes of the file at `url` (the first `limit` bytes when given). Raises `InputError`."""
    fs, path = _fs(url)
    try:
        if fs.isdir(path):
            raise InputError(f"{url}: is a directory")
        with fs.open(path, "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)
    except OSError as exc:
        raise open_error(url, exc) from exc


def url_exists(url: str) -> bool:
    fs, path = _fs(url)
    try:
        return bool(fs.exists(path)) or bool(fs.glob(path))
    except OSError:
        return False


def expand_url(url: str) -> Iterator[str]:
    """A file URL itself; a directory's `*.jsonl` below it (sorted); a glob's matches (sorted)."""
    fs, path = _fs(url)
    if any(c in path for c in "*?["):
        found = sorted(fs.glob(path))
    elif fs.isdir(path):
        found = sorted(p for p in fs.find(path) if p.endswith(".jsonl"))
    else:
        yield url
        return
    for p in found:
        if not fs.isdir(p):
            yield fs.unstrip_protocol(p)
