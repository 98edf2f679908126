"""Run a per-session function over many files, in order, optionally in several processes.

Results come back in the order of the files whatever `jobs` is, so output is identical for any
number of processes. Each worker reads its file itself (one session in memory per process), so
memory grows with the largest session, not with the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from sessiontools.errors import SessionToolsError, UsageError
from sessiontools.read import Diagnostic
from sessiontools.read.agents import Agent
from sessiontools.read.files import DEFAULT_MAX_FILE_BYTES
from sessiontools.read.lines import DEFAULT_MAX_LINE_BYTES
from sessiontools.read.parse import gc_paused
from sessiontools.read.sources import load_source, load_source_digest
from sessiontools.read.workers import (
    _preload,
    _start_method,
    _worker_ignores_sigint,
    frozen_heap,
    start_forkserver_ignoring_sigint,
    stop_workers,
)

T = TypeVar("T")


@dataclass(slots=True)
class FileResult(Generic[T]):
    """What one file gave: its diagnostics, whether it was a readable session, and the result."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    readable: bool = False
    error: str | None = None  # the file could not be opened, or the function failed with a user error
    skipped_or_recovered: int = 0
    value: T | None = None
    notes: list[str] = field(default_factory=list)  # e.g. cache warnings raised while computing `value`
    agent: Agent | None = None  # who wrote the file (None when it could not be opened)
    unsupported: bool = False  # the command does not read this agent's sessions: `fn` was not called
    content_digest: str = ""  # sha256 (hex) of the file's bytes, from the same read (`content_hash=FULL_DIGEST`)

#: `content_hash=FULL_DIGEST`: every file is read once and the sha256 of those bytes comes back on
#: `FileResult.content_digest` (the identity of a file in an exported dataset).
FULL_DIGEST = "sha256"

#: Every agent sessiontools reads.
ALL_AGENTS = frozenset(Agent)

#: An unexpected exception while one file is read or analysed becomes that file's error (named, the
#: run going on for the others, exit 3 at the end) instead of ending the whole run. The CLI turns
#: this off under `SESSIONTOOLS_DEBUG=1`, and the fuzzing tests do, so that such a bug is seen.
CONTAIN_ERRORS = True


