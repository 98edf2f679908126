"""One entry point for every agent's files: sniff which agent wrote a file, read it with that reader.

Detection looks at the first lines only (64 KiB): a Codex rollout starts with `session_meta`
(`{"timestamp", "type", "payload"}`) or an old bare item; a Claude Code transcript's lines carry
`sessionId`/`uuid` (and no Pi `session` header); anything else is handed to the Pi reader, which
says itself when a file is no Pi session. Adding an agent is adding a `Reader` to `READERS`.

Inputs may also be fsspec URLs (`s3://...`, `gs://...`, `memory://...`, see `read/remote.py`): the
bytes are fetched once and handed to the reader's `from_bytes` (a Claude Code session read from a
URL comes without its subagent files).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontools.errors import InputError
from sessiontools.read.agents import AGENT_LABELS, Agent
from sessiontools.read.files import DEFAULT_MAX_FILE_BYTES, check_input, digest_of, open_error, session_files
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES
from sessiontools.read.remote import expand_url, is_url, read_url, url_of

SNIFF_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Reader:
    """An agent's reader: how to recognise its files and how to read one."""

    agent: Agent
    recognises: Callable[[bytes], bool]
    #: (path, *, content_hash, max_line_bytes, data) -> the agent's raw session object; `data`: the
    #: file's bytes when they were read already (`load_source_digest`), so that it is read once.
    load: Callable[..., Any]
    from_bytes: Callable[..., Any]  # (data, path, *, content_hash, max_line_bytes) -> the same, from bytes
    #: The keyword arguments `load` and `from_bytes` take for a selective reading (`load_source`'s
    #: `selective`): what no counting command reads is left unbuilt. Empty: the reader reads in full.
    selective: tuple[tuple[str, Any], ...] = ()
    #: Whether a file found in a directory or a glob is read as part of another file of this agent
    #: (so `expand_sources` leaves it out; a path only, nothing is opened or imported). None: never.
    companion: Callable[[Path], bool] | None = None
    #: CPU nanoseconds `inspect` spends per byte of this agent's files (reading, transcript, the
    #: record), what `read.parallel.default_jobs` weighs a folder's bytes by: a cheap reader's
    #: bytes fork fewer workers. Measured on the ~100-300 MB corpora of `make bench` (bench/corpus*.py):
    #: `load_source(f, selective=True)` then `inspect_source` over every file in one process,
    #: process CPU over the bytes read (subagent files included), median of 5 interleaved rounds of
    #: the three corpora, 2 cores loaded by other work (load average ~11; session 12). Pi 1.37,
    #: Claude Code 1.16, Codex 0.78 (session 10, slower and less loaded: 1.6, 1.6, 2.8).
    read_ns_per_byte: float = 1.0


def _codex_recognises(head: bytes) -> bool:
    from sessiontools.read.sniff import is_rollout  # (not the Codex reader: read.sniff)

    return is_rollout(head)


def _codex_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
                data: bytes | None = None, lean: bool = False) -> Any:
    from sessiontools.read.codex.load import load_rollout, rollout_bytes

    if data is not None or (lean and not content_hash):  # (a lean reading may be the C's summary)
        if data is None:
            data = rollout_bytes(path)
        return _codex_bytes(data, str(path), content_hash=content_hash, max_line_bytes=max_line_bytes, lean=lean)
    return load_rollout(path, max_line_bytes=max_line_bytes, lean=lean)


def _codex_bytes(data: bytes, path: str, *, content_hash: bool = False,
                 max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, lean: bool = False) -> Any:
    from sessiontools.read.codex.load import read_rollout_bytes
    from sessiontools.read.codex.summary import summarize

    s = summarize(data, path, max_line_bytes) if lean and not content_hash else None
    if s is not None:  # (`inspect`: the C's summary, when it is sure of every line)
        return s
    out = read_rollout_bytes(data, path, max_line_bytes=max_line_bytes, lean=lean)
    if content_hash:
        out.content_hash = digest_of(data)
    return out


def _claude_recognises(head: bytes) -> bool:
    from sessiontools.read.claude_code.load import looks_like_claude_code

    return looks_like_claude_code(head)


def _claude_companion(f: Path) -> bool:
    """A subagent transcript beside its session: ``<project>/<session id>/subagents/*.jsonl`` while
    ``<project>/<session id>.jsonl`` exists (`read.claude_code.load.subagent_files` reads them with it)."""
    return f.parent.name == "subagents" and f.parent.parent.with_suffix(".jsonl").is_file()


def _claude_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
                 data: bytes | None = None, texts: bool = True, summary: bool = False) -> Any:
    from sessiontools.read.claude_code.load import load_claude_session

    return load_claude_session(path, max_line_bytes=max_line_bytes, texts=texts, summary=summary, data=data,
                               content_hash=content_hash)


