"""One row per request of a transcript: A, recorded usage, the context's composition, and E of the
estimators that need no fit (chars4, pi, cl100k, o200k). Schema: `docs/estimate-error.md`.

Each message of a path is measured once; a request's sums are differences of prefix sums over the
index ranges of its context (`Request.context`), so a request costs O(ranges), not O(messages).
For Pi 1.x, the system messages of a context are replayed into one (as pi-ai sends them).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.estimate.measure import (
    CHAR_COLUMNS,
    FEATURE_COLUMNS,
    MessageMeasure,
    MessageMeasurer,
)
from sessiontools.analysis.estimate.options import TOKENIZERS
from sessiontools.analysis.estimate.source import Source
from sessiontools.policies.checkpoint import own_estimate
from sessiontools.tokens.calibrated import model_key
from sessiontools.transcript.model import Agent, Message, Request, TranscriptPath

#: Integer columns of the request frame before the estimator columns, in order.
BASE_INT_COLUMNS = ("index", "line", "timestamp", "actual", "input", "cache_read", "cache_write", "output",
                    "messages", "images", "chars_total", "text_chars", "cjk_chars", *CHAR_COLUMNS)
STR_COLUMNS = ("session", "pi_version", "entry_id", "provider", "model", "model_key", "kind")
#: The trailing part of the agent's check point (messages after the usage it trusted), for the hybrid.
TRAIL_COLUMNS = ("t_messages", "t_images", *(f"t_{c}" for c in FEATURE_COLUMNS), "t_chars4", "t_cl100k", "t_o200k")
#: Sums per request, in matrix column order.
_SUMS = ("chars", "chars4", "text_chars", "cjk_chars", "images", "tool_chars", *CHAR_COLUMNS, *FEATURE_COLUMNS)


@dataclass(slots=True)
class SessionRows:
    """The requests of one file as a frame, what was skipped, and the trailing parts of the
    agent's check points (for the calibrated hybrid: request row -> feature sums after the usage)."""

    session: str
    pi_version: str
    frame: Any  # pl.DataFrame
    skipped: Counter[str]


def _ms_timestamp(ts: str | None) -> int | None:
    """An ISO timestamp as epoch milliseconds (None when absent or unreadable)."""
    if not ts:
        return None
    from datetime import datetime

    try:
        d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(round(d.timestamp() * 1000))


class _PathSums:
    """Prefix sums of per-message measures along one path."""

    def __init__(self, path: TranscriptPath, measures: Sequence[MessageMeasure | None], encodings: Sequence[str],
                 skip_system: bool) -> None:
        import numpy as np

        self.encodings = list(encodings)
        self.fields = [*_SUMS, *self.encodings]
        m = np.zeros((len(path.messages) + 1, len(self.fields)), dtype=np.int64)
        for i, ms in enumerate(measures):
            if ms is None or (skip_system and ms.role_column == "chars_system"):
                continue
            m[i + 1] = _vector(ms, self.encodings)
        self.prefix = np.cumsum(m, axis=0)

    def total(self, ranges: Sequence[tuple[int, int]]) -> Any:
        import numpy as np

        acc = np.zeros(len(self.fields), dtype=np.int64)
        for a, b in ranges:
            acc += self.prefix[b] - self.prefix[a]
        return acc


def _vector(ms: MessageMeasure, encodings: Sequence[str]) -> list[int]:
    roles = [ms.chars if c == ms.role_column else 0 for c in CHAR_COLUMNS]
    return [ms.chars, ms.chars4, ms.text_chars, ms.cjk_chars, ms.images, ms.chars if ms.tool else 0, *roles,
            *ms.features, *(ms.tokens[e] for e in encodings)]


class _Columns:
    """Column lists of the frame being built."""

    def __init__(self, encodings: Sequence[str]) -> None:
        self.encodings = encodings
        self.data: dict[str, list[Any]] = {c: [] for c in (*STR_COLUMNS, *BASE_INT_COLUMNS, "cjk_share", "tool_share",
                                                           *FEATURE_COLUMNS, "est_chars4", "est_pi", "est_cl100k",
                                                           "est_o200k", "hyb_usage", *TRAIL_COLUMNS)}

    def add(self, **values: Any) -> None:
        for k, v in values.items():
            self.data[k].append(v)


def session_rows(source: Source, measurer: MessageMeasurer) -> SessionRows:
    """One row per request of every path of `source` (a request on several paths once)."""
    t = source.transcript
    version = source.version or ""
    pi = t.agent == Agent.PI
    encodings = [enc for enc in TOKENIZERS.values() if enc in measurer.tokenizers]
    cols = _Columns(encodings)
    seen: set[int] = set()
    for k, path in enumerate(t.paths):
        resets = source.resets[k] if k < len(source.resets) else ()
        extra = source.overflows[k] if k < len(source.overflows) else ()
        todo = sorted((r for r in (*path.requests, *extra) if r.line not in seen), key=lambda r: r.line)
        seen.update(r.line for r in todo)
        if todo:
            _path_rows(source, path, todo, resets, measurer, encodings, cols, pi, version)
    return SessionRows(t.source, version, _frame(cols), Counter(source.skipped))


