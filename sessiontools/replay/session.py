"""Replay one session file of any agent: its paths, the grid of settings, prices and the cache model;
JSON records.

`replay_source` returns typed `SessionReplay`s (`replay.replayed`) from the one walk
(`replay.transcripts`); `run_record` turns one run into the JSON contract's `runs[]` element (what
`--jobs` workers return; `replay.frames` makes DataFrames of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import PolicyName
from sessiontools.policies.registry import VERSIONED_POLICY, make_policy
from sessiontools.replay.metrics import run_metrics
from sessiontools.replay.records import ReplayRun, TruthSource


def replay_source(session: Any, **options: Any) -> list[Any]:
    """One session file of any agent replayed by the one walk (`replay.transcripts.replay_transcript`):
    `SessionReplay`s. The transcript is built in the reading rules of the policy's version where the
    policy is one of the file's own agent's versioned rules (`VERSIONED_POLICY`: `pi-1` reads a Pi
    file as Pi 1.x reads it), else in the version the file's reader decided.

    `limits` (Codex's --auto-compact-limit values) and `claude` (Claude Code's options) only apply
    to the policies that have them (`Policy.grid_extras`)."""
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
    t = transcript_of(session, leaf=options.get("leaf"), all_leaves=options.get("all_leaves", False),
                      rule_version=rule)
    return replay_transcript(t, windows=options.get("windows"), reserves=options["reserves"], keeps=options["keeps"],
                             policy=policy, limits=limits, summary_tokens=options.get("summary_tokens"),
                             all_leaves=options.get("all_leaves", False), claude=claude,
                             priors=options.get("priors"), version=version,
                             defer_prior_dominated=options.get("defer_prior_dominated", False),
                             truth_tokenizer=tokenizer, models=options.get("models") or ())


def replay_records(session: Any, *, timeline: bool = False, defer_prior_dominated: bool = False,
                   **options: Any) -> list[dict[str, Any]]:
    """One session file of any agent replayed (`replay_source`), as JSON-ready run records (picklable,
    for --jobs). `timeline`: the first run of each path also carries its `timeline` (`timeline_of`),
    from the same run as its numbers (not a second replay).

    `defer_prior_dominated` (without `priors`): the cheap first pass of a run of many sessions. A
    session whose truth fit is prior-dominated is fitted, not replayed: one `deferred_record` stands
    for it, and `replay.priors.refit_with_priors` replays it once with the priors the others taught."""
    defer = defer_prior_dominated and options.get("priors") is None
    prs = replay_source(session, **options, defer_prior_dominated=defer) if defer else replay_source(session, **options)
    if defer and prs and not prs[0].runs:
        return [deferred_record(prs[0])]
    out = []
    for pr in prs:
        for k, run in enumerate(pr.runs):
            rec = run_record(pr, run)
            if timeline and k == 0:
                rec["timeline"] = timeline_of(pr, run)
            out.append(rec)
    return out


def deferred_record(pr: Any) -> dict[str, Any]:
    """What the first pass knows of a prior-dominated session: its fit, to learn nothing from and to be
    replayed with the learnt priors (`replay.priors.refit_with_priors`)."""
    return {"session": pr.source, "agent": pr.agent, "model": pr.model_name, "truth_model": pr.truth_dict(),
            "deferred": True}


def timeline_of(pr: Any, run: ReplayRun) -> dict[str, Any]:
    """The request-by-request context of one run, JSON-ready (the data of `replay --plot` for one
    setting and of the report's timelines): truth per request, the policy's own count at every check
    point (one per `check_points`), its compactions, the recorded ones (one per compaction the file
    records), threshold and window."""
    return {
        "session": pr.source,
        "threshold": run.settings.threshold,
        "window": run.settings.context_window,
        "truth": [[p.base_index, p.truth] for p in run.requests],
        "policy_count": [[c.at, c.count] for c in run.check_counts],
        "check_truth": [[c.at, c.truth] for c in run.check_counts],
        "checks_outside": [[k, why] for k, why in enumerate(_outside(run.check_counts)) if why is not None],
        "compactions": [[c.parent_base_index, c.reason.value] for c in run.compactions],
        "recorded": [list(x) for x in pr.recorded_points(run)],
    }


def _outside(checks: Sequence[Any]) -> list[str | None]:
    """Why each check point is no request's (`CheckAt.outside`)."""
    return [c.outside(checks[k - 1] if k else None) for k, c in enumerate(checks)]


def run_record(pr: Any, run: ReplayRun) -> dict[str, Any]:
    """One element of the replay JSON `runs` list, for any agent's replay (`SessionReplay`)."""
    cost = pr.cost_of(run)
    compactions = [c.to_dict() for c in run.compactions]
    for c, bust in zip(compactions, cost.cache_bust_costs, strict=True):
        c["cache_bust_cost"] = None if bust is None else round(bust, 6)
    recorded_cost = sum(pr.recorded_costs.values()) if pr.recorded_costs else None
    return {
        "session": pr.source,
        "agent": pr.agent,
        "leaf_id": pr.leaf_id,
        "model": pr.model_name,
        "settings": run.settings.to_dict(),
        "compactions": compactions,
        "metrics": run_metrics(run, cost),
        "recorded_match": run.recorded_match.to_dict(),
        "truth_model": pr.truth_dict(),
        "cache_model": pr.cache.to_dict(),
        "prices": {"source": pr.price.source, "per_million": None if pr.price.per_token is None else
                   {k: round(v * 1e6, 6) for k, v in pr.price.per_token.items()}},
        "recorded_cost_agent": None if recorded_cost is None else round(recorded_cost, 6),
        "requests_from_recorded_usage": sum(1 for r in run.requests if r.truth_source == TruthSource.RECORDED),
        "requests_from_model": sum(1 for r in run.requests if r.truth_source == TruthSource.MODEL),
        "requests_from_provider_error": sum(1 for r in run.requests if r.truth_source == TruthSource.PROVIDER),
        "unmetered_replies": pr.unmetered,
        "no_compaction": run.no_compaction,
        "failed_compactions": [c.to_dict() for c in run.failed_compactions],
        "provider_limits": sorted(set(run.provider_limits)),
    }
