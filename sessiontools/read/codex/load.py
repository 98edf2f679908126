"""Read Codex rollouts into records (`read.codex.records`), reporting every line it cannot use.

Lines are parsed like Pi's (`read.parse.parse_line`: orjson, careful fallback, glued objects
recovered, a truncated last line named as such). A line that parses but has an unknown `type`, or a
known type with a payload of the wrong shape, is skipped with a `Diagnostic`; reading goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields as _dataclass_fields
from pathlib import Path
from typing import Any

from orjson import JSONDecodeError
from orjson import loads as _loads

from sessiontools.errors import InputError
from sessiontools.read.codex.checks import TREE, check_line, check_tree
from sessiontools.read.codex.records import (
    Compacted,
    CompactionEvent,
    ErrorEvent,
    Other,
    Record,
    ResponseItem,
    Rollout,
    SessionMeta,
    TaskEvent,
    TokenCount,
    TokenUsage,
    TurnContext,
    UsageRecord,
)
from sessiontools.read.codex.selective import LEAN_SPEC, NATIVE_SPEC
from sessiontools.read.diagnostics import Diagnostic
from sessiontools.read.files import expand_paths, read_file_bytes
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES, line_views, too_long
from sessiontools.read.parse import gc_paused, parse_line
from sessiontools.read.sniff import is_rollout as is_rollout  # (detection: read.sniff, without this reader)
from sessiontools.read.values import integer

try:
    from sessiontools.read._native import check_tree as _check_tree
    from sessiontools.read._native import codex_records, project_lines
except ImportError:  # not built on this machine: every line the ordinary way, the same records
    project_lines = codex_records = None

_MAP = (dict, Mapping)  # a dict (what JSON gives) is tested first, without the ABC machinery
ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "local_shell_call", "reasoning", "web_search_call", "image_generation_call", "compaction",
    "compaction_summary", "tool_search_call", "tool_search_output", "ghost_snapshot", "other",
})
QUIET_TYPES = frozenset({"world_state", "state"})


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def token_usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, _MAP):
        return None
    get = raw.get
    a, b, c, d, e, f = (get("input_tokens"), get("cached_input_tokens"), get("output_tokens"),
                        get("reasoning_output_tokens"), get("total_tokens"), get("cache_write_input_tokens"))
    if type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int:
        # every count an int (what Codex writes): `_int` of each is itself; the last is often absent
        return TokenUsage(a, b, c, d, e, f if type(f) is int else integer(f))
    return TokenUsage(integer(a), integer(b), integer(c), integer(d), integer(e), integer(f))


def _event(n: int, ts: str | None, p: Mapping[str, Any]) -> Record:
    kind = p.get("type")
    if kind == "token_count":
        info = p.get("info")
        if not isinstance(info, _MAP):
            return Other(n, ts, "event_msg", "token_count")  # rate-limit-only count: no usage
        window = info.get("model_context_window")
        return TokenCount(n, ts, token_usage(info.get("total_token_usage")), token_usage(info.get("last_token_usage")),
                          window if type(window) is int else integer(window, None))
    if kind == "item_completed":
        item = p.get("item")
        if isinstance(item, _MAP) and item.get("type") == "ContextCompaction":
            return CompactionEvent(n, ts, "item_completed")
        return Other(n, ts, "event_msg", kind)
    if kind in ("task_started", "task_complete", "turn_aborted"):
        err = p.get("error") if isinstance(p.get("error"), _MAP) else {}
        attribution = p.get("turn_attribution") if isinstance(p.get("turn_attribution"), _MAP) else {}
        return TaskEvent(n, ts, "started" if kind == "task_started" else "complete", _str(p.get("turn_id")),
                         integer(p.get("model_context_window"), None), _str(err.get("message")),
                         _str(err.get("codex_error_info")), _str(attribution.get("turn_trigger")))
    if kind == "error":
        info = p.get("codex_error_info")
        return ErrorEvent(n, ts, str(p.get("message", "")), info if isinstance(info, str) else None)
    if kind == "context_compacted":
        return CompactionEvent(n, ts, "context_compacted")
    return Other(n, ts, "event_msg", _str(kind))


def _record(n: int, obj: Mapping[str, Any], path: str) -> Record | Diagnostic:
    """One parsed line as a record, or the reason it cannot be used."""
    ts = obj.get("timestamp")
    if not isinstance(ts, str):  # (`_str`, inline: this runs for every line)
        ts = None
    kind = obj.get("type")
    if "payload" not in obj:
        if isinstance(kind, str) and kind in ITEM_TYPES:  # legacy: a bare response item
            return ResponseItem(n, ts, kind, _str(obj.get("role")), obj)
        if obj.get("record_type") == "state":
            return Other(n, ts, "state")
        if isinstance(obj.get("id"), str) and "instructions" in obj:  # legacy first line
            return SessionMeta(n, ts, obj["id"], None, None, None, _str(obj.get("instructions")), None, obj)
        return Diagnostic(path, n, f"not a rollout line (no payload; type {kind!r}); line skipped", "skipped")
    p = obj.get("payload")
    if not isinstance(p, _MAP):
        return Diagnostic(path, n, f"{kind!r} line without an object payload; line skipped", "skipped")
    if kind == "event_msg":  # the line types in order of frequency, then the rest
        return _event(n, ts, p)
    if kind == "response_item":
        item_type = p.get("type")
        if not isinstance(item_type, str):
            return Diagnostic(path, n, "response_item without a type; line skipped", "skipped")
        role = p.get("role")
        return ResponseItem(n, ts, item_type, role if isinstance(role, str) else None, p)
    if kind == "token_usage_record":
        rid = p.get("response_id")
        return UsageRecord(n, ts, rid if isinstance(rid, str) else None, token_usage(p.get("usage")))
    if kind == "session_meta":
        meta = p.get("meta") if isinstance(p.get("meta"), _MAP) else p  # some versions nest it
        bi = meta.get("base_instructions")
        text = _str(bi.get("text")) if isinstance(bi, _MAP) else _str(bi)
        return SessionMeta(n, ts, _str(meta.get("id")), _str(meta.get("cwd")), _str(meta.get("cli_version")),
                           _str(meta.get("model_provider")), text, _str(meta.get("originator")), meta)
    if kind == "turn_context":
        return TurnContext(n, ts, _str(p.get("turn_id")), _str(p.get("model")), _str(p.get("cwd")))
    if kind == "compacted":
        hist = p.get("replacement_history")
        items = tuple(it for it in hist if isinstance(it, _MAP)) if isinstance(hist, list) else None
        latest = p.get("latest_token_usage_record")
        usage = token_usage(latest.get("usage")) if isinstance(latest, _MAP) else None
        return Compacted(n, ts, str(p.get("message") or ""), items, usage)
    if isinstance(kind, str) and kind in QUIET_TYPES:
        return Other(n, ts, kind)
    return Diagnostic(path, n, f"unknown rollout line type {kind!r}; line skipped", "skipped")


def _ordinary(n: int, raw: memoryview, terminated: bool, path: str, records: list[Record],
              diags: list[Diagnostic]) -> tuple[int, int]:
    """One line read the ordinary way (whole objects, `check_line`, `parse_line`'s diagnostics) into
    `records` and `diags`; how many of its objects are wrapped (`payload`) and carry an `ordinal`."""
    # The common case, a line that is one JSON object, parsed once; anything else (blank, glued,
    # malformed, a byte order mark on line 1, JSON's non-whitespace) goes through `parse_line`.
    try:
        obj = _loads(raw) if n > 1 else None
    except JSONDecodeError:
        obj = None
    if type(obj) is dict:
        objs: Any = (obj,)
    else:
        parsed = parse_line(bytes(raw), n, path, terminated=terminated)
        diags.extend(parsed.diagnostics)
        objs = parsed.objects
    wrapped = ordinal = 0
    for obj in objs:
        diags.extend(Diagnostic(path, n, why, "recovered") for why in check_line(obj))
        rec = _record(n, obj, path)
        if isinstance(rec, Diagnostic):
            diags.append(rec)
            continue
        records.append(rec)
        if "payload" in obj:
            wrapped += 1
            ordinal += "ordinal" in obj
    return wrapped, ordinal


def with_slots(cls: type) -> tuple[type, tuple[Any, ...]]:
    """A slots dataclass with its fields' slots in its constructor's order: how the C makes one
    (`codex_make`, _codex.c: each slot set as the dataclass's `__init__`, which only sets them)."""
    return cls, tuple(getattr(cls, f.name) for f in _dataclass_fields(cls))


#: The record classes `read._native.codex_records` builds, in its order (_codex.c).
_CLASSES = tuple(with_slots(cls) for cls in (
    TokenUsage, TokenCount, Other, CompactionEvent, TaskEvent, ErrorEvent, ResponseItem, UsageRecord, TurnContext))


def _read_native(data: bytes, path: str, limit: int,
                 lean: dict[int, tuple[int, int]] | None = None) -> tuple[list[Record], list[Diagnostic], int, int]:
    """`_read_lines` with the C scanner: every line validated in one pass, the selective types'
    declared fields alone built (`selective.NATIVE_SPEC`), and only when the checks would keep every
    one as it is, and made into their records in C (`read._native.codex_records`, _codex.c: what
    `_projected` does). A line the C does not take is read the ordinary way. With `lean` (a dict),
    the response items are projected too (`selective.LEAN_SPEC`) and each projected item's line is
    put in `lean` (its `(start, stop)`)."""
    spec = NATIVE_SPEC if lean is None else LEAN_SPEC
    if codex_records is None:
        return _projected(data, path, limit, spec, lean)
    taken, todo, wrapped, ordinal = codex_records(data, spec, limit, TREE, _check_tree, _CLASSES, lean)
    if not todo:
        return taken, [], wrapped, ordinal
    records: list[Record] = []
    diags: list[Diagnostic] = []
    end, view, at = len(data), memoryview(data), 0
    for n, start, stop, position in todo:
        records += taken[at:position]
        at = position
        if limit and stop - start > limit:
            diags.append(Diagnostic(path, n, too_long(stop - start, limit) or "", "skipped"))
            continue
        w, o = _ordinary(n, view[start:stop], stop < end, path, records, diags)
        wrapped += w
        ordinal += o
    records += taken[at:]
    return records, diags, wrapped, ordinal


def _projected(data: bytes, path: str, limit: int, spec: dict[str, Any],
               lean: dict[int, tuple[int, int]] | None) -> tuple[list[Record], list[Diagnostic], int, int]:
    """`_read_native`'s Python reference (`codex_records` does the same in C): each line projected
    by `project_lines` made into its record by `_record` (a projection that is no record is read
    again the ordinary way)."""
    records: list[Record] = []
    diags: list[Diagnostic] = []
    wrapped = ordinal = 0
    end = len(data)
    view = memoryview(data)
    for n, (start, stop, fields) in enumerate(project_lines(data, spec, 2, limit), 1):
        if fields is not None and type(fields.get("payload")) is dict:  # (its checked fields pass)
            item = fields.get("type") == "response_item"  # (a line without a type is projected too)
            if not item or check_tree(fields, TREE):  # (an item's content blocks: their checks' marks)
                rec = _record(n, fields, path)
                if not isinstance(rec, Diagnostic):
                    records.append(rec)
                    wrapped += 1
                    ordinal += "ordinal" in fields
                    if item:
                        lean[n] = (start, stop)  # type: ignore[index]
                    continue
        if limit and stop - start > limit:
            diags.append(Diagnostic(path, n, too_long(stop - start, limit) or "", "skipped"))
            continue
        w, o = _ordinary(n, view[start:stop], stop < end, path, records, diags)
        wrapped += w
        ordinal += o
    return records, diags, wrapped, ordinal


def _read_lines(data: bytes, path: str, max_line: int | None = DEFAULT_MAX_LINE_BYTES,
               native: bool | None = None, lean: dict[int, tuple[int, int]] | None = None,
               ) -> tuple[list[Record], list[Diagnostic], int, int]:
    """Every line's records and diagnostics, and how many lines are wrapped (`payload`) and carry an
    `ordinal`. Each line is parsed from a view of `data` (no copy of the file cut into lines); one
    over `max_line` bytes is skipped with its reason. With the C scanner (`native`: None when it is
    built, True to ask for it), the lines whose records keep a few fields are decoded into those
    alone (`_read_native`: the same records; with `lean`, the response items too); without it
    (False), every line the ordinary way."""
    limit = max_line or 0
    if native or (native is None and project_lines is not None):
        return _read_native(data, path, limit, lean)
    records: list[Record] = []
    diags: list[Diagnostic] = []
    wrapped = ordinal = 0
    end = len(data)
    for n, raw, after in line_views(data):
        if limit and len(raw) > limit:
            diags.append(Diagnostic(path, n, too_long(len(raw), limit) or "", "skipped"))
            continue
        w, o = _ordinary(n, raw, after <= end, path, records, diags)
        wrapped += w
        ordinal += o
    return records, diags, wrapped, ordinal


class _FullItems:
    """`Rollout.full_item` of a lean reading: the whole item of a projected `response_item` line,
    read again from the file's bytes (as the ordinary way reads it: the projection passed the
    checks, so they change nothing)."""

    __slots__ = ("data", "lines")

    def __init__(self, data: bytes, lines: dict[int, tuple[int, int]]) -> None:
        self.data, self.lines = data, lines

    def __call__(self, line: int) -> Mapping[str, Any] | None:
        where = self.lines.get(line)
        if where is None:
            return None
        payload: Mapping[str, Any] = _loads(memoryview(self.data)[where[0]:where[1]])["payload"]
        return payload


def read_rollout_bytes(data: bytes, path: str = "<memory>", *,
                       max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES, lean: bool = False) -> Rollout:
    """Read a rollout held in memory (a line over `max_line_bytes`, None: any, is skipped). `lean`
    (`inspect`, `Reader.selective`): response items hold only what a count reads
    (`selective.LEAN_SPEC`; `Rollout.full_item` gives an item whole); the same records otherwise."""
    if b"\x00" in data[:4096]:
        return Rollout(path, (), [Diagnostic(path, 1, "binary file (NUL bytes): not a Codex rollout", "fatal")], "unknown")
    items: dict[int, tuple[int, int]] | None = {} if lean and project_lines is not None else None
    with gc_paused():  # (see `gc_paused`: parsed JSON holds no cycles)
        records, diags, wrapped, ordinal = _read_lines(data, path, max_line_bytes, lean=items)
    schema = "legacy" if records and not wrapped else ("2025" if wrapped and ordinal < wrapped else "current")
    if not records and not any(d.kind == "fatal" for d in diags):
        diags.append(Diagnostic(path, 1, "no rollout lines in this file", "fatal"))
    return Rollout(path, tuple(records), diags, schema, _FullItems(data, items) if items else None)


def records_from_objects(objects: Iterable[Mapping[str, Any]], path: str = "<memory>") -> Rollout:
    """Records from already-parsed line objects (tests, builders)."""
    import json

    return read_rollout_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in objects), path)