def _merged_system(path: TranscriptPath, ctx: Sequence[Message]) -> Any:
    from sessiontools.policies.pi.usage import current_system_message

    raws = [m.raw for m in ctx if isinstance(m.raw, dict) and m.raw.get("role") == "system"]
    return current_system_message(raws) if raws else None


def _path_rows(source: Source, path: TranscriptPath, requests: Sequence[Request], resets: Sequence[int],
               measurer: MessageMeasurer, encodings: Sequence[str], cols: _Columns, pi: bool, version: str) -> None:
    used = sorted({i for r in requests for i in r.context_indices()})
    measures: list[MessageMeasure | None] = [None] * len(path.messages)
    for i in used:
        m = path.messages[i]
        measures[i] = measurer.pi(m.raw, version) if pi and isinstance(m.raw, dict) else measurer.neutral(m)
    merge = pi and version == "1"
    merged: list[MessageMeasure | None] = []
    for r in requests:
        system = _merged_system(path, path.context(r)) if merge else None
        merged.append(measurer.pi(system, version) if system is not None else None)
    measurer.count_tokens([m for m in (*measures, *merged) if m is not None])
    sums = _PathSums(path, measures, encodings, skip_system=merge)
    for r, sys_m in zip(requests, merged, strict=True):
        ctx = path.context(r)
        tot = sums.total(r.context)
        n_messages = len(ctx)
        if merge and sys_m is not None:
            import numpy as np

            tot = tot + np.asarray(_vector(sys_m, encodings), dtype=np.int64)
            n_messages = sum(1 for m in ctx if m.raw.get("role") != "system") + 1
        own = own_estimate(source.agent, path, r, ctx, resets, source.version)
        trail = dict(zip(sums.fields, sums.total(_ranges(own.trailing)).tolist(), strict=True))
        raw = path.messages[r.index].raw if pi else None
        _add_row(cols, source, r, dict(zip(sums.fields, tot.tolist(), strict=True)), n_messages, own, raw)
        cols.add(t_messages=len(own.trailing), t_images=trail["images"], t_chars4=trail["chars4"],
                 t_cl100k=trail.get("cl100k_base"), t_o200k=trail.get("o200k_base"),
                 **{f"t_{c}": trail[c] for c in FEATURE_COLUMNS})


def _ranges(indices: Sequence[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def _add_row(cols: _Columns, source: Source, r: Request, tot: dict[str, int], n_messages: int, own: Any,
             raw: Any) -> None:
    u = r.usage
    cols.add(
        session=source.transcript.source, pi_version=source.version or "", entry_id=r.id, provider=r.provider,
        model=r.model, model_key=model_key(r.provider, r.model), kind="overflow" if r.stop_reason == "error" else "request",
        index=r.index, line=r.line, timestamp=_timestamp(raw, r), actual=u.prompt, input=u.input,
        cache_read=u.cache_read, cache_write=u.cache_write, output=u.output, messages=n_messages,
        images=tot["images"], chars_total=tot["chars"], text_chars=tot["text_chars"], cjk_chars=tot["cjk_chars"],
        **{c: tot[c] for c in CHAR_COLUMNS},
        cjk_share=round(tot["cjk_chars"] / tot["text_chars"], 6) if tot["text_chars"] else 0.0,
        tool_share=round(tot["tool_chars"] / tot["chars"], 6) if tot["chars"] else 0.0,
        **{c: tot[c] for c in FEATURE_COLUMNS},
        est_chars4=tot["chars4"], est_pi=own.tokens,
        est_cl100k=tot.get("cl100k_base"), est_o200k=tot.get("o200k_base"),
        hyb_usage=own.usage_tokens if own.usage_index is not None else None,
    )


def _timestamp(raw: Any, r: Request) -> int | None:
    """The request's timestamp in epoch ms (Pi: the message's own `timestamp` number)."""
    if raw is not None:
        v = raw.get("timestamp") if isinstance(raw, dict) else None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        return int(v)
    return _ms_timestamp(r.timestamp)


def _frame(cols: _Columns) -> Any:
    import polars as pl

    schema: dict[str, Any] = {}
    for c in cols.data:
        schema[c] = pl.Utf8 if c in STR_COLUMNS else pl.Float64 if c in ("cjk_share", "tool_share") else pl.Int64
    return pl.DataFrame(cols.data, schema=schema)
