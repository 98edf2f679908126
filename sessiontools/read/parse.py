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


@dataclass(frozen=True, slots=True)
class ReaderWords:
    """What a reader says of the lines `parse_line` repairs, in its own agent's terms: each a clause the
    note adds in parentheses (empty: none). `surrogates_kept`: what a line whose lone surrogates are
    kept (`keep_surrogates`) says was done with them."""

    bom: str = ""
    invalid_utf8: str = ""
    surrogates_kept: str = "kept"
    glued: str = ""


#: A reader that makes no claim of its agent's own reading.
PLAIN_WORDS = ReaderWords()


def _said(note: str, clause: str) -> str:
    return f"{note} ({clause})" if clause else note


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
               keep_surrogates: bool = False, words: ReaderWords = PLAIN_WORDS) -> ParsedLine:
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
            Diagnostic(path, line, _said("byte order mark removed", words.bom), "recovered")
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
            out.diagnostics.append(Diagnostic(path, line, _said("invalid UTF-8 replaced by U+FFFD", words.invalid_utf8)))
        values, error = _slow_parse(text)
        repaired, changed = clean_surrogates(values)
        if changed and keep_surrogates:
            out.surrogates = changed
            out.diagnostics.append(Diagnostic(path, line, f"lone surrogate escape(s) in {changed} string(s): "
                                                          f"{words.surrogates_kept} (outputs replace them)"))
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
                    _said(f"glued JSON: {what}, {len(objects)} object(s) recovered{rest}", words.glued),
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
    (`replay.session.replay_source`, `replay.transcripts.replay_transcript`), and so does each file's
    whole work in a run over files (`read.parallel._one`). Pauses nest: only the outermost resumes it,
    and the collection that follows frees whatever cyclic garbage the paused work left."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
