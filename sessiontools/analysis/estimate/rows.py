"""One row per request of a transcript: A, recorded usage, the context's composition, and E of the
estimators that need no fit (chars4, pi, cl100k, o200k, model: each request's context counted
with its model's own tokenizer, `tokens.registry`, o200k where it has none). Schema: `docs/estimate-error.md`.

Each message of a path is measured once; a request's sums are differences of prefix sums over the
index ranges of its context (`Request.context`), so a request costs O(ranges), not O(messages).
For Pi 1.x, the system messages of a context are replayed into one (as pi-ai sends them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.estimate.measure import (
    CHAR_COLUMNS,
    FEATURE_COLUMNS,
    MessageMeasure,
    MessageMeasurer,
    TokensWait,
)
from sessiontools.analysis.estimate.options import OWN_COLUMN, TOKENIZERS
from sessiontools.analysis.estimate.source import Source
from sessiontools.names import RULE_VERSION_KEY
from sessiontools.policies.checkpoint import ContextView
from sessiontools.policies.registry import SYSTEM_MERGERS, own_policy
from sessiontools.read.values import integer, iso_seconds
from sessiontools.tokens.calibrated import model_key
from sessiontools.tokens.registry import FALLBACK, available, encoding_for
from sessiontools.transcript.model import Request, TranscriptPath

#: Integer columns of the request frame before the estimator columns, in order.
BASE_INT_COLUMNS = ("index", "line", "timestamp", "actual", "input", "cache_read", "cache_write", "output",
                    "messages", "images", "chars_total", "text_chars", "cjk_chars", *CHAR_COLUMNS)
STR_COLUMNS = ("session", RULE_VERSION_KEY, "entry_id", "provider", "model", "model_key", "kind", "model_tokenizer")
#: The trailing part of the agent's check point (messages after the usage it trusted), for the hybrid.
TRAIL_COLUMNS = ("t_messages", "t_images", *(f"t_{c}" for c in FEATURE_COLUMNS), "t_chars4", "t_cl100k", "t_o200k",
                 "t_model")
#: A trusted usage below this share of the count of the messages before it (the context minus the
#: trailing part, with the request's own tokenizer, else chars/4) cannot be those messages' usage
#: (a provider that reported 0 or a fraction of the prompt): the calibrated hybrid then counts the
#: whole context, as with no usage. Real prompts under the own count exist (a cheaper tokenizer:
#: A/E 0.5 on some MiniMax files), none under 0.3 of it outside such broken rows (118 of 12,151
#: requests with a trusted usage in the real files of docs/estimate-error.md).
IMPLAUSIBLE_USAGE = 0.3
#: Characters of new messages after which their token counting is started (while the path is measured).
SUBMIT_CHARS = 200_000
#: Sums per request, in matrix column order.
_SUMS = ("chars", "chars4", "text_chars", "cjk_chars", "images", "tool_chars", *CHAR_COLUMNS, *FEATURE_COLUMNS)


@dataclass(slots=True)
class SessionRows:
    """The requests of one file as plain columns (name -> one value per request, in `COLUMNS`
    order), what was skipped, and the trailing parts of the agent's check points (for the
    calibrated hybrid: request row -> feature sums after the usage). No polars frame is made per
    file: `summary` makes one over every file's columns (`frame_of`)."""

    session: str
    rule_version: str
    columns: dict[str, list[Any]]
    skipped: Counter[str]
    #: the file's tokenizer profile (`calibration.fit_tokenizer_profile` of `columns`: a pure function
    #: of the rows, cached with them), valid when `profiled`
    profile: Any = None
    profiled: bool = False

    @property
    def size(self) -> int:
        """How many request rows."""
        return len(self.columns["actual"])

    @property
    def frame(self) -> Any:
        """This file's rows as a polars frame (`frame_of`)."""
        return frame_of([self.columns])


def _ms_timestamp(ts: str | None) -> int | None:
    """An ISO timestamp as epoch milliseconds (None when absent or unreadable)."""
    s = iso_seconds(ts)
    return None if s is None else int(round(s * 1000))


