"""The prior refit without a second read: a prior-dominated session's source is kept with its run
records, so that `replay.priors.refit_with_priors` replays it again from memory.

A session with too few requests to fit its own truth model is replayed again once the priors of
the other sessions are pooled (`replay.priors`). That used to read its file again; `replay` and
`report` now keep its source (it is small: few requests) and read again only a file larger than
KEEP_SOURCE_BYTES, or one that is not local.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

#: The largest file whose source is kept for the refit (a larger one is read again).
KEEP_SOURCE_BYTES = 8 * 1024 * 1024


class Replayed(list):  # type: ignore[type-arg]
    """A file's run records (a list, as every caller takes them), with `source` when the session
    will be replayed again under a learnt prior. Picklable, for `--jobs` workers."""

    def __init__(self, records: Sequence[Any] = (), source: Any = None) -> None:
        super().__init__(records)
        self.source = source


def kept(records: Sequence[Any], source: Any) -> Replayed:
    """`records` with `source` kept for a replay from memory, when its file is at most KEEP_SOURCE_BYTES."""
    return Replayed(records, source if _file_bytes(getattr(source, "path", "")) <= KEEP_SOURCE_BYTES else None)


def replay_keeping(replay: Callable[..., list[Any]], source: Any, **options: Any) -> Replayed:
    """`replay(source, **options)`, keeping `source` (`kept`) when its first record's truth fit was
    prior-dominated."""
    records = replay(source, **options)
    first = records[0] if records else None  # (a file with no message gives no record)
    tm = getattr(first, "truth_model", None)  # (a file left out, `MissingModel` / `NoReplay`, has none)
    return kept(records, source) if tm is not None and tm.prior_dominated else Replayed(records)


def _file_bytes(path: object) -> float:
    try:
        return os.stat(os.fspath(path)).st_size  # type: ignore[arg-type]
    except (OSError, TypeError, ValueError):
        return float("inf")  # a URL, or gone: not kept


def refit_kept(per_file: Sequence[list[Any]], replay: Callable[..., list[Any]]
               ) -> list[list[Any]]:
    """`replay.priors.refit_with_priors`: a kept source (`Replayed.source`) is replayed again as it
    is, any other file is read again; `replay(source, priors=table)`."""
    from sessiontools.read.sources import load_source
    from sessiontools.replay.priors import refit_with_priors

    kept = {recs[0].session: src for recs in per_file
            if recs and (src := getattr(recs, "source", None)) is not None}

    def again(session: str, table: Any) -> list[Any]:
        source = kept.pop(session, None)
        return replay(load_source(session) if source is None else source, priors=table)

    return refit_with_priors(list(per_file), again)


def choices_kept(replay: Any, source: Any, /, **options: Any) -> Any:
    """`replay(source, **options)` keeping each path's truth counter choice by the file's content
    (`replay.counter_choice.cached_choices`: its sha256 and the package's code fingerprint), so that a
    warm run does not compare the counters again (picklable as a partial, for --jobs workers). A
    source without a content hash (not read by `run_files(..., content_hash=True)`) is replayed as is.
    One home for `replay`, `report` and their prior refits."""
    from sessiontools.replay.counter_choice import cached_choices
    from sessiontools.tokens.fingerprint import code_fingerprint

    digest = getattr(source, "content_hash", "")
    with cached_choices(f"{code_fingerprint()}:{digest}" if digest else None):
        return replay(source, **options)
