"""Open session files (the only module that does) and turn their lines into a `Session`."""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from sessiontools.errors import InputError
from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.files import open_error
from sessiontools.read.pi.entries import KNOWN_ENTRY_TYPES, Header, Session
from sessiontools.read.pi.migrate import (
    check_structure,
    header_version,
    make_entries,
    make_header,
    migrate_objects,
)
from sessiontools.read.pi.parse import parse_line

_SNIFF = 4096


def _is_header(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "session" and isinstance(obj.get("id"), str)


def _lines(data: bytes) -> Iterator[tuple[int, memoryview, bool]]:
    """(line number, raw line without its newline, whether a newline ended it); views, not copies."""
    view = memoryview(data)
    find = data.find
    start, n, end = 0, 0, len(data)
    while start < end:
        n += 1
        nl = find(b"\n", start)
        if nl < 0:
            yield n, view[start:end], False
            return
        yield n, view[start:nl], True
        start = nl + 1


def read_stream(stream: IO[bytes], path: str, *, content_hash: bool = False) -> Session:
    """Read a session from a binary stream (the whole file is one session in memory, as in Pi).

    With `content_hash`, `Session.content_hash` is set (sha256 of the bytes, for result caches).
    """
    return _read(stream.read(), path, content_hash=content_hash)


def _read(data: bytes, path: str, *, content_hash: bool = False) -> Session:
    if b"\x00" in data[:_SNIFF]:
        return Session(path, None, (), 1, [Diagnostic(path, 1, "binary file (NUL bytes): not a Pi session", "fatal")])
    diags: list[Diagnostic] = []
    header: Header | None = None
    objects: list[dict[str, Any]] = []
    lines: list[int] = []
    seen_any = False
    line_no = 0
    loads = orjson.loads
    for line_no, raw, terminated in _lines(data):
        # Fast path: one well-formed object on the line (what Pi writes).
        parsed_objects: list[dict[str, Any]]
        try:
            if line_no == 1 and raw[:3] == b"\xef\xbb\xbf":
                raise ValueError
            obj = loads(raw)
            if type(obj) is not dict:
                raise ValueError
            parsed_objects = [obj]
        except ValueError:
            parsed = parse_line(bytes(raw), line_no, path, terminated=terminated)
            diags.extend(parsed.diagnostics)
            parsed_objects = parsed.objects
        for obj in parsed_objects:
            if not seen_any:
                seen_any = True
                if _is_header(obj):
                    header = make_header(obj, line_no)
                    continue
                diags.append(
                    Diagnostic(
                        path,
                        line_no,
                        f"no session header (first entry is {obj.get('type')!r}); Pi would not load this file",
                    )
                )
            elif obj.get("type") == "session":
                diags.append(Diagnostic(path, line_no, "second session header ignored", "skipped"))
                continue
            objects.append(obj)
            lines.append(line_no)
    if line_no == 0:
        diags.append(Diagnostic(path, 1, "empty file", "fatal"))
    elif not seen_any:
        diags.append(Diagnostic(path, 1, "no JSON object in the file: not a Pi session", "fatal"))
    if header is None and objects and not any(o.get("type") in KNOWN_ENTRY_TYPES for o in objects):
        diags.append(Diagnostic(path, lines[0], "not a Pi session (no session header and no Pi entry types)", "fatal"))
        return Session(path, None, (), 1, sorted(diags, key=lambda d: d.line))
    version = header_version(header.data if header else None, objects)  # type: ignore[arg-type]
    for k, reason in migrate_objects(objects, version):
        diags.append(Diagnostic(path, lines[k], reason))
    entries = make_entries(objects, lines)
    diags.extend(check_structure(entries, path))
    diags.sort(key=lambda d: d.line)
    digest = hashlib.sha256(data).hexdigest()[:32] if content_hash else ""
    return Session(path, header, entries, version, diags, digest)


def read_bytes(data: bytes, path: str = "<memory>") -> Session:
    """Read a session held in memory (tests, stdin)."""
    return _read(data, path)


def session_from_records(records: Iterable[dict[str, Any]], path: str = "<memory>") -> Session:
    """Serialize records as Pi writes them (one compact JSON object a line) and read them back."""
    def line(r: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(r)
        except TypeError:  # lone surrogates: write them as \u escapes, as JSON.stringify does
            import json

            return json.dumps(r, ensure_ascii=True, separators=(",", ":")).encode()

    return read_bytes(b"".join(line(r) + b"\n" for r in records), path)


def load_session(path: str | os.PathLike[str], *, content_hash: bool = False) -> Session:
    """Read one session file. Never writes to it. Raises `InputError` when it cannot be opened.

    `content_hash` also hashes the bytes (`Session.content_hash`), for result caches.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory (give a session file, or use a command that takes directories)")
    try:
        with open(p, "rb") as fh:
            return read_stream(fh, str(path), content_hash=content_hash)
    except OSError as exc:
        raise open_error(p, exc) from exc


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, `*.jsonl` files below directories (sorted), and glob matches, each once, in order."""
    seen: set[Path] = set()

    def emit(p: Path) -> Iterator[Path]:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            yield p

    for raw in paths:
        s = os.fspath(raw)
        p = Path(s)
        if p.is_dir():
            for f in sorted(p.rglob("*.jsonl")):
                if f.is_file():
                    yield from emit(f)
        elif not p.exists() and glob.has_magic(s):
            matches = sorted(glob.glob(s, recursive=True))
            if not matches:
                raise InputError(f"{s}: no file matches")
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    for f in sorted(mp.rglob("*.jsonl")):
                        yield from emit(f)
                else:
                    yield from emit(mp)
        else:
            yield from emit(p)