def load_rollout(path: str | os.PathLike[str], *, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
                 lean: bool = False) -> Rollout:
    """Read one rollout file (`lean`: see `read_rollout_bytes`). Never writes to it. Raises
    `InputError` when it cannot be opened."""
    return read_rollout_bytes(rollout_bytes(path), str(path), max_line_bytes=max_line_bytes, lean=lean)


def rollout_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of one rollout file (`InputError` when it cannot be opened)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory (give a rollout file, or use a command that takes directories)")
    return read_file_bytes(p)


def rollout_objects(path: str | os.PathLike[str]) -> list[Mapping[str, Any] | None]:
    """Each physical line of a rollout as its JSON object (None: not a JSON object), in order: what
    `resummarize` copies into the rollout it writes (the typed records keep only what the analyses
    read). Never writes to the file."""
    import json

    out: list[Mapping[str, Any] | None] = []
    for _, raw, _ in line_views(read_file_bytes(Path(path))):
        try:
            obj = json.loads(bytes(raw))
        except ValueError:
            obj = None
        out.append(obj if isinstance(obj, dict) else None)
    return out


def default_sessions_dir(env: Mapping[str, str], home: str | os.PathLike[str]) -> Path:
    """Where Codex keeps rollouts: `$CODEX_HOME/sessions`, else `~/.codex/sessions` (the caller passes
    the environment and home: core code does not read them)."""
    codex_home = env.get("CODEX_HOME")
    return Path(codex_home) / "sessions" if codex_home else Path(home) / ".codex" / "sessions"


def expand_rollouts(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, `*.jsonl` below directories (sorted), glob matches; each once, in order."""
    return expand_paths(paths)
