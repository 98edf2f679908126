"""The report's one pass: the JSON documents of inspect, estimate-error and diff-summaries (as each
command's `--format json` prints them) and replay's typed run records (`replay.run_document.RunRecord`,
whose `to_dict` is `replay --format json`'s `runs[]`) from each file read once (`report_documents`).

`sessiontools report` builds its HTML from these only, so the report depends on the JSON schemas and
the run record (kept stable by tests/golden) and on nothing inside the analyses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rich.console import Console

from sessiontools.cli.inputs import Loaded, run_files, token_cache_path
from sessiontools.cli.priors import Replayed, choices_kept, refit_kept, replay_keeping
from sessiontools.errors import SessionToolsError, UsageError
from sessiontools.report.writers import envelope

Paths = Iterable[str | os.PathLike[str]] | None


def _replay_fn(windows: Sequence[int] | None, reserves: Sequence[int], keeps: Sequence[int],
               **policy_options: Any) -> Callable[..., Any]:
    """Every agent's files, each under its own policy (or `policy`, with its own axes: `limits`,
    `claude`, as `replay_records` takes them); the first run of each session carries its timeline
    (`replay.session.timeline_of`): the report's timeline and table come from the same run. As
    `replay` does, the truth counters count through the persistent token store and each path's
    counter choice is kept by the file's content (`cli.priors.choices_kept`)."""
    from sessiontools.read.values import cleaned_call
    from sessiontools.replay import replay_records

    options = {"policy": None, "token_store": str(token_cache_path()), **policy_options}
    # reported: in the cleaned view (`read.values.cleaned_for`)
    return partial(choices_kept, partial(cleaned_call, partial(
        replay_records, windows=windows, reserves=list(reserves), keeps=list(keeps), leaf=None, all_leaves=False,
        summary_tokens=None, timeline=True, **options)))


