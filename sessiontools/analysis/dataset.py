"""The rows of the exported dataset (`sessiontools export`): one session file -> rows per table.

`transcript_rows(transcript, options)` turns any agent's neutral transcript (read with every
branch, `all_leaves`) into plain row dicts per table (cheap to pickle, for `--jobs` and Dask). The
per-file worker that adds replay rows is `report.export.ExportWorker` (analysis and replay are
sibling layers). Tables and columns are documented in docs/dataset.md; frames with fixed schemas
are built by `analysis.dataset_frames`, Parquet is written by `report.dataset`.

Row rules:
- `sessions`: one row per transcript path (the path Pi resumes first: the non-sidechain path whose
  last message comes last in the file; then other branches; then sidechains), counts along it.
- `requests` and `compactions`: every model call and every compaction of the file once (a request
  on the shared prefix of two branches is one row), with the `path_index` of the first path it is
  on. So `count(*)` per file is what `inspect` reports for the file.
- `summaries`: one row per compaction with a readable summary, parsed by `analysis.drift`.
- `replay_runs` / `replay_compactions`: `replay.replay_records` rows (every agent, its own policy).

Content mix of a request's context (over the neutral text units it sent; shares are fractions of
its characters): `cjk_share` (drift's one CJK definition), `tool_result_share` (tool-result units),
`code_share` (tool-call units, fenced ``` blocks, and units that are a JSON object or array).
`chars4_estimate` is ceil(chars/4) per message (an image 1200 tokens), summed over the context.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from sessiontools.jsvalues import utf16_len
from sessiontools.transcript.model import Message, Transcript, TranscriptPath, UnitKind

#: Bumped whenever a column is added, removed, renamed or changes meaning (docs/dataset.md).
SCHEMA_VERSION = 6

TABLES = ("sessions", "requests", "compactions", "summaries", "replay_runs", "replay_compactions")

IMAGE_TOKENS = 1200
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_MONTH = re.compile(r"^(\d{4})-(\d{2})")


def month_of(timestamp: str | None) -> str:
    """`YYYY-MM` of an ISO timestamp, else `unknown` (the partition of undated sessions)."""
    m = _MONTH.match(timestamp or "")
    return f"{m.group(1)}-{m.group(2)}" if m else "unknown"


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """What to compute beyond the recorded facts. `tokenizers`: o200k and/or cl100k counts of each
    request's context (slow on big corpora). `replay`: keyword options of `replay.replay_records`
    (windows, reserves, keeps, policy), or None for no replay tables."""

    tokenizers: tuple[str, ...] = ()
    replay: dict[str, Any] | None = None


def _message_stats(m: Message) -> tuple[int, int, int, int, int]:
    """(chars4 tokens, chars, CJK chars, tool-result chars, code chars) of one message."""
    from sessiontools.tokens.text import CJK_RE as CJK_CHARS

    chars = cjk = tool = code = images = 0
    for u in m.units:
        if u.kind == UnitKind.IMAGE:
            images += 1
            continue
        n = len(u.text)
        chars += n
        if not n:
            continue
        cjk += len(CJK_CHARS.findall(u.text))
        if u.kind == UnitKind.TOOL_RESULT:
            tool += n
        s = u.text.strip()
        if u.kind == UnitKind.TOOL_CALL or (s[:1] in "{[" and s[-1:] in "}]"):
            code += n
        else:
            code += sum(len(b) for b in _FENCE.findall(u.text))
    return math.ceil(utf16_len(m.text) / 4) + images * IMAGE_TOKENS, chars, cjk, tool, code


class _Prefix:
    """Prefix sums of per-message values, so a context's total is O(ranges), not O(messages)."""

    def __init__(self, columns: Sequence[Sequence[int]]) -> None:
        self.sums = [list(accumulate(col, initial=0)) for col in columns]

    def total(self, ranges: Sequence[tuple[int, int]]) -> list[int]:
        return [sum(s[b] - s[a] for a, b in ranges) for s in self.sums]


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def _kind(cjk: float | None, tool: float | None, code: float | None) -> str:
    """One label per request for grouping: cjk, code, tool_result or prose (first that holds)."""
    if cjk is not None and cjk >= 0.2:
        return "cjk"
    if code is not None and code >= 0.5:
        return "code"
    if tool is not None and tool >= 0.5:
        return "tool_result"
    return "prose" if cjk is not None else "empty"


def _counters(names: Sequence[str]) -> list[Any]:
    """The tokenizers asked for; one whose vocabulary is unavailable is None (its column stays null,
    rather than holding the chars/4 counts `token_counter` falls back to)."""
    from sessiontools.analysis.drift.counting import token_counter

    counters = [token_counter(n) for n in names]
    return [None if c.fallback_reason else c for c in counters]


def _path_prefix(path: TranscriptPath, counters: Sequence[Any]) -> _Prefix:
    stats = [_message_stats(m) for m in path.messages]
    cols: list[list[int]] = [[s[k] for s in stats] for k in range(5)]
    for c in counters:
        cols.append([c.count(m.text) if c is not None else 0 for m in path.messages])
    return _Prefix(cols)


