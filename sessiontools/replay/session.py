"""Replay one session file of any agent: its paths, the grid of settings, prices and the cache model;
JSON records.

`replay_source` returns typed `SessionReplay`s (`replay.replayed`) from the one walk
(`replay.transcripts`); `replay_records` their typed run records (`replay.run_document`: what `--jobs`
workers return; `replay.frames` makes DataFrames of them), `run_record` one run's JSON.
"""

from __future__ import annotations

from typing import Any

from sessiontools.errors import InputError, ModelNotInCatalogue, NothingToReplay
from sessiontools.policies.base import PolicyName
from sessiontools.policies.registry import VERSIONED_POLICY, make_policy
from sessiontools.replay.records import ReplayRun
from sessiontools.replay.run_document import DeferredRecord, MissingModel, NoReplay, RunRecord, record_of


def replay_source(session: Any, **options: Any) -> list[Any]:
    """One session file of any agent replayed by the one walk (`replay.transcripts.replay_transcript`):
    `SessionReplay`s. The transcript is built in the reading rules of the policy's version where the
    policy is one of the file's own agent's versioned rules (`VERSIONED_POLICY`: `pi-1` reads a Pi
    file as Pi 1.x reads it), else in the version the file's reader decided.

    `limits` (Codex's --auto-compact-limit values) and `claude` (Claude Code's options) only apply
    to the policies that have them (`Policy.grid_extras`)."""
    from sessiontools.read.parse import gc_paused
    from sessiontools.replay.transcripts import replay_transcript
    from sessiontools.transcript.load import transcript_of

    limits = options.pop("limits", None) or [None]
    claude = options.pop("claude", None)
    version = options.pop("cli_version", None)
    tokenizer = options.pop("truth_tokenizer", None)  # replay --truth-tokenizer: the truth model's counter
    if "token_store" in options:  # the CLI's token cache: the truth counters' counts across runs
        from sessiontools.tokens.registry import use_token_store

        use_token_store(options.pop("token_store"))
    policy = options.get("policy")
    if policy is not None and any(a.key == "reserve_tokens" for a in make_policy(policy).axes):
        bad = [(w, r) for w in options.get("windows") or [] for r in options.get("reserves") or [] if r >= w]
        if bad:
            raise InputError(f"{session.path}: reserveTokens {bad[0][1]:,} is not below the window {bad[0][0]:,}: "
                             "the threshold W - reserve would be zero or negative; give --reserve")
    rule = next((v for v, n in VERSIONED_POLICY.get(session.agent, {}).items() if policy is not None
                 and n == PolicyName(policy)), None)
    # The transcript and its replay in one pause of the cyclic collector (`read.parse.gc_paused`): the
    # transcript's objects are not walked by collections between the two (4 a Pi run) and again after.
    with gc_paused():
        t = transcript_of(session, leaf=options.get("leaf"), all_leaves=options.get("all_leaves", False),
                          rule_version=rule)
        return replay_transcript(t, windows=options.get("windows"), reserves=options["reserves"],
                                 keeps=options["keeps"], policy=policy, limits=limits,
                                 summary_tokens=options.get("summary_tokens"),
                                 all_leaves=options.get("all_leaves", False), claude=claude,
                                 priors=options.get("priors"), version=version,
                                 defer_prior_dominated=options.get("defer_prior_dominated", False),
                                 truth_tokenizer=tokenizer, models=options.get("models") or ())


def replay_records(session: Any, *, timeline: bool = False, defer_prior_dominated: bool = False,
                   **options: Any) -> list[RunRecord | DeferredRecord]:
    """One session file of any agent replayed (`replay_source`), as typed run records (picklable, for
    --jobs; `RunRecord.to_dict` is their JSON). `timeline`: the first run of each path also carries its
    `timeline` (`replay.run_document.timeline_of`), from the same run as its numbers (not a second replay).

    `defer_prior_dominated` (without `priors`): the cheap first pass of a run of many sessions. A
    session whose truth fit is prior-dominated is fitted, not replayed: one `DeferredRecord` stands
    for it, and `replay.priors.refit_with_priors` replays it once with the priors the others taught."""
    defer = defer_prior_dominated and options.get("priors") is None
    prs = replay_source(session, **options, defer_prior_dominated=defer) if defer else replay_source(session, **options)
    if defer and prs and not prs[0].runs:
        pr = prs[0]
        return [DeferredRecord(pr.source, pr.agent, pr.model_name, pr.truth.record())]
    return [record_of(pr, run, timeline=timeline and k == 0) for pr in prs for k, run in enumerate(pr.runs)]


def replay_or_left_out(source: Any, *, replay: Any, **options: Any) -> list[Any]:
    """`replay(source, **options)` (`replay_records`), or the one record a file left out gets: a
    `MissingModel` when its model has no window (`errors.ModelNotInCatalogue`), a `NoReplay` when it has
    no model request (`errors.NothingToReplay`) or no message at all (the replay returned nothing)."""
    path = str(getattr(source, "path", ""))
    try:
        out = replay(source, **options)
    except NothingToReplay as exc:
        return [NoReplay(path, str(exc))]
    except ModelNotInCatalogue as exc:
        return [MissingModel(path, exc.model)]
    if not out:  # a transcript with no message at all (a Claude Code file of progress and system lines)
        return [NoReplay(path, f"{path}: no message in the file: nothing to replay")]
    return out


def run_record(pr: Any, run: ReplayRun) -> dict[str, Any]:
    """One element of the replay JSON `runs` list, for any agent's replay (`SessionReplay`): the JSON
    of its `RunRecord` (`record_of`)."""
    return record_of(pr, run).to_dict()