def _claude_bytes(data: bytes, path: str, *, content_hash: bool = False,
                  max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, texts: bool = True,
                  summary: bool = False) -> Any:
    from sessiontools.read.claude_code.load import parse_bytes
    from sessiontools.read.claude_code.summary import summarize

    s = summarize([data], [path], max_line_bytes) if summary and not texts and not content_hash else None
    if s is not None:
        return s
    out = parse_bytes(data, path, max_line_bytes=max_line_bytes, texts=texts)
    if content_hash:
        out.content_hash = digest_of(data)
    return out


def _pi_bytes(data: bytes, path: str, *, content_hash: bool = False,
              max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Any:
    from sessiontools.read.pi.load import read_data

    return read_data(data, path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


def _pi_load(path: str, *, content_hash: bool = False, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
             data: bytes | None = None, selective: bool = False) -> Any:
    from sessiontools.read.pi.load import load_session

    if data is not None:
        return _pi_bytes(data, path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)
    return load_session(path, content_hash=content_hash, max_line_bytes=max_line_bytes, selective=selective)


@dataclass(frozen=True, slots=True)
class AgentHome:
    """Where an agent keeps its files, as data (the CLI reads the environment; core code never does):
    the variable `env` names its directory, else `default` below the user's home; `sessions` and
    `models` are paths inside it (`models`: a models.json of custom windows and prices, or None)."""

    name: str  # for messages ("Pi's session directory")
    env: str
    default: str
    sessions: str
    models: str | None = None


#: The directory commands read when no path is given, and the models.json `replay` reads first.
DEFAULT_HOME = AgentHome(AGENT_LABELS[Agent.PI], "PI_CODING_AGENT_DIR", ".pi/agent", "sessions", "models.json")


def read_models_file(data: bytes, source: str) -> list[Any]:
    """The models of a models.json in `DEFAULT_HOME`'s agent's format (the file it reads and the files
    `--models` names): (provider, id, window, max tokens, prices) rows (`read.pi.models`)."""
    from sessiontools.read.pi.models import read_models

    return read_models(data, source)


READERS: list[Reader] = [
    Reader(Agent.CODEX, _codex_recognises, _codex_load, _codex_bytes, selective=(("lean", True),),
           read_ns_per_byte=0.78),
    Reader(Agent.CLAUDE_CODE, _claude_recognises, _claude_load, _claude_bytes,
           selective=(("texts", False), ("summary", True)), companion=_claude_companion,
           read_ns_per_byte=1.16),
]
#: The reader for files no other reader recognises (it reports what it cannot read).
FALLBACK = Reader(Agent.PI, lambda head: True, _pi_load, _pi_bytes, selective=(("selective", True),),
                  read_ns_per_byte=1.37)
#: The costliest reader's `read_ns_per_byte`: what a file whose reader is not known yet (a URL) weighs.
MAX_READ_NS_PER_BYTE = max(r.read_ns_per_byte for r in (*READERS, FALLBACK))


def read_ns_per_byte(path: str | os.PathLike[str]) -> float:
    """The `read_ns_per_byte` of the reader of the file at `path` (the costliest for a URL: it is not
    opened here, and for what cannot be opened, Pi's, whose reader says why)."""
    if is_url(path):
        return MAX_READ_NS_PER_BYTE
    return reader_for(head_of(path)).read_ns_per_byte


def unreadable_reason(why: str) -> str:
    """Why a file is no readable session, as people read it: the fallback reader decided (no other
    reader recognised the file), so it is not one of its agent's sessions (`why` says so already when
    the reader's own words did)."""
    what = f"{AGENT_LABELS[FALLBACK.agent]} session"
    return why if what in why else f"not a {what} ({why})"


def expand_sources(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path | str]:
    """Session files named, `*.jsonl` below directories (sorted), glob matches; each once, in order.

    A Claude Code subagent file found in a directory is left out when its session file exists (it
    is read as part of that session); one named explicitly is kept. An fsspec URL expands the same
    way and its files come back as URL strings (a `Path` would fold `//`).
    """
    seen: set[str] = set()
    local: list[str | os.PathLike[str]] = []
    for raw in paths:
        if not is_url(raw):
            local.append(raw)
            continue
        yield from session_files(local, _companion)
        local = []
        for url in expand_url(url_of(raw) or os.fspath(raw)):
            if url not in seen:
                seen.add(url)
                yield url
    yield from session_files(local, _companion)


def _companion(f: Path) -> bool:
    """Whether a reader reads `f` as part of another file (`Reader.companion`)."""
    return any(r.companion(f) for r in (*READERS, FALLBACK) if r.companion is not None)


def head_of(path: str | os.PathLike[str]) -> bytes:
    """The first bytes of a file, for detection ("" for what cannot be opened: the reader says why)."""
    if is_url(path):
        try:
            return read_url(url_of(path) or os.fspath(path), SNIFF_BYTES)
        except InputError:
            return b""
    try:
        check_input(path, None)
        with open(path, "rb") as fh:
            return fh.read(SNIFF_BYTES)
    except (OSError, InputError):
        return b""


def detect_agent(head: bytes) -> Agent:
    """The agent whose reader recognises these first bytes (Pi when none does)."""
    return reader_for(head).agent


def pi_header_first(head: bytes) -> bool:
    """Whether the first non-blank line of `head` is a Pi session header (an object with `"type":
    "session"`). No other reader claims such a file (Codex's `is_rollout` wants `session_meta` or no
    `type`; Claude Code's sniffing says no at a Pi header), so `reader_for` gives it to Pi without
    importing them (a fifth of a small `inspect`'s start-up). Anything else, a line that does not
    parse included, goes through every reader."""
    import orjson

    start = 0
    while start < len(head):
        nl = head.find(b"\n", start)
        line = head[start:] if nl < 0 else head[start:nl]
        if line.strip():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                return False
            return isinstance(obj, dict) and obj.get("type") == "session"
        if nl < 0:
            break
        start = nl + 1
    return False


def reader_for(head: bytes) -> Reader:
    if pi_header_first(head):
        return FALLBACK
    for r in READERS:
        if r.recognises(head):
            return r
    return FALLBACK


def load_source(path: str | os.PathLike[str], *, content_hash: bool = False,
                max_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, selective: bool = False) -> Any:
    """Read one session file with its agent's reader: a Pi `Session`, a Codex `Rollout`, ...

    Every returned object has `path`, `diagnostics` and a class attribute `agent`. Only a regular
    file of at most `max_bytes` is opened (`read.files.check_input`); a line over `max_line_bytes`
    (None: any length) is skipped with a `file:line` reason. `selective`: a reader that can
    (`Reader.selective`) leaves unbuilt what no command that only counts reads (Claude Code: the long
    message texts, `read.claude_code.lean`; Pi: everything but inspect's fields, `read.pi.selective`),
    for a command that does not replay (`inspect`); everything it keeps is the same.
    """
    limits: dict[str, Any] = {"content_hash": content_hash, "max_line_bytes": max_line_bytes}
    if is_url(path):
        url = url_of(path) or os.fspath(path)
        data = read_url(url)
        reader = reader_for(data[:SNIFF_BYTES])
        return reader.from_bytes(data, url, **limits, **_selective(reader, selective))
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory")
    check_input(p, max_bytes)
    try:
        fh = open(p, "rb")
    except OSError:
        return FALLBACK.load(str(path), **limits)  # the reader says why it cannot
    with fh:
        try:
            head = fh.read(SNIFF_BYTES)
            reader = reader_for(head)
            # Every agent's file is opened once: sniffed, then read whole through the same handle.
            if len(head) == SNIFF_BYTES:  # read again from the start: one buffer (head + rest copied it all)
                fh.seek(0)
                data = fh.read()
            else:
                data = head
        except OSError as exc:
            raise open_error(p, exc) from exc
    return reader.load(str(path), **limits, data=data, **_selective(reader, selective))




def _selective(reader: Reader, selective: bool) -> dict[str, Any]:
    return dict(reader.selective) if selective and reader.selective else {}


def load_source_digest(path: str | os.PathLike[str], *, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
                       max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES) -> tuple[Any, str]:
    """`load_source` and the sha256 (hex) of the file's bytes, from one read of them: the identity of
    a file in an exported dataset, without a pass that only hashes (a Claude Code session's subagent
    files are read as `load_source` reads them; the digest is of the session file's own bytes)."""
    import hashlib

    if is_url(path):
        url = url_of(path) or os.fspath(path)
        data = read_url(url)
        return reader_for(data[:SNIFF_BYTES]).from_bytes(data, url, max_line_bytes=max_line_bytes), \
            hashlib.sha256(data).hexdigest()
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory")
    check_input(p, max_bytes)
    try:
        data = p.read_bytes()
    except OSError:
        return FALLBACK.load(str(path), max_line_bytes=max_line_bytes), ""  # the reader says why it cannot
    return reader_for(data[:SNIFF_BYTES]).load(str(path), max_line_bytes=max_line_bytes, data=data), \
        hashlib.sha256(data).hexdigest()


def file_stamp(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(size, mtime in ns) of a local file, None for a URL or a file that cannot be stat'ed: the cheap
    "unchanged since" check of an incremental export, taken before the file is read."""
    if is_url(path):
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_size, st.st_mtime_ns
