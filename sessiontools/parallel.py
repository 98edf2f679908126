"""Run a per-session function over many files, in order, optionally in several processes.

Results come back in the order of the files whatever `jobs` is, so output is identical for any
number of processes. Each worker reads its file itself (one session in memory per process), so
memory grows with the largest session, not with the corpus.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from sessiontools.errors import SessionToolsError, UsageError
from sessiontools.read import Diagnostic
from sessiontools.read.agents import Agent
from sessiontools.read.sources import load_source

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

#: Every agent sessiontools reads.
ALL_AGENTS = frozenset(Agent)


def _one(path: str, fn: Callable[[Any], T], content_hash: bool = False,
         agents: frozenset[Agent] = ALL_AGENTS) -> FileResult[T]:
    out: FileResult[T] = FileResult(path)
    try:
        s = load_source(path, content_hash=content_hash)
    except SessionToolsError as exc:
        out.error = str(exc)
        return out
    out.agent = s.agent
    out.diagnostics = list(s.diagnostics)
    out.readable = bool(getattr(s, "readable", True)) and not any(d.kind == "fatal" for d in s.diagnostics)
    if not out.readable:
        return out
    out.skipped_or_recovered = sum(1 for d in s.diagnostics if d.kind in ("skipped", "recovered"))
    if s.agent not in agents:
        out.unsupported = True
        return out
    try:
        out.value = fn(s)
    except UsageError:
        raise  # the command line asks for something impossible (e.g. an unknown --leaf): exit 2
    except SessionToolsError as exc:
        out.error = str(exc)
    finally:
        drain = getattr(fn, "drain_notes", None)
        if callable(drain):  # notes raised in a worker process travel back with the result
            out.notes = list(drain())
    return out


def _worker(args: tuple[str, Callable[[Any], Any], bool, frozenset[Agent]]) -> FileResult[Any]:
    return _one(*args)


#: Input bytes per worker process: below this, starting a worker (a forkserver child that imports
#: the package, about half a second) costs more than it saves. Small inputs run in this process.
BYTES_PER_WORKER = 32 * 1024 * 1024


def default_jobs(files: Sequence[str | Path] | None = None) -> int:
    """Worker processes for `files`: one per BYTES_PER_WORKER of input, at most one per core."""
    cores = os.cpu_count() or 1
    if files is None:
        return cores
    total = 0
    for f in files:
        try:
            total += os.stat(f).st_size
        except (OSError, ValueError):
            pass  # unreadable, or a URL (`s3://...`): not counted
    return max(1, min(cores, len(files), total // BYTES_PER_WORKER))


def map_sessions(
    files: Sequence[str | Path], fn: Callable[[Any], T], *, jobs: int = 1, content_hash: bool = False,
    agents: frozenset[Agent] = ALL_AGENTS, dask: Any = None, on_done: Callable[[], None] | None = None,
) -> Iterator[FileResult[T]]:
    """`fn(source)` for every file, yielded in file order; `fn` must be picklable when jobs > 1.

    Each file is read by its agent's reader (`read.sources.load_source`: a Pi `Session`, a Codex
    `Rollout`, ...); files of agents not in `agents` are not passed to `fn` (`unsupported`).
    `content_hash` makes each Pi session carry the hash of its bytes (for result caches).
    With `dask` (an `executors.DaskCluster`) the same per-file work runs as Dask tasks instead of
    processes; `on_done` is then called as each task finishes (for progress bars).
    """
    paths = [str(f) for f in files]
    if dask is not None:
        from sessiontools.executors import dask_map

        yield from dask_map(dask, _one, paths, (fn, content_hash, agents), on_done)
        return
    if jobs <= 1 or len(paths) <= 1:
        for p in paths:
            yield _one(p, fn, content_hash, agents)
        return
    # forkserver: workers start from a clean process, not a fork of this one (which may hold
    # threads: tokenizer pools, progress bars), where an inherited lock could deadlock them.
    ctx = multiprocessing.get_context("forkserver")
    # The forkserver imports the package once; each worker forked from it starts with it loaded
    # (otherwise every worker pays the imports again). Only honoured before the server starts.
    target = getattr(fn, "func", fn)
    ctx.set_forkserver_preload(sorted({__name__, getattr(target, "__module__", None) or __name__}))
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)), mp_context=ctx) as pool:
        yield from pool.map(_worker, [(p, fn, content_hash, agents) for p in paths], chunksize=1)