def _replay_section(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A file's first pass: prior-dominated sessions only fitted and their source kept (`cli.priors`),
    a file whose model has no window one marker record (`cli.windows.replay_or_miss`)."""
    from sessiontools.cli.windows import replay_or_miss

    return partial(replay_keeping, partial(replay_or_miss, replay=partial(fn, defer_prior_dominated=True)))


def _refit(err: Console, per_file: list[Any], fn: Callable[..., Any]) -> list[list[Any]]:
    from sessiontools.cli.progress import phase

    with phase(err, "fitting priors; replaying the sessions with few requests"):
        return refit_kept(per_file, fn)


def _replay_doc(per_file: list[list[Any]]) -> dict[str, Any]:
    """The replay document, its `runs` the typed records (`RunRecord`: the page reads them by attribute)."""
    return envelope("replay", runs=[r for recs in per_file for r in recs])


def _estimate_options() -> Any:
    from sessiontools.analysis.estimate import (
        DEFAULT_THRESHOLD_GRID,
        EstimateErrorOptions,
        parse_estimators,
        parse_threshold_grid,
    )

    return EstimateErrorOptions(estimators=parse_estimators(None), by="model",
                                thresholds=parse_threshold_grid(DEFAULT_THRESHOLD_GRID), leaf=None, all_leaves=False,
                                rule_version=None, calibration=None, calibration_x="o200k", fit=False)


def _estimate_doc(err: Console, per_session: list[Any], options: Any) -> dict[str, Any]:
    from sessiontools.analysis.estimate import summarize_requests
    from sessiontools.cli.progress import phase
    from sessiontools.report.estimate_json import estimate_error_json

    with phase(err, "fitting the estimators and the calibration"):
        report = summarize_requests(per_session, options)
    return envelope("estimate-error", **estimate_error_json(report))


def _drift_worker() -> Any:
    from sessiontools.analysis.drift import DriftWorker

    return DriftWorker(leaf=None, all_leaves=False, tokenizer="o200k")


def _drift_doc(per_file: list[Any]) -> dict[str, Any]:
    from sessiontools.analysis.drift import FUZZY_THRESHOLD, DriftReport, token_counter
    from sessiontools.report.drift_json import report_to_dict

    report = DriftReport(tuple(c for chains in per_file for c in chains), token_counter("o200k").name, FUZZY_THRESHOLD)
    return envelope("diff-summaries", **report_to_dict(report, None), gates=[])


# --------------------------------------------------------------------------- the report's one pass


@dataclass(slots=True)
class Sections:
    """One file's value for each section of the report, and the sections that failed on it."""

    inspect: Any = None
    replay: Replayed | None = None
    estimate: Any = None
    drift: Any = None
    errors: list[str] = field(default_factory=list)


def _section(out: Sections, path: str, call: Callable[[], Any]) -> Any:
    """`call()`; a user error (or, contained, a bug) leaves this section without the file and is said
    once, the other sections keep it (as when each section read the files on its own)."""
    from sessiontools.read import parallel

    try:
        return call()
    except UsageError:
        raise
    except SessionToolsError as exc:
        out.errors.append(str(exc))
    except Exception as exc:
        if not parallel.CONTAIN_ERRORS:
            raise
        out.errors.append(parallel.internal_error(path, exc))
    return None


class _SectionsJob:
    """A file's sections, estimate-error's token counting still running in the background."""

    def __init__(self, out: Sections, path: str, job: Any) -> None:
        self.out, self.path, self.job = out, path, job

    def ready(self) -> bool:
        return self.job is None or self.job.ready()

    def finish(self) -> Sections:
        if self.job is not None:
            self.out.estimate = _section(self.out, self.path, self.job.finish)
        return self.out


class SectionsWorker:
    """Every section's per-file function on the one source read (picklable, for `--jobs`): inspect,
    replay (for the agents replay reads), estimate-error and drift. The inspect section's failure is
    the file's (exit 3, as `inspect` would); another section's leaves only that section without it.
    `start` lets `parallel.map_sessions` count estimate-error's tokens while the next files are read."""

    def __init__(self, replay: Callable[..., Any], estimate: Any, drift: Any, replay_agents: frozenset[Any]) -> None:
        self.replay, self.estimate, self.drift, self.replay_agents = replay, estimate, drift, replay_agents

    def __call__(self, source: Any) -> Sections:
        return self.start(source).finish()

    def start(self, source: Any) -> _SectionsJob:
        from sessiontools.analysis.inspect import inspect_source

        path = str(getattr(source, "path", ""))
        out = Sections(inspect=inspect_source(source))
        if source.agent in self.replay_agents:
            out.replay = _section(out, path, lambda: _replay_section(self.replay)(source))
        out.drift = _section(out, path, lambda: self.drift(source))
        return _SectionsJob(out, path, _section(out, path, lambda: self.estimate.start(source)))

    def drain_notes(self) -> list[str]:
        return [n for w in (self.estimate, self.drift) if callable(getattr(w, "drain_notes", None)) for n in w.drain_notes()]


def report_documents(paths: Paths, err: Console, jobs: int | None = None, *, windows: Sequence[int] | None = None,
                     reserves: Sequence[int] = (16384,), keeps: Sequence[int] = (20000,), **policy_options: Any
                     ) -> tuple[dict[str, dict[str, Any]], list[str], Loaded]:
    """The inspect, replay, estimate-error and diff-summaries documents from one read of each file:
    ({"inspect": ..., "replay": ..., "estimate-error": ..., "diff-summaries": ...}, the errors of the
    sections that lack a file (in file order, each once), the `Loaded` summary). `policy_options`:
    the replay's `policy` and its own axes (`_replay_fn`)."""
    from sessiontools.analysis.estimate import SessionWorker
    from sessiontools.cli.progress import phase
    from sessiontools.replay.registry import replay_agents

    replay, options = _replay_fn(windows, reserves, keeps, **policy_options), _estimate_options()
    worker = SectionsWorker(replay, SessionWorker(options, str(token_cache_path())), _drift_worker(),
                            replay_agents(policy_options.get("policy")))
    per_file, loaded = run_files(paths, err, worker, jobs, "reading the files (every section)", content_hash=True)
    from sessiontools.cli.windows import left_out_empty, miss_lines, split_misses
    from sessiontools.replay.catalog import catalogue

    replayed, misses = split_misses(left_out_empty(err, [f.replay for f in per_file if f.replay is not None]))
    docs = {
        "inspect": envelope("inspect", sessions=[f.inspect for f in per_file]),
        "replay": _replay_doc(_refit(err, replayed, replay)),
        "estimate-error": _estimate_doc(err, [f.estimate for f in per_file if f.estimate is not None], options),
    }
    with phase(err, "pairing the summaries"):
        docs["diff-summaries"] = _drift_doc([f.drift for f in per_file if f.drift is not None])
    # A model with no known window: one line for its files (`miss_lines` says "error: ..." itself).
    missing = [line.removeprefix("error: ") for line in
               miss_lines(misses, [(m["provider"], m["id"]) for m in catalogue()["models"]])]
    return docs, [*missing, *dict.fromkeys(e for f in per_file for e in f.errors)], loaded