def _prefix(measures: Sequence[MessageMeasure | None], fields_of: Any, width: int) -> Any:
    """Prefix sums (one row per message + a leading zero row) of the measured messages' vectors."""
    import numpy as np

    m = np.zeros((len(measures) + 1, width), dtype=np.int64)
    rows = {}
    for i, ms in enumerate(measures):
        if ms is None:
            continue
        v = rows.get(id(ms))
        if v is None:
            v = rows[id(ms)] = fields_of(ms)
        m[i + 1] = v
    return np.cumsum(m, axis=0)


def _range_totals(prefix: Any, per_request: Sequence[Sequence[tuple[int, int]]]) -> Any:
    """Sums of `prefix`'s rows over each request's ranges, one row per request, in one numpy pass."""
    import numpy as np

    lo: list[int] = []
    hi: list[int] = []
    ends = [0]
    for ranges in per_request:
        for a, b in ranges:
            lo.append(a)
            hi.append(b)
        ends.append(len(lo))
    parts = prefix[np.asarray(hi, dtype=np.intp)] - prefix[np.asarray(lo, dtype=np.intp)]
    acc = np.zeros((len(lo) + 1, prefix.shape[1]), dtype=np.int64)
    np.cumsum(parts, axis=0, out=acc[1:])
    e = np.asarray(ends, dtype=np.intp)
    return acc[e[1:]] - acc[e[:-1]]


def _vector(ms: MessageMeasure, encodings: Sequence[str]) -> list[int]:
    roles = [ms.chars if c == ms.role_column else 0 for c in CHAR_COLUMNS]
    return [ms.chars, ms.chars4, ms.text_chars, ms.cjk_chars, ms.images, ms.chars if ms.tool else 0, *roles,
            *ms.features, *(ms.tokens[e] for e in encodings)]


def _covered(requests: Sequence[Request], n: int) -> list[int]:
    """Indices (sorted) of the messages in any request's context: O(ranges + n), not O(sum of contexts)."""
    import numpy as np

    diff = np.zeros(n + 1, dtype=np.int64)
    for r in requests:
        for a, b in r.context:
            if b > a:
                diff[a] += 1
                diff[b] -= 1
    return np.flatnonzero(np.cumsum(diff[:n]) > 0).tolist()


#: The columns of a file's rows, in frame order.
COLUMNS = (*STR_COLUMNS, *BASE_INT_COLUMNS, "cjk_share", "tool_share", *FEATURE_COLUMNS, "est_chars4", OWN_COLUMN,
           "est_cl100k", "est_o200k", "est_model", "hyb_usage", *TRAIL_COLUMNS)


class _Columns:
    """Column lists of the rows being built."""

    def __init__(self, encodings: Sequence[str]) -> None:
        self.encodings = encodings
        self.data: dict[str, list[Any]] = {c: [] for c in COLUMNS}

    def extend(self, **values: Sequence[Any]) -> None:
        for k, v in values.items():
            self.data[k].extend(v)


def session_rows(source: Source, measurer: MessageMeasurer) -> SessionRows:
    """One row per request of every path of `source` (a request on several paths once)."""
    steps = session_rows_steps(source, measurer)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def session_rows_steps(source: Source, measurer: MessageMeasurer) -> Generator[TokensWait, None, SessionRows]:
    """`session_rows` in steps: it yields each time it has started counting tokens in the background,
    so that the caller can do other work (e.g. start the next file) before resuming it."""
    t = source.transcript
    version = source.version or ""
    native = source.native_messages
    encodings = [enc for enc in TOKENIZERS.values() if enc in measurer.base]
    cols = _Columns(encodings)
    seen: set[int] = set()
    for k, path in enumerate(t.paths):
        resets = source.resets[k] if k < len(source.resets) else ()
        extra = source.overflows[k] if k < len(source.overflows) else ()
        todo = sorted((r for r in (*path.requests, *extra) if r.line not in seen), key=lambda r: r.line)
        seen.update(r.line for r in todo)
        if todo:
            yield from _path_rows(source, path, todo, resets, measurer, encodings, cols, native, version)
    return SessionRows(t.source, version, cols.data, Counter(source.skipped))