def _request_row(path_index: int, n: int, r: Any, prefix: _Prefix, tokenizers: Sequence[str | None]) -> dict[str, Any]:
    est, chars, cjk, tool, code, *tok = prefix.total(r.context)
    u = r.usage
    a = u.prompt
    shares = (_share(cjk, chars), _share(tool, chars), _share(code, chars))
    row = {
        "path_index": path_index, "n": n, "line": r.line, "request_id": r.id, "timestamp": r.timestamp,
        "provider": r.provider, "model": r.model, "stop_reason": r.stop_reason, "context_window": r.context_window,
        "input_tokens": u.input, "cache_read_tokens": u.cache_read, "cache_write_tokens": u.cache_write,
        "output_tokens": u.output, "prompt_tokens": a, "recorded_cost": u.cost.total if u.cost else None,
        "context_messages": sum(b - a_ for a_, b in r.context), "context_chars": chars,
        "chars4_estimate": est, "chars4_error": est - a, "chars4_rel_error": round((est - a) / a, 6) if a else None,
        "cjk_share": shares[0], "tool_result_share": shares[1], "code_share": shares[2],
        "content_kind": _kind(*shares),
    }
    for name in ("o200k", "cl100k"):
        row[f"{name}_estimate"] = tok[list(tokenizers).index(name)] if name in tokenizers else None
    return row


def _compaction_row(path_index: int, n: int, c: Any) -> dict[str, Any]:
    return {
        "path_index": path_index, "n": n, "line": c.line, "compaction_id": c.id, "timestamp": c.timestamp,
        "trigger": c.trigger.value, "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
        "writer": c.writer, "summary_chars": len(c.summary) if c.summary is not None else None,
        "kept_messages": sum(b - a for a, b in c.kept),
    }


def _summary_row(path_index: int, n: int, c: Any, agent: str) -> dict[str, Any]:
    from sessiontools.analysis.drift.summary import parse_summary

    p = parse_summary(c.summary, "compaction", writer=c.writer, agent=agent)
    kinds: dict[str, int] = {}
    for kind in p.literals.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "path_index": path_index, "n": n, "line": c.line, "compaction_id": c.id,
        "summary_format": p.summary_format, "summary_chars": len(c.summary),
        "sections": len(p.sections), "section_names": " | ".join(p.sections),
        "template_sections_absent": len(p.sections_absent), "section_compliance": round(p.compliance, 6),
        "items": len(p.items), "split_turn": p.split_turn,
        "read_files": None if p.read_files is None else len(p.read_files),
        "modified_files": None if p.modified_files is None else len(p.modified_files),
        "literals": len(p.literals), "literal_paths": kinds.get("path", 0), "literal_code": kinds.get("code", 0),
        "literal_numbers": kinds.get("number", 0), "literal_quoted": kinds.get("quoted", 0),
        "literal_errors": kinds.get("error", 0),
    }


def ordered_paths(t: Transcript) -> list[TranscriptPath]:
    """The path the agent resumes first (non-sidechain, last message latest), then the others."""
    main = [p for p in t.paths if not p.sidechain and p.messages]
    if not main:
        return list(t.paths)
    first = max(main, key=lambda p: p.messages[-1].line)
    return [first] + [p for p in t.paths if p is not first]


def _session_row(k: int, p: TranscriptPath, t: Transcript) -> dict[str, Any]:
    reqs = p.requests
    models = sorted({f"{r.provider or '?'}/{r.model or '?'}" for r in reqs})
    costs = [r.usage.cost.total for r in reqs if r.usage.cost is not None]
    stamps = sorted(m.timestamp for m in p.messages if m.timestamp)
    return {
        "path_index": k, "leaf_id": p.leaf_id, "sidechain": p.sidechain, "session_id": t.session_id,
        "format": t.format, "models": ", ".join(models), "first_timestamp": stamps[0] if stamps else None,
        "last_timestamp": stamps[-1] if stamps else None, "messages": len(p.messages), "requests": len(reqs),
        "compactions": len(p.compactions), "overflows": len(p.overflows),
        "skipped_replies": sum(p.skipped.values()),
        "input_tokens": sum(r.usage.input for r in reqs), "cache_read_tokens": sum(r.usage.cache_read for r in reqs),
        "cache_write_tokens": sum(r.usage.cache_write for r in reqs),
        "output_tokens": sum(r.usage.output for r in reqs),
        "recorded_cost": round(sum(costs), 6) if costs else None,
    }


@dataclass(slots=True)
class FileRows:
    """What one file gives: its partition values and rows per table (`TABLES`)."""

    agent: str
    month: str
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    file: str = ""  # the path or URL it was read from


def transcript_rows(t: Transcript, options: ExportOptions) -> FileRows:
    """Rows of every table but the replay ones for one transcript (see the module docstring)."""
    paths = ordered_paths(t)
    stamps = [m.timestamp for p in paths for m in p.messages[:1] if m.timestamp]
    out = FileRows(t.agent.value, month_of(min(stamps) if stamps else None), file=t.source)
    counters = _counters(options.tokenizers)
    available = [name if c is not None else None for name, c in zip(options.tokenizers, counters, strict=True)]
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    seen_r: set[tuple[int, Any]] = set()
    seen_c: set[tuple[int, Any]] = set()
    for k, p in enumerate(paths):
        tables["sessions"].append(_session_row(k, p, t))
        prefix = None
        for r in p.requests:
            if (r.line, r.id) not in seen_r:
                seen_r.add((r.line, r.id))
                prefix = prefix or _path_prefix(p, counters)
                tables["requests"].append(_request_row(k, len(tables["requests"]) + 1, r, prefix, available))
        for c in p.compactions:
            if (c.line, c.id) in seen_c:
                continue
            seen_c.add((c.line, c.id))
            n = len(tables["compactions"]) + 1
            tables["compactions"].append(_compaction_row(k, n, c))
            if c.summary:
                tables["summaries"].append(_summary_row(k, n, c, t.agent.value))
    out.tables = tables
    return out