def internal_error(path: str, exc: BaseException) -> str:
    """The one-line error of a file whose reading or analysis raised an unexpected exception. A Ctrl-C
    that Python wrapped (a KeyboardInterrupt while a class is made, as a lazy import does, comes back
    as RuntimeError "Error calling __set_name__") is the interrupt again, not the file's error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            raise seen
        seen = seen.__cause__ or seen.__context__
    what = "out of memory" if isinstance(exc, MemoryError) else f"{type(exc).__name__}: {exc}"
    return (f"{path}: internal error while reading or analysing this file ({what}); the file is left out "
            "(a bug in sessiontools: please report it with SESSIONTOOLS_DEBUG=1's traceback)")


#: Input limits: (the largest file, the longest line) in bytes, None for no limit.
Limits = tuple[int | None, int | None]
DEFAULT_LIMITS: Limits = (DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LINE_BYTES)


def reads_selectively(fn: Any) -> bool:
    """Whether `fn` (or a partial's function) declares it reads only what a selective reading keeps
    (`selective_read = True`: `analysis.inspect.inspect_source`; see `read.sources.load_source`)."""
    return getattr(getattr(fn, "func", fn), "selective_read", False) is True


def _open(path: str, content_hash: bool | str, agents: frozenset[Agent],
          limits: Limits = DEFAULT_LIMITS, selective: bool = False) -> tuple[FileResult[Any], Any]:
    """The file read by its agent's reader: (its result so far, the source to work on or None).
    `selective`: see `load_source` (a function that reads only what it keeps says so: `reads_selectively`)."""
    out: FileResult[Any] = FileResult(path)
    try:
        if content_hash == FULL_DIGEST:
            s, out.content_digest = load_source_digest(path, max_bytes=limits[0], max_line_bytes=limits[1])
        else:
            s = load_source(path, content_hash=bool(content_hash), max_bytes=limits[0], max_line_bytes=limits[1],
                            selective=selective)
    except SessionToolsError as exc:
        out.error = str(exc)
        return out, None
    except Exception as exc:  # MemoryError, RecursionError and bugs alike: this file only
        if not CONTAIN_ERRORS:
            raise
        out.error = internal_error(path, exc)
        return out, None
    out.agent = s.agent
    out.diagnostics = list(s.diagnostics)
    out.readable = bool(getattr(s, "readable", True)) and not any(d.kind == "fatal" for d in s.diagnostics)
    if not out.readable:
        return out, None
    out.skipped_or_recovered = sum(1 for d in s.diagnostics if d.kind in ("skipped", "recovered"))
    if s.agent not in agents:
        out.unsupported = True
        return out, None
    return out, s


def _guarded(out: FileResult[Any], fn: Any, call: Callable[[], Any], notes: bool = True) -> Any:
    """`call()`, a user error becoming the file's error (an impossible command line still exits 2);
    the notes `fn` raised meanwhile (in a worker process) travel back with the result."""
    try:
        return call()
    except UsageError:
        raise  # the command line asks for something impossible (e.g. an unknown --leaf): exit 2
    except SessionToolsError as exc:
        out.error = str(exc)
        return None
    except Exception as exc:  # MemoryError, RecursionError and bugs alike: this file only
        if not CONTAIN_ERRORS:
            raise
        out.error = internal_error(out.path, exc)
        return None
    finally:
        drain = getattr(fn, "drain_notes", None)
        if notes and callable(drain):
            out.notes.extend(drain())


def _one(path: str, fn: Callable[[Any], T], content_hash: bool | str = False,
         agents: frozenset[Agent] = ALL_AGENTS, limits: Limits = DEFAULT_LIMITS) -> FileResult[T]:
    # One pause of the cyclic collector for the file's whole work (`read.parse.gc_paused`): the source
    # and what the work built from it die by reference counting before it resumes, so no collection
    # walks their ~14k objects (a Pi replay: 6 collections, ~8 ms of 70) and the one that follows
    # frees any cyclic garbage the file's work left.
    with gc_paused():
        out, s = _open(path, content_hash, agents, limits, reads_selectively(fn))
        if s is not None:
            out.value = _guarded(out, fn, lambda: fn(s))
        s = None  # (dropped before the pause ends)
    return out


def _pipelined(paths: Sequence[str], fn: Any, content_hash: bool | str, agents: frozenset[Agent],
               limits: Limits) -> Iterator[FileResult[Any]]:
    """`_one` over every file in this process, as a pipeline (`sessiontools.read.pipeline`): `fn.start(source)`
    begins a file's background work (estimate-error's token counting), the next files are read and
    started meanwhile, and each is finished (`job.finish()`) in order."""
    from sessiontools.read.pipeline import in_order, short_switch_interval

    def started() -> Iterator[tuple[FileResult[Any], Any]]:
        for p in paths:
            out, s = _open(p, content_hash, agents, limits, reads_selectively(fn))
            yield out, (None if s is None else _guarded(out, fn, lambda: fn.start(s), notes=False))  # noqa: B023

    def finish(out: FileResult[Any], job: Any) -> FileResult[Any]:
        if job is not None:
            out.value = _guarded(out, fn, job.finish)
        return out

    with short_switch_interval():
        yield from in_order(started(), finish)


#: Input bytes per worker process: about 0.1 s of CPU at the costliest reader's cost per byte, more
#: for any function that does more than read (estimate-error's tokenizing, a replay). Small inputs
#: run in this process.
BYTES_PER_WORKER = 32 * 1024 * 1024

#: Reading CPU (ns) per worker process for a function whose work is the reading (`inspect`): twice
#: what a worker costs, where its share of the reading (half, on 2 cores) saves what it costs. A
#: worker costs about 0.055 s of CPU (forked, warmed, fed, its results sent back: 404M instructions
#: more for `--jobs 2` than `--jobs 1` over the 315 MB Pi corpus of `make bench`, callgrind with
#: --trace-children=yes, at the 0.137 ns an instruction of that run's reading took; session 12).
READ_NS_PER_WORKER = 110_000_000

#: Files whose reader `default_jobs` asks for (spread over the folder, the largest among them): a
#: folder is mostly one agent's, and sniffing 6,000 files would cost more than a worker.
SAMPLED_FILES = 32


def default_jobs(files: Sequence[str | Path] | None = None, fn: Any = None) -> int:
    """Worker processes for `files`: one per BYTES_PER_WORKER of input, at most one per core. For a
    function whose work is the reading (`reads_selectively(fn)`: inspect), one per READ_NS_PER_WORKER
    of reading: the bytes weighed by their reader's cost per byte (`read.sources.Reader.read_ns_per_byte`),
    so a cheap reader's bytes fork fewer workers. Other functions (estimate-error's tokenizing, a
    replay) cost far more per byte than any reading, so their bytes alone decide. Files are only
    sniffed (a sample: `SAMPLED_FILES`) when the bytes alone ask for more than one worker."""
    cores = os.cpu_count() or 1
    if files is None:
        return cores
    sizes = _sizes([str(f) for f in files])
    total = sum(sizes)
    jobs = max(1, min(cores, len(files), total // BYTES_PER_WORKER))
    if jobs == 1 or not reads_selectively(fn):
        return jobs
    return max(1, min(jobs, int(total * _ns_per_byte(files, sizes)) // READ_NS_PER_WORKER))


def _ns_per_byte(files: Sequence[str | Path], sizes: Sequence[int]) -> float:
    """The byte-weighted reading cost per byte (ns) of a sample of `files` (the costliest reader's
    when nothing sampled has a byte)."""
    from sessiontools.read.sources import MAX_READ_NS_PER_BYTE, read_ns_per_byte

    step = max(1, len(files) // SAMPLED_FILES)
    sample = sorted(range(len(files)), key=lambda i: -sizes[i])[::step][:SAMPLED_FILES]
    weighed = sum(sizes[i] for i in sample)
    if not weighed:
        return MAX_READ_NS_PER_BYTE
    return sum(sizes[i] * read_ns_per_byte(files[i]) for i in sample) / weighed


def map_sessions(
    files: Sequence[str | Path], fn: Callable[[Any], T], *, jobs: int = 1, content_hash: bool | str = False,
    agents: frozenset[Agent] = ALL_AGENTS, dask: Any = None, on_done: Callable[[], None] | None = None,
    max_bytes: int | None = DEFAULT_MAX_FILE_BYTES, max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[FileResult[T]]:
    """`fn(source)` for every file, yielded in file order; `fn` must be picklable when jobs > 1.

    Each file is read by its agent's reader (`read.sources.load_source`: a Pi `Session`, a Codex
    `Rollout`, ...); files of agents not in `agents` are not passed to `fn` (`unsupported`).
    `content_hash` makes each source carry the key of its bytes (`content_hash`, for result caches);
    `FULL_DIGEST` gives every file's sha256 on its result instead (`FileResult.content_digest`).
    With `dask` (an `executors.DaskCluster`) the same per-file work runs as Dask tasks instead of
    processes; `on_done` is then called as each task finishes (for progress bars). A file over
    `max_bytes` (None: any size) or not a regular file is not read (its `error` says why); a line
    over `max_line_bytes` (None: any length) is skipped with its diagnostic.
    """
    paths = [str(f) for f in files]
    limits: Limits = (max_bytes, max_line_bytes)
    if dask is not None:
        from sessiontools.read.executors import dask_map

        yield from dask_map(dask, _one, paths, (fn, content_hash, agents, limits), on_done, sizes=_sizes(paths),
                            preload=_preload(fn))
        return
    if jobs <= 1 or len(paths) <= 1:
        if callable(getattr(fn, "start", None)) and len(paths) > 1:
            with frozen_heap():
                yield from _pipelined(paths, fn, content_hash, agents, limits)
            return
        with frozen_heap(len(paths) > 1):
            for p in paths:
                yield _one(p, fn, content_hash, agents, limits)
        return
    yield from _pool_map(paths, fn, min(jobs, len(paths)), content_hash, agents, limits)


def _sizes(paths: Sequence[str]) -> list[int]:
    out = []
    for p in paths:
        try:
            out.append(os.stat(p).st_size)
        except (OSError, ValueError):
            out.append(0)  # a URL or an unreadable file: its worker says what is wrong with it
    return out


def _many(paths: Sequence[str], fn: Callable[[Any], T], content_hash: bool | str, agents: frozenset[Agent],
          limits: Limits) -> list[FileResult[T]]:
    """`_one` over a batch of files (one `--jobs` worker task: `executors.batches`, as on Dask)."""
    return [_one(p, fn, content_hash, agents, limits) for p in paths]


def _pool_map(paths: list[str], fn: Callable[[Any], T], workers: int, content_hash: bool | str,
              agents: frozenset[Agent], limits: Limits) -> Iterator[FileResult[T]]:
    """`_one` over `paths` in `workers` processes, submitted largest first, yielded in file order.

    Workers read their files themselves (paths go out in batches, their results come back). For a
    function that reads selectively (`inspect`) this process is one of the `workers`: it forks one
    fewer and, while a result it is to yield next is not in, does the smallest batch no worker has
    taken yet itself (`_take_one`; `_forked` where this process may fork: no process pool at all).
    A worker cost about 0.04 s of CPU beyond its files (forked, its pages copied on write, its
    results pickled back: `--jobs 3` against `--jobs 2` on the Codex bench corpus), and the parent
    only waited."""
    from sessiontools.read.executors import batches

    futures: list[Any] = [None] * len(paths)  # each file's result, or its batch's future and place in it
    groups = batches(_sizes(paths), workers)
    here = reads_selectively(fn)  # (inspect: no cache to open, no thread pool to start)
    method = _start_method()
    if method == "fork" and here:
        warm = _warm_up(paths, groups, workers, fn, content_hash, agents, limits)
        if warm is not None:
            futures[warm[0]] = warm[1]
            method = _start_method()  # (a thread started meanwhile: no fork)
        if method == "fork":
            yield from _forked(paths, groups, warm, workers, (fn, content_hash, agents, limits))
            return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        # The forkserver imports the package once (and the main module, as by default: otherwise
        # each worker re-runs it); every worker forked from it starts with them loaded. Only
        # honoured before the server starts.
        ctx.set_forkserver_preload(["__main__", *_preload(fn)])
        start_forkserver_ignoring_sigint()
    pool = ProcessPoolExecutor(max_workers=workers - 1 if here else workers, mp_context=ctx,
                               initializer=_worker_ignores_sigint)
    queued: list[tuple[Any, list[int]]] = []  # (future, batch), largest first: this process takes the last
    try:
        for n, batch in enumerate(groups):  # (largest first; each task costs both
            # processes ~0.6 ms of CPU, a third of what `--jobs 2` took beyond `--jobs 1` on small files)
            with frozen_heap(method == "fork" and n == 0):  # (the first submit forks every worker)
                fut = pool.submit(_many, [paths[i] for i in batch], fn, content_hash, agents, limits)
            queued.append((fut, batch))
            for k, i in enumerate(batch):
                futures[i] = (fut, k)
        with frozen_heap(here):
            for i in range(len(futures)):
                item = futures[i]
                while here and not isinstance(item, FileResult) and not item[0].done():
                    here = _take_one(queued, futures, paths, fn, content_hash, agents, limits)
                    item = futures[i]
                yield item if isinstance(item, FileResult) else item[0].result()[item[1]]
                futures[i] = None  # the parent keeps no future it has handed every result of
    except BaseException:  # Ctrl-C (or a failure): the workers are stopped now, not waited for
        stop_workers(pool)
        raise
    finally:  # a consumer that stops early cancels the files not yet started
        pool.shutdown(wait=True, cancel_futures=True)


def _forked(paths: list[str], groups: list[list[int]], warm: tuple[int, FileResult[Any]] | None, workers: int,
            args: tuple[Any, ...]) -> Iterator[FileResult[Any]]:
    """`_one` over `paths` in this process and `workers - 1` forked ones (`read.forks.ForkPool`: no
    process pool's imports, threads or pickled calls), yielded in file order; `warm`: a file done
    already (`_warm_up`). While the next result is not in, this process does the last batch no
    worker has been handed."""
    from sessiontools.read.forks import ForkPool

    def run(b: int) -> list[FileResult[Any]]:
        return _many([paths[i] for i in groups[b]], *args)

    where = {i: (b, k) for b, batch in enumerate(groups) for k, i in enumerate(batch)}
    left = [len(batch) for batch in groups]
    got: dict[int, list[FileResult[Any]]] = {}
    with frozen_heap(), ForkPool(workers - 1, len(groups), run) as pool:  # (forked with the heap frozen)
        for i in range(len(paths)):
            if warm is not None and i == warm[0]:
                yield warm[1]
                continue
            b, k = where[i]
            while b not in got:
                done = pool.ready(b, wait=False)
                if done is not None:
                    got[b] = done
                elif (t := pool.take()) is not None:
                    got[t] = run(t)
                else:
                    got[b] = pool.ready(b, wait=True)
            yield got[b][k]
            left[b] -= 1
            if not left[b]:
                del got[b]


def _take_one(queued: list[tuple[Any, list[int]]], futures: list[Any], paths: list[str], fn: Callable[[Any], T],
              content_hash: bool | str, agents: frozenset[Agent], limits: Limits) -> bool:
    """The last batch of `queued` that no worker has started, done in this process (its results put
    in `futures`); False when there is none left (the workers have started every batch still queued:
    a pool hands them out in order, so one the workers have is followed by none it has not)."""
    if not queued:
        return False
    fut, batch = queued.pop()
    if not fut.cancel():  # (a worker has it, or has done it)
        return False
    for i, res in zip(batch, _many([paths[i] for i in batch], fn, content_hash, agents, limits), strict=True):
        futures[i] = res
    return True


def _warm_up(paths: list[str], groups: list[list[int]], workers: int, fn: Callable[[Any], T],
             content_hash: bool | str, agents: frozenset[Agent], limits: Limits) -> tuple[int, FileResult[T]] | None:
    """The smallest file done here before the workers are forked (it leaves its batch): what every
    worker would otherwise import and build for its first file (the agent's reader and transcript
    modules, the price table, ...) is then done once and inherited. Each worker had done it itself:
    about 0.08 s of CPU per worker on the Codex bench corpus, most of what `--jobs 2` cost beyond `--jobs 1`
    (issue 28). None when there are no more files than workers (each file its own worker). Only for
    a function that reads selectively (`inspect`): it opens no cache and starts no thread that a
    forked worker would inherit."""
    if len(paths) <= workers or not groups or not groups[-1]:
        return None
    i = groups[-1].pop()  # (batches are largest first: the last file of the last one is the smallest)
    if not groups[-1]:
        groups.pop()
    with frozen_heap():
        return i, _one(paths[i], fn, content_hash, agents, limits)