class _MergedSystems:
    """An agent that sends a context's system messages merged into one (`Source.merges_systems`; Pi
    1.x, as pi-ai does): the merged message of each context, measured once per distinct set of
    system messages (`policies.registry.SYSTEM_MERGERS`: the agent's own merge)."""

    def __init__(self, path: TranscriptPath, measurer: MessageMeasurer, version: str, merge: Any) -> None:
        import numpy as np

        self.path, self.measurer, self.version, self.merge = path, measurer, version, merge
        self.at = np.asarray([m.index for m in path.messages if isinstance(m.raw, dict)
                              and m.raw.get("role") == "system"], dtype=np.int64)
        self.memo: dict[tuple[int, ...], MessageMeasure | None] = {}

    def of(self, ranges: Sequence[tuple[int, int]]) -> tuple[MessageMeasure | None, int]:
        """(the merged system message's measure or None, how many system messages the context has)."""
        import numpy as np

        found: list[int] = []
        for a, b in ranges:
            lo, hi = np.searchsorted(self.at, (a, b)).tolist()
            found.extend(self.at[lo:hi].tolist())
        key = tuple(found)
        if key not in self.memo:
            system = self.merge([self.path.messages[i].raw for i in key]) if key else None
            self.memo[key] = self.measurer.native(system, self.version) if system is not None else None
        return self.memo[key], len(key)


def _path_rows(source: Source, path: TranscriptPath, requests: Sequence[Request], resets: Sequence[int],
               measurer: MessageMeasurer, encodings: Sequence[str], cols: _Columns, native: bool,
               version: str) -> Generator[TokensWait, None, None]:
    import numpy as np

    own: list[str | None] = [_own_tokenizer(r) for r in requests] if measurer.model else [None] * len(requests)
    encodings = [*encodings, *sorted({e for e in own if e is not None and e not in encodings})]
    merge = source.merges_systems
    systems = _MergedSystems(path, measurer, version, SYSTEM_MERGERS[source.agent]()) if merge else None
    # Pi 1.x sends its system messages replayed into one: they are measured (and tokenized) merged only.
    unsent = set(systems.at.tolist()) if systems is not None else set()
    measures: list[MessageMeasure | None] = [None] * len(path.messages)
    waits: list[TokensWait] = []
    todo: list[MessageMeasure] = []
    size = 0
    for i in _covered(requests, len(path.messages)):
        if i in unsent:
            continue
        m = path.messages[i]
        ms = measures[i] = measurer.native(m.raw, version) if native and isinstance(m.raw, dict) else measurer.neutral(m)
        if any(e not in ms.tokens for e in encodings):
            todo.append(ms)
            size += ms.chars
            if size >= SUBMIT_CHARS:  # long paths: counting starts while the rest is measured
                waits.append(measurer.submit_tokens(todo, encodings))
                todo, size = [], 0
    merged = [systems.of(r.context) if systems is not None else (None, 0) for r in requests]
    waits.append(measurer.submit_tokens([*todo, *(sm for sm, _ in merged if sm is not None)], encodings))
    policy = own_policy(source.transcript, path, source.version)  # the rule replay walks with, one count
    owns = [policy.checkpoint(path, r, ContextView(path.messages, r.context), resets) for r in requests]
    counted = TokensWait.of(waits)
    yield counted  # the tokens are counted in the background meanwhile
    counted()
    fields = [*_SUMS, *encodings]
    prefix = _prefix(measures, lambda ms: _vector(ms, encodings), len(fields))
    tot = _range_totals(prefix, [r.context for r in requests])
    n_messages = [sum(b - a for a, b in r.context if b > a) for r in requests]
    for j, (sys_m, n_sys) in enumerate(merged):
        if sys_m is not None:
            tot[j] += np.asarray(_vector(sys_m, encodings), dtype=np.int64)
            n_messages[j] += 1 - n_sys
    trail = _range_totals(prefix, [_ranges(o.trailing) for o in owns])
    named = _named(fields, tot)
    _add_rows(cols, source, path, requests, named, n_messages, owns, native, measurer.base)
    t = _named(fields, trail)
    none = [None] * len(requests)
    check = [(named[e][j] - t[e][j]) if e is not None else (named["chars4"][j] - t["chars4"][j])
             for j, e in enumerate(own)]
    cols.extend(hyb_usage=[o.usage_tokens if o.usage_index is not None and o.usage_tokens >= IMPLAUSIBLE_USAGE * c
                           else None for o, c in zip(owns, check, strict=True)])
    cols.extend(t_messages=[len(o.trailing) for o in owns], t_images=t["images"], t_chars4=t["chars4"],
                t_cl100k=t["cl100k_base"] if "cl100k_base" in measurer.base else none,
                t_o200k=t["o200k_base"] if "o200k_base" in measurer.base else none,
                **{f"t_{c}": t[c] for c in FEATURE_COLUMNS})
    cols.extend(model_tokenizer=own, est_model=_by_request(named, own), t_model=_by_request(t, own))


