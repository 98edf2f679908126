"""estimate-error end to end: rows per file (cached), then the statistics over every file's rows.

`estimate_error(sessions, options)` = `summarize_requests([session_requests(s) ...], options)`;
the CLI runs `SessionWorker` over the files (in processes with `--jobs`) and then summarises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from sessiontools.analysis.estimate.calibration import (
    fit_tokenizer_profile,
    profile_from_record,
    profile_record,
)
from sessiontools.analysis.estimate.measure import MessageMeasurer, TokensWait
from sessiontools.analysis.estimate.options import (
    EstimateErrorOptions,
    needed_encodings,
    needs_model_tokenizer,
)
from sessiontools.analysis.estimate.rows import SessionRows, session_rows, session_rows_steps
from sessiontools.analysis.estimate.source import transcript_source
from sessiontools.analysis.estimate.summary import EstimateErrorReport, summarize
from sessiontools.tokens.tiktoken_counter import TiktokenCounter

ProgressFn = Callable[[int, int, str], None]

#: Bump when the rows `session_requests` produces change shape or meaning (invalidates cached rows).
ROWS_VERSION = 5

def package_hash() -> str:
    """`sessiontools.__version__` + a hash of every `sessiontools/**/*.py` (`fingerprint`): cached rows
    never outlive a change anywhere in the package."""
    from sessiontools.tokens import fingerprint

    return fingerprint.code_fingerprint()


def model_tokenizers_key() -> list[str]:
    """The model tokenizers (name@version) and whether installed: cached rows counted with other
    vocabularies are not reused."""
    from sessiontools.tokens import registry

    return [f"{registry.store_name(n)}:{registry.available(n)}" for n in sorted(registry.TOKENIZERS)]


def session_requests(session: Any, measurer: MessageMeasurer, *, leaf: str | None = None, all_leaves: bool = False,
                     rule_version: str | None = None) -> SessionRows:
    """One row per request of a loaded file (a Pi session or a neutral transcript)."""
    return session_rows(transcript_source(session, leaf=leaf, all_leaves=all_leaves, version=rule_version), measurer)


class RowsJob:
    """A file's rows being made: run up to its first wait for token counts (counted in the
    background meanwhile); `ready()` says whether `finish()` would wait."""

    def __init__(self, job: Generator[TokensWait, None, SessionRows]) -> None:
        self.job: Generator[TokensWait, None, SessionRows] | None = job
        self.wait: TokensWait | None = None
        self.rows: SessionRows | None = None
        try:
            self.wait = next(job)
        except StopIteration as stop:  # nothing to count (rows from the cache, no requests)
            self.rows, self.job = stop.value, None

    def ready(self) -> bool:
        return self.wait is None or self.wait.ready()

    def finish(self) -> SessionRows:
        if self.job is not None:
            self.rows, self.job = _run(self.job), None
        assert self.rows is not None
        return self.rows


def _run(job: Generator[TokensWait, None, SessionRows]) -> SessionRows:
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def _key_text(path: Any) -> Any:
    """A path as the cache key holds it: a name that is not UTF-8 (lone surrogates, which orjson
    refuses) with its bytes escaped, so that two such names stay two keys."""
    if isinstance(path, str):
        return path.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
    return path


def _session_job(s: Any, measurer: MessageMeasurer, options: EstimateErrorOptions,
                 store: Any | None) -> Generator[TokensWait, None, SessionRows]:
    """`session_requests` in steps (see `rows.session_rows_steps`), reusing the rows stored for the
    same file content, options and package."""
    import orjson

    key = None
    content_hash = getattr(s, "content_hash", None)
    if store is not None and content_hash:
        key = "estimate-error:" + orjson.dumps([
            ROWS_VERSION, package_hash(), content_hash, _key_text(getattr(s, "path", None)), options.leaf,
            options.all_leaves,
            options.rule_version, sorted(measurer.base), measurer.model and model_tokenizers_key(),
        ]).decode()
        hit = store.get_result(key)
        if hit is not None:
            head, _, body = hit.partition(b"\n")
            meta = orjson.loads(head)
            return SessionRows(meta["session"], meta["rule_version"], orjson.loads(body),
                               Counter(meta["skipped"]), profile_from_record(meta["profile"]), True)
    source = transcript_source(s, leaf=options.leaf, all_leaves=options.all_leaves, version=options.rule_version)
    sr = with_profile((yield from session_rows_steps(source, measurer)))
    if key is not None:
        try:
            profile = profile_record(sr.profile)
            # the columns as JSON: ints, floats (orjson writes the shortest text that reads back to the
            # same double), strings and nulls come back exactly as they were (orjson writes NaN as null:
            # the only float columns, the shares, are finite by construction, 0.0 where their total is 0)
            body = orjson.dumps(sr.columns)
            meta = orjson.dumps({"session": sr.session, "rule_version": sr.rule_version,
                                 "skipped": dict(sr.skipped), "profile": profile})
        except (ValueError, TypeError):  # not exactly storable (an int past 64 bits, a lone surrogate): not cached
            return sr
        store.put_result(key, meta + b"\n" + body)
    return sr


def with_profile(sr: SessionRows) -> SessionRows:
    """`sr` with its tokenizer profile (computed once per file, cached with its rows)."""
    if not sr.profiled:
        sr.profile, sr.profiled = fit_tokenizer_profile(sr.columns), True
    return sr


def make_measurer(options: EstimateErrorOptions, *, tokenizers: Mapping[str, TiktokenCounter] | None = None,
                  token_store: Any | None = None) -> MessageMeasurer:
    need = needed_encodings(options)
    counters = dict(tokenizers or {})
    for enc in sorted(need):
        if enc not in counters:
            counters[enc] = TiktokenCounter(enc, store=token_store)
    return MessageMeasurer({k: v for k, v in counters.items() if k in need}, model=needs_model_tokenizer(options),
                           store=token_store)


def estimate_error(sessions: Sequence[Any], options: EstimateErrorOptions | None = None, *,
                   tokenizers: Mapping[str, TiktokenCounter] | None = None, progress: ProgressFn | None = None,
                   token_store: Any | None = None) -> EstimateErrorReport:
    """Estimated vs actual prompt tokens for every request of the sessions.

    `tokenizers` maps encoding names to counters (default: loaded on demand, sharing `token_store`,
    a persistent `TokenStore`, when given). `progress(done, total, label)` is called after each file.
    """
    options = options or EstimateErrorOptions()
    measurer = make_measurer(options, tokenizers=tokenizers, token_store=token_store)
    return summarize_requests(_pipeline(sessions, measurer, options, token_store, progress), options)


def _pipeline(sessions: Sequence[Any], measurer: MessageMeasurer, options: EstimateErrorOptions,
              store: Any | None, progress: ProgressFn | None) -> list[SessionRows]:
    """The rows of every file, in order, as a pipeline (`sessiontools.read.pipeline`): while a file's
    tokens are counted (tiktoken threads), the next files are read and measured."""
    from sessiontools.read.pipeline import in_order, short_switch_interval

    def finish(s: Any, job: RowsJob | None) -> SessionRows:
        assert job is not None
        rows = job.finish()
        if progress is not None:
            progress(len(per_session) + 1, len(sessions), str(getattr(s, "path", getattr(s, "source", ""))))
        return rows

    per_session: list[SessionRows] = []
    with short_switch_interval():
        started = ((s, RowsJob(_session_job(s, measurer, options, store))) for s in sessions)
        per_session.extend(in_order(started, finish))
    return per_session


def summarize_requests(per_session: Sequence[SessionRows], options: EstimateErrorOptions) -> EstimateErrorReport:
    """Statistics, calibration and early/late over the rows of every file (in order)."""
    return summarize(per_session, options)


class SessionWorker:
    """`session_requests` for one file as a picklable callable (for `--jobs`): each process keeps one
    measurer (loaded vocabularies, in-memory counts) and one cache connection."""

    _per_process: dict[tuple[str, str | None], tuple[MessageMeasurer, Any]] = {}

    def __init__(self, options: EstimateErrorOptions, store_path: str | None) -> None:
        import os

        self.options = options
        self.store_path = store_path
        self.owner = os.getpid()  # a copy in a --jobs or Dask worker runs elsewhere

    def __call__(self, session: Any) -> SessionRows:
        return self.start(session).finish()

    def start(self, session: Any) -> RowsJob:
        """The rows of `session`, started: its tokens are counted in the background until `finish()`
        (`parallel.map_sessions` pipelines files through this in one process)."""
        measurer, store = self._state()
        return RowsJob(_session_job(session, measurer, self.options, store))

    def _state(self) -> tuple[MessageMeasurer, Any]:
        key = (repr(self.options), self.store_path)
        state = SessionWorker._per_process.get(key)
        if state is None:
            self.start_helpers()
            store = None
            if self.store_path is not None:
                from sessiontools.tokens.store import TokenStore

                store = TokenStore(self.store_path)  # type: ignore[arg-type]
            state = SessionWorker._per_process[key] = (make_measurer(self.options, token_store=store), store)
        return state

    def start_helpers(self) -> None:
        """In the process that made this worker, with an empty token cache (none on disk yet, or
        --no-cache): each vocabulary this run counts with is loaded by a helper process
        (`tokens.remote`) while this one reads and measures the first files. With a warm cache the
        vocabulary is usually never needed, and --jobs workers count in their own processes."""
        import os

        if os.getpid() != self.owner or (self.store_path is not None and os.path.exists(self.store_path)):
            return
        from sessiontools.tokens.tiktoken_counter import ENCODINGS

        names = [n for n in sorted(needed_encodings(self.options)) if n in ENCODINGS]
        if names:
            from sessiontools.tokens import remote

            remote.start(*names)

    def drain_notes(self) -> list[str]:
        """Cache notes raised in this process since the last call (sent back to the parent by
        `parallel.map_sessions`, so that notes from `--jobs` workers are not lost)."""
        out = []
        for _, store in SessionWorker._per_process.values():
            if store is not None and store.notes:
                out.extend(store.notes)
                store.notes.clear()
        return out

    @classmethod
    def notes(cls) -> list[str]:
        """Cache notes of this process's workers (e.g. a corrupt cache that was rebuilt)."""
        return [n for _, store in cls._per_process.values() if store is not None for n in store.notes]
