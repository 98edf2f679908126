"""The Codex reader's selective first pass (issue 28): a rollout line whose record keeps only a few
declared fields (`event_msg`, `token_usage_record`, `turn_context`: three lines in five, and the
`item_completed` events that repeat whole messages) is decoded by msgspec into a dict of those fields
alone. The rest of the line (an event's copy of a message, its content strings) is validated as JSON
at native speed and never made into Python objects.

The projection is typed as strictly as the reader's checks (`read.codex.checks`) or more: a declared
field of another type or out of range fails the decode, and the line goes the ordinary way
(`orjson`, `check_line`, `parse_line`'s diagnostics), as does any line msgspec refuses. So a line
read here is one on which the checks would drop nothing, and its record is the one the ordinary way
builds from the whole object (tests/read/test_codex_selective.py holds the two equal over every
sample line and every odd value of every field). What msgspec accepts and orjson refuses without a
diagnostic from the careful fallback (a number such as 1e400 in a skipped field) reads the same;
invalid UTF-8, which msgspec does not check in the fields it skips, is tested for first.

Where the C extension is built, the loader uses its scanner instead (`NATIVE_SPEC` below, the same
projection for `read._native.project_lines`): one pass over the whole file in C, with no decoder called per
line for the lines it projects; this msgspec path is what runs without a compiler.
"""

from __future__ import annotations

import codecs
from typing import Annotated, Any, TypedDict

import msgspec

from sessiontools.read.codex import checks
from sessiontools.read.values import MAX_REQUEST_TOKENS, MAX_TOTAL_TOKENS, count, total_count

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_REQUEST_TOKENS)]
Total = Annotated[int, msgspec.Meta(ge=0, le=MAX_TOTAL_TOKENS)]


class _Usage(TypedDict, total=False):
    input_tokens: Count
    cached_input_tokens: Count
    output_tokens: Count
    reasoning_output_tokens: Count
    total_tokens: Count
    cache_write_input_tokens: Count


class _TotalUsage(TypedDict, total=False):
    input_tokens: Total
    cached_input_tokens: Total
    output_tokens: Total
    reasoning_output_tokens: Total
    total_tokens: Total
    cache_write_input_tokens: Total


class _Info(TypedDict, total=False):
    model_context_window: Total
    total_token_usage: _TotalUsage | None
    last_token_usage: _Usage | None


class _Item(TypedDict, total=False):
    type: Any


class _Error(TypedDict, total=False):
    message: Any
    codex_error_info: Any


class _Attribution(TypedDict, total=False):
    turn_trigger: Any


class _Latest(TypedDict, total=False):
    usage: _Usage | None


class _Payload(TypedDict, total=False):
    # checked by `read.codex.checks.PAYLOAD` (the same types, or stricter)
    type: str
    role: str | None
    model: str | None
    message: str | None
    turn_id: str | None
    model_context_window: Total
    info: _Info | None
    arguments: str
    input: str
    name: str
    call_id: str
    content: msgspec.Raw  # (an event with content or output goes the ordinary way: see `project`)
    output: msgspec.Raw
    usage: _Usage | None
    latest_token_usage_record: _Latest
    # read by `read.codex.load._event` / `_record` (unchecked there: any value)
    item: _Item
    error: _Error
    turn_attribution: _Attribution
    codex_error_info: Any
    response_id: Any
    cwd: Any


class _Line(TypedDict, total=False):
    timestamp: str
    type: str
    payload: _Payload
    ordinal: Any


_decode = msgspec.json.Decoder(_Line).decode
#: The line types read here.
SELECTIVE_TYPES = frozenset({"event_msg", "token_usage_record", "turn_context"})
#: The same, as they follow `"type":"` in a line's first bytes (Codex writes the timestamp and then
#: the type): a line whose head names another type is not tried.
_MARKS = tuple(f'{t}"'.encode() for t in SELECTIVE_TYPES)
_TYPE = b'"type":"'
_HEAD = 96
_CHUNK = 1 << 20


def valid_utf8(data: bytes) -> bool:
    """Whether all of `data` is UTF-8 (checked a megabyte at a time: no copy of a large file)."""
    if data.isascii():
        return True
    decode = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(data)
    try:
        for i in range(0, len(data), _CHUNK):
            decode(view[i:i + _CHUNK], final=i + _CHUNK >= len(data))
    except UnicodeDecodeError:
        return False
    return True


def project(data: bytes, start: int, stop: int, utf8: bool) -> dict[str, Any] | None:
    """The declared fields of the line `data[start:stop]` (without its newline), or None: the line
    is read the ordinary way. `utf8`: all of `data` is valid UTF-8 (else this line is checked)."""
    i = data.find(_TYPE, start, min(stop, start + _HEAD))
    if i < 0 or not data.startswith(_MARKS, i + len(_TYPE)):
        return None
    raw = memoryview(data)[start:stop]
    if not utf8:
        try:
            str(raw, "utf-8")
        except UnicodeDecodeError:
            return None
    try:
        obj = _decode(raw)
    except Exception:  # (msgspec's DecodeError / ValidationError, a RecursionError): the ordinary way
        return None
    p = obj.get("payload")
    if p is None or obj.get("type") not in SELECTIVE_TYPES or "content" in p or "output" in p:
        return None
    return obj



def _marks(table: dict[str, Any]) -> dict[str, Any]:
    """A check table's fields as the C scanner's checked leaves: each check's fast mark (a field
    whose check has none sends its line the ordinary way)."""
    return {key: getattr(check, "fast", None) or False for key, check in table.items()}


def _usage(check: Any) -> dict[str, Any]:
    return dict.fromkeys(checks.USAGE_KEYS, check.fast)


#: The same projection for the C scanner (`read._native.project_lines`, sessiontools/read/_project.c),
#: made from the checks' own tables: every field `read.codex.checks.check_line` checks, as its check's
#: fast mark (a value that does not pass it sends the line the ordinary way), and every other field
#: `read.codex.load._record` reads, nested where only some of an object's fields are read (an
#: event's `item` is a whole message: only its type is built). A line with `content` or `output`
#: goes the ordinary way, like `project`'s. So a projected line is one on which the checks would
#: drop nothing, and its record is the ordinary way's (tests/read/test_native_project.py).
NATIVE_SPEC: dict[str, Any] = {
    **_marks(checks.LINE), "type": SELECTIVE_TYPES, "ordinal": None,
    "payload": {
        **_marks(checks.PAYLOAD), "content": False, "output": False,
        "info": {**_marks(checks.INFO), "total_token_usage": _usage(total_count),
                 "last_token_usage": _usage(count)},
        "usage": _usage(count), "latest_token_usage_record": {"usage": _usage(count)},
        "item": {"type": None}, "error": {"message": None, "codex_error_info": None},
        "turn_attribution": {"turn_trigger": None}, "codex_error_info": None, "response_id": None, "cwd": None,
    },
}
