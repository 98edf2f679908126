"""Open session files (the only module that does) and turn their lines into a `Session`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import orjson

from sessiontools.errors import InputError
from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.files import check_input, open_error
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, line_views, too_long
from sessiontools.read.parse import ReaderWords, gc_paused, parse_line
from sessiontools.read.pi.checks import check_objects
from sessiontools.read.pi.entries import KNOWN_ENTRY_TYPES, Entry, Header, Session
from sessiontools.read.pi.migrate import (
    check_structure,
    header_version,
    make_entries,
    make_header,
    migrate_objects,
)
from sessiontools.read.pi.selective import SPEC

try:
    from sessiontools.read._native import pi_entries, pi_project_lines
except ImportError:  # not built on this machine: a selective reading is the ordinary one
    pi_entries = pi_project_lines = None

_SNIFF = 4096
#: What Pi's reader (`parseSessionEntries`, one `JSON.parse` per line) does with the lines this one
#: repairs: the notes say it.
PI_WORDS = ReaderWords(bom="Pi's reader would skip this line", invalid_utf8="as Pi's reader does",
                       surrogates_kept="kept as Pi keeps them", glued="Pi's reader drops the whole line")


def _is_header(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "session" and isinstance(obj.get("id"), str)


def read_stream(stream: IO[bytes], path: str, *, content_hash: bool = False,
                max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Session:
    """Read a session from a binary stream (the whole file is one session in memory, as in Pi).

    With `content_hash`, `Session.content_hash` is set (sha256 of the bytes, for result caches). A
    line over `max_line_bytes` (None: any length) is skipped with its reason. With `selective`, the
    entries hold only the fields a command that does not replay reads (`read.pi.selective`).
    """
    return _read(stream.read(), path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


class _Objects:
    """The entry objects of a file as its lines are parsed: header, entries (with their lines), diagnostics."""

    __slots__ = ("path", "header", "objects", "lines", "diags", "seen_any", "surrogates", "unchecked")

    def __init__(self, path: str) -> None:
        self.path = path
        self.header: Header | None = None
        self.objects: list[dict[str, Any]] = []
        self.lines: list[int] = []
        self.diags: list[Diagnostic] = []
        self.seen_any = False
        self.surrogates = 0
        #: The indexes in `objects` still to check (None: every one): a selective reading's
        #: projections pass the checks as they are.
        self.unchecked: list[int] | None = None

    def add(self, obj: dict[str, Any], line_no: int) -> None:
        """One object of line `line_no`: the header, a second header (skipped) or an entry."""
        if not self.seen_any:
            self.seen_any = True
            if _is_header(obj):
                self.header = make_header(obj, line_no)
                return
            self.diags.append(Diagnostic(
                self.path, line_no, f"no session header (first entry is {obj.get('type')!r}); Pi would not load this file"))
        elif obj.get("type") == "session":
            self.diags.append(Diagnostic(self.path, line_no, "second session header ignored", "skipped"))
            return
        self.objects.append(obj)
        self.lines.append(line_no)

    def add_line(self, raw: memoryview, line_no: int, terminated: bool) -> None:
        """A line the fast path did not take: parsed carefully, every object added."""
        try:
            if line_no == 1 and raw[:3] == b"\xef\xbb\xbf":
                raise ValueError
            obj = orjson.loads(raw)
            if type(obj) is not dict:
                raise ValueError
            objs = [obj]
        except ValueError:
            parsed = parse_line(bytes(raw), line_no, self.path, terminated=terminated, keep_surrogates=True,
                                words=PI_WORDS)
            self.diags.extend(parsed.diagnostics)
            self.surrogates += parsed.surrogates
            objs = parsed.objects
        for obj in objs:
            self.add(obj, line_no)


def _parse_projected(data: bytes, path: str, limit: int) -> tuple[_Objects, int]:
    """`_parse_lines` of a selective reading: each line projected by the C scanner
    (`read._native.pi_project_lines`, `selective.SPEC`), the lines it is not sure of (and the first
    object, the header) the ordinary way."""
    acc = _Objects(path)
    objects, lines = acc.objects, acc.lines
    view, end, line_no = memoryview(data), len(data), 0
    unchecked = acc.unchecked = []
    for line_no, (start, stop, fields) in enumerate(pi_project_lines(data, SPEC, 2, limit), 1):
        if fields is not None and acc.seen_any and fields.get("type") != "session":
            objects.append(fields)
            lines.append(line_no)
        elif limit and stop - start > limit:
            acc.diags.append(Diagnostic(path, line_no, too_long(stop - start, limit) or "", "skipped"))
        else:
            k = len(objects)
            acc.add_line(view[start:stop], line_no, stop < end)
            unchecked.extend(range(k, len(objects)))
    return acc, line_no


def _parse_lines(data: bytes, path: str, max_line: int | None = DEFAULT_MAX_LINE_BYTES,
                 selective: bool = False) -> tuple[_Objects, int]:
    """Every line's objects, and the number of lines. Fast path: one well-formed entry object on a
    line after the first (what Pi writes), appended with no further question. A line over
    `max_line` bytes is skipped, with its reason. `selective`: `_parse_projected` where the C is built."""
    if selective and pi_project_lines is not None:
        return _parse_projected(data, path, max_line or 0)
    acc = _Objects(path)
    objects, lines = acc.objects, acc.lines
    loads = orjson.loads
    end, line_no = len(data), 0
    limit = max_line or 0
    for line_no, raw, after in line_views(data):
        if limit and len(raw) > limit:
            acc.diags.append(Diagnostic(path, line_no, too_long(len(raw), limit) or "", "skipped"))
            continue
        if line_no > 1 and acc.seen_any:
            try:
                obj = loads(raw)
            except ValueError:
                obj = None
            if type(obj) is dict and obj.get("type") != "session":
                objects.append(obj)
                lines.append(line_no)
                continue
        acc.add_line(raw, line_no, after <= end)
    return acc, line_no


def _read(data: bytes, path: str, *, content_hash: bool = False,
          max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Session:
    if b"\x00" in data[:_SNIFF]:
        return Session(path, None, (), 1, [Diagnostic(path, 1, "binary file (NUL bytes): not a Pi session", "fatal")])
    with gc_paused():
        acc, line_no = _parse_lines(data, path, max_line_bytes, selective)
        header, objects, lines, diags = acc.header, acc.objects, acc.lines, acc.diags
        diags.extend(check_objects(objects, lines, path, acc.unchecked))
        if line_no == 0:
            diags.append(Diagnostic(path, 1, "empty file", "fatal"))
        elif not acc.seen_any:
            diags.append(Diagnostic(path, 1, "no JSON object in the file: not a Pi session", "fatal"))
        if header is None and objects and not any(isinstance(t := o.get("type"), str) and t in KNOWN_ENTRY_TYPES
                                               for o in objects):
            diags.append(Diagnostic(path, lines[0], "not a Pi session (no session header and no Pi entry types)", "fatal"))
            return Session(path, None, (), 1, sorted(diags, key=lambda d: d.line))
        version = header_version(header.data if header else None, objects)  # type: ignore[arg-type]
        for k, reason in migrate_objects(objects, version):
            diags.append(Diagnostic(path, lines[k], reason))
        # Made in C where it is built, for every reading (its slots set directly: ~4x faster than
        # `make_entries`' `Entry.__init__` per entry; the same entries: tests/read/test_pi_selective.py).
        entries = pi_entries(Entry, objects, lines) if pi_entries is not None else make_entries(objects, lines)
    diags.extend(check_structure(entries, path))
    diags.sort(key=lambda d: d.line)
    digest = _content_hash(data) if content_hash else ""
    return Session(path, header, entries, version, diags, digest, acc.surrogates, selective)


def _content_hash(data: bytes) -> str:
    """The session's content hash (the caches' key). hashlib is imported here: its OpenSSL start is
    about 10M instructions that a command without caches (inspect) would pay for nothing."""
    import hashlib

    return hashlib.sha256(data).hexdigest()[:32]


def read_data(data: bytes, path: str, *, content_hash: bool = False,
              max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Session:
    """Read a session from a file's bytes already in memory (`path` names it in diagnostics)."""
    return _read(data, path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


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


def load_session(path: str | os.PathLike[str], *, content_hash: bool = False,
                 max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Session:
    """Read one session file. Never writes to it. Raises `InputError` when it cannot be opened.

    `content_hash` also hashes the bytes (`Session.content_hash`), for result caches; `selective`
    reads only what a command that does not replay needs (`read.pi.selective`).
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory (give a session file, or use a command that takes directories)")
    check_input(p, None)
    try:
        with open(p, "rb") as fh:
            return read_stream(fh, str(path), content_hash=content_hash, max_line_bytes=max_line_bytes,
                               selective=selective)
    except OSError as exc:
        raise open_error(p, exc) from exc
