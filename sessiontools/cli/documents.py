"""One thin function per command that returns the JSON document `--format json` prints.

`sessiontools report` builds its HTML from these dicts only, so the report depends on the JSON
schemas (kept stable by tests/golden) and on nothing inside the analyses. Each function reads the
files, reports problems on `err`, and returns `(document, loaded)`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from rich.console import Console

from sessiontools.cli.common import Loaded, run_files, token_cache_path
from sessiontools.report.writers import envelope

Paths = Iterable[str | os.PathLike[str]] | None


def inspect_document(paths: Paths, err: Console, jobs: int | None = None) -> tuple[dict[str, Any], Loaded]:
    from sessiontools.analysis.inspect import inspect_source

    reports, loaded = run_files(paths, err, partial(inspect_source), jobs, "inspecting")
    return envelope("inspect", sessions=reports), loaded


def replay_document(paths: Paths, err: Console, jobs: int | None = None, *, windows: Sequence[int] | None = None,
                    reserves: Sequence[int] = (16384,), keeps: Sequence[int] = (20000,)) -> tuple[dict[str, Any], Loaded]:
    from sessiontools.read.sources import load_source
    from sessiontools.read.values import cleaned_call
    from sessiontools.replay import replay_records
    from sessiontools.replay.priors import refit_with_priors
    from sessiontools.replay.registry import replay_agents

    # Every agent's files, each under its own policy; the first run of each session carries its timeline
    # (`replay.session.timeline_of`): the report's timeline and table come from the same run.
    fn = partial(cleaned_call, partial(replay_records, windows=windows, reserves=list(reserves), keeps=list(keeps),
                                       policy=None, leaf=None, all_leaves=False, summary_tokens=None, timeline=True))
    per_file, loaded = run_files(paths, err, fn, jobs, "replaying", agents=replay_agents(None))
    per_file = refit_with_priors(per_file, lambda s, table: fn(load_source(s), priors=table))  # as `replay` does
    return envelope("replay", runs=[r for recs in per_file for r in recs]), loaded


def estimate_error_document(paths: Paths, err: Console, jobs: int | None = None) -> tuple[dict[str, Any], Loaded]:
    from sessiontools.analysis.estimate_error import (
        DEFAULT_THRESHOLD_GRID,
        EstimateErrorOptions,
        SessionWorker,
        parse_estimators,
        parse_threshold_grid,
        summarize_requests,
    )

    options = EstimateErrorOptions(estimators=parse_estimators(None), by="model",
                                   thresholds=parse_threshold_grid(DEFAULT_THRESHOLD_GRID), leaf=None, all_leaves=False,
                                   pi_version=None, calibration=None, calibration_x="o200k", fit=False)
    store = str(token_cache_path())
    per_session, loaded = run_files(paths, err, SessionWorker(options, store), jobs, "estimating", content_hash=True)
    report = summarize_requests(per_session, options)
    from sessiontools.report.estimate_error import estimate_error_json

    return envelope("estimate-error", **estimate_error_json(report)), loaded


def drift_document(paths: Paths, err: Console, jobs: int | None = None) -> tuple[dict[str, Any], Loaded]:
    from sessiontools.analysis.drift import FUZZY_THRESHOLD, DriftReport, DriftWorker, token_counter
    from sessiontools.report.drift_json import report_to_dict

    counter = token_counter("o200k")
    per_file, loaded = run_files(paths, err, DriftWorker(leaf=None, all_leaves=False, tokenizer="o200k"), jobs,
                                 "analysing")
    report = DriftReport(tuple(c for chains in per_file for c in chains), counter.name, FUZZY_THRESHOLD)
    return envelope("diff-summaries", **report_to_dict(report, None), gates=[]), loaded
