"""JSONL line parsing that never drops a line silently (every reader's), and the garbage collector
paused while a file's objects are built.

Pi reads a session with `JSON.parse` per line and silently skips what fails. We parse the same
way (orjson first, the standard library as the careful fallback) but give every line that carries
no entry a reason, and recover what can be recovered safely: two objects glued on one line (a real
writer defect, see PROVENANCE of the shared sessions), a UTF-8 byte order mark, invalid UTF-8
(replaced by U+FFFD exactly as Node's decoder does, so Pi sees the same text).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.values import clean_surrogates

_WS = b" \t\r\n\x0b\x0c"
_BOM = b"\xef\xbb\xbf"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


@dataclass(slots=True)
class ParsedLine:
    """The objects found on one physical line and what was noticed about it."""

    line: int
    objects: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    surrogates: int = 0  # strings holding a lone surrogate, kept (`keep_surrogates`)


def _json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (column {exc.colno})"
    return str(exc)


def _slow_parse(text: str) -> tuple[list[Any], str | None]:
    """Decode every JSON value on the line; return them and the error that stopped decoding, if any."""
    values: list[Any] = []
    idx, n = 0, len(text)
    while True:
        while idx < n and text[idx] in " \t\r\n\x0b\x0c":
            idx += 1
        if idx >= n:
            return values, None
        try:
            value, idx = _DECODER.raw_decode(text, idx)
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            return values, _json_error(exc)
        values.append(value)


def surrogate_line(raw: bytes | memoryview) -> tuple[Any, int]:
    """A line orjson refused because of a lone surrogate escape (`"\\ud800"`, which Node's
    `JSON.stringify` writes and orjson rejects): its one JSON value with every lone surrogate
    replaced by U+FFFD, and how many strings changed. `(None, 0)` when the line is not one JSON
    value or holds no lone surrogate (then it is refused for another reason)."""
    data = bytes(raw)
    if b"\\u" not in data:
        return None, 0
    try:
        value = _DECODER.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        return None, 0
    value, changed = clean_surrogates(value)
    return (value, changed) if changed else (None, 0)


def parse_line(raw: bytes, line: int, path: str, *, terminated: bool = True,
               keep_surrogates: bool = False) -> ParsedLine:
    """Parse one physical line (without its newline) into zero or more entry objects.

    `terminated` is False for a last line that has no newline: a parse failure there is reported as
    a truncated write rather than as corruption. A lone surrogate escape (Node's `JSON.stringify`
    writes them) is replaced by U+FFFD, with a note; with `keep_surrogates` (the Pi reader: the port
    must see what Pi sees, and Pi keeps them) it is kept, with a note all the same.
    """
    out = ParsedLine(line)
    body = raw.strip(_WS)
    if line == 1 and body.startswith(_BOM):
        body = body[len(_BOM):].lstrip(_WS)
        out.diagnostics.append(
            Diagnostic(path, line, "byte order mark removed (Pi's reader would skip this line)", "recovered")
        )
    if not body:
        return out
    try:
        value = orjson.loads(body)
        values, error = [value], None
    except orjson.JSONDecodeError:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body.decode("utf-8", errors="replace")
            out.diagnostics.append(Diagnostic(path, line, "invalid UTF-8 replaced by U+FFFD (as Pi's reader does)"))
        values, error = _slow_parse(text)
        repaired, changed = clean_surrogates(values)
        if changed and keep_surrogates:
            out.surrogates = changed
            out.diagnostics.append(Diagnostic(path, line, f"lone surrogate escape(s) in {changed} string(s): kept as Pi "
                                                          "keeps them (outputs replace them)"))
        elif changed:
            values = repaired
            out.diagnostics.append(Diagnostic(path, line, f"lone surrogate escape(s) in {changed} string(s) replaced by U+FFFD"))
    objects = [v for v in values if isinstance(v, dict)]
    non_objects = [v for v in values if not isinstance(v, dict)]
    if non_objects:
        kinds = ", ".join(sorted({type(v).__name__ for v in non_objects}))
        out.diagnostics.append(Diagnostic(path, line, f"not a JSON object ({kinds}); line skipped", "skipped"))
    if len(values) > 1 or (values and error):
        if objects:
            what = f"{len(values)} JSON values on one line" if len(values) > 1 else "a JSON object followed by more text"
            rest = f"; the rest is malformed ({error})" if error else ""
            out.diagnostics.append(
                Diagnostic(
                    path,
                    line,
                    f"glued JSON: {what}, {len(objects)} object(s) recovered{rest} (Pi's reader drops the whole line)",
                    "recovered",
                )
            )
    elif error:
        if not terminated:
            reason = f"truncated last line (no newline; the file may still be being written): {error}"
        else:
            reason = f"malformed JSON: {error}"
        out.diagnostics.append(Diagnostic(path, line, reason, "skipped"))
    out.objects = objects
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a file's objects are built: parsed JSON holds no
    reference cycles, and a collection every few hundred new dicts would traverse every object built
    so far (a quarter of the reading time on a large session). The replay pauses it too
    (`replay.session.replay_session`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