def _own_tokenizer(r: Request) -> str:
    """The tokenizer of the request's model (`tokens.registry`), o200k when it has none or its
    package is not installed."""
    name = encoding_for(r.provider, r.model)
    return name if name == FALLBACK or available(name) else FALLBACK


def _by_request(columns: dict[str, list[int]], names: Sequence[str | None]) -> list[int | None]:
    """Per request, the column of its own tokenizer (None where none was counted)."""
    return [columns[n][j] if n is not None else None for j, n in enumerate(names)]


def _named(fields: Sequence[str], matrix: Any) -> dict[str, list[int]]:
    """The columns of a (requests x fields) matrix as lists, by field name."""
    return {f: col for f, col in zip(fields, matrix.T.tolist(), strict=True)}


def _ranges(indices: Sequence[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def _add_rows(cols: _Columns, source: Source, path: TranscriptPath, requests: Sequence[Request],
              tot: dict[str, list[int]], n_messages: list[int], owns: Sequence[Any], native: bool,
              base: Sequence[str]) -> None:
    n = len(requests)
    none = [None] * n
    usage = [r.usage for r in requests]
    cols.extend(
        session=[source.transcript.source] * n, **{RULE_VERSION_KEY: [source.version or ""] * n},
        entry_id=[r.id for r in requests], provider=[r.provider for r in requests], model=[r.model for r in requests],
        model_key=[model_key(r.provider, r.model) for r in requests],
        kind=["overflow" if r.stop_reason == "error" else "request" for r in requests],
        index=[r.index for r in requests], line=[r.line for r in requests],
        timestamp=[_timestamp(path.messages[r.index].raw if native else None, r) for r in requests],
        actual=[u.prompt for u in usage], input=[u.input for u in usage], cache_read=[u.cache_read for u in usage],
        cache_write=[u.cache_write for u in usage], output=[u.output for u in usage],
        **{OWN_COLUMN: [own.tokens for own in owns]},
    )
    cols.extend(
        messages=n_messages, images=tot["images"], chars_total=tot["chars"], text_chars=tot["text_chars"],
        cjk_chars=tot["cjk_chars"], **{c: tot[c] for c in CHAR_COLUMNS},
        cjk_share=[round(c / t, 6) if t else 0.0 for c, t in zip(tot["cjk_chars"], tot["text_chars"], strict=True)],
        tool_share=[round(c / t, 6) if t else 0.0 for c, t in zip(tot["tool_chars"], tot["chars"], strict=True)],
        **{c: tot[c] for c in FEATURE_COLUMNS}, est_chars4=tot["chars4"],
        est_cl100k=tot["cl100k_base"] if "cl100k_base" in base else none,
        est_o200k=tot["o200k_base"] if "o200k_base" in base else none,
    )


def _timestamp(raw: Any, r: Request) -> int | None:
    """The request's timestamp in epoch ms (Pi: the message's own `timestamp` number)."""
    if raw is not None:
        return integer(raw.get("timestamp") if isinstance(raw, dict) else None, None)
    return _ms_timestamp(r.timestamp)


def frame_of(parts: Sequence[dict[str, list[Any]]]) -> Any:
    """One polars frame of the rows of `parts` (files' `SessionRows.columns`), in order: one typed
    Series per column over every part (the frame `pl.concat` of per-file frames would give)."""
    import polars as pl

    series = []  # a list of typed Series builds faster than a dict with a schema (same frame)
    for c in COLUMNS:
        dtype = pl.Utf8 if c in STR_COLUMNS else pl.Float64 if c in ("cjk_share", "tool_share") else pl.Int64
        values = parts[0][c] if len(parts) == 1 else [v for p in parts for v in p[c]]
        series.append(pl.Series(c, values, dtype=dtype))
    return pl.DataFrame(series)
