"""Replay one session: its paths, the grid of settings, prices and the cache model; JSON records.

`replay_session` returns typed `SessionReplay`s (`replay.replayed`); `run_record` turns one run into the JSON contract's
`runs[]` element (what `--jobs` workers return; `replay.frames` makes DataFrames of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import PolicyName
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.policies.registry import VERSIONED_POLICY, make_policy
from sessiontools.read.parse import gc_paused
from sessiontools.read.pi.entries import Session
from sessiontools.read.values import number
from sessiontools.replay.catalog import ModelInfo, load_model_files, lookup
from sessiontools.replay.cost import Classes
from sessiontools.replay.metrics import run_metrics
from sessiontools.replay.priors import PriorTable
from sessiontools.replay.records import ReplayRun, ReplaySettings, TruthSource
from sessiontools.replay.replayed import RecordedReply, SessionReplay, deferred, session_replay
from sessiontools.replay.simulate import simulate
from sessiontools.replay.truth import fit_truth
from sessiontools.transcript.pi.tree import SessionTree
from sessiontools.transcript.pi.workload import Workload, build_workload


def _n(v: Any) -> float:
    return float(number(v))


def _usage_classes(usage: Mapping[str, Any]) -> Classes:
    g = usage.get
    return Classes(_n(g("input")), _n(g("cacheRead")), _n(g("cacheWrite")), _n(g("output")))


def _is_mapping(v: Any) -> bool:
    return type(v) is dict or isinstance(v, Mapping)


def _recorded_replies(wl: Workload) -> list[RecordedReply]:
    """Each answered request's recorded usage (a rejected attempt's is not one), by base index."""
    out = []
    base = wl.base
    number = int | float
    for r in wl.requests:
        e = base[r.base_index]
        usage = (e.message or {}).get("usage")
        if not (type(usage) is dict or _is_mapping(usage)) or r.failed_overflow:
            continue
        cost = usage.get("cost")
        total = float(cost["total"]) if cost is not None and _is_mapping(cost) and isinstance(cost.get("total"), number) \
            else None
        ts = e.data.get("timestamp")
        out.append(RecordedReply(r.base_index, _usage_classes(usage), total, ts if isinstance(ts, str) else None,
                                 r.recorded_prompt is not None))
    return out


def _recorded_breaks(wl: Workload) -> list[int]:
    """Where the recorded prefix broke: each recorded compaction's parent, each context edit."""
    return sorted({rc.parent_base_index for rc in wl.recorded_compactions}
                  | {j for j, e in enumerate(wl.base) if e.type == "context_edit"})


def _price_pairs(wl: Workload) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    pairs = []
    for r in wl.requests:
        msg = wl.base[r.base_index].message or {}
        u = msg.get("usage")
        if isinstance(u, Mapping) and isinstance(u.get("cost"), Mapping):
            pairs.append((u, u["cost"]))
    return pairs


def _model_of(wls: Sequence[Workload]) -> tuple[str | None, str | None]:
    for wl in wls:
        if wl.model:
            return wl.provider, wl.model
    return None, None


def window_changes(wl: Workload, extra: Sequence[ModelInfo]) -> tuple[tuple[int, int], ...]:
    """(base index, window) where the requests' model changes to one with another window; empty when
    every request's model has the same window (or a model is unknown: then the session's holds)."""
    out: list[tuple[int, int]] = []
    seen: dict[tuple[str | None, str | None], int | None] = {}
    for r in wl.requests:
        if r.model is None or r.failed_overflow:
            continue
        key = (r.provider, r.model)
        if key not in seen:
            info = lookup(r.provider, r.model, extra)
            seen[key] = info.context_window if info else None
        w = seen[key]
        if w is None:
            return ()
        if not out or out[-1][1] != w:
            out.append((r.base_index, w))
    return tuple(out) if len(out) > 1 else ()


def pi_settings(window: int, reserve: int, keep: int, policy: str,
                changes: tuple[tuple[int, int], ...] = ()) -> ReplaySettings:
    """A setting of Pi's exact walk, its threshold W - reserve recorded as the transcript walk's settings
    record theirs (`replay.walk.replay_settings`); with window changes (the session switched to a model
    with another window) no one threshold holds: each request's is its model's (`threshold_at`)."""
    return ReplaySettings(window, reserve, keep, policy, changes, policy_threshold=None if changes else window - reserve)


def replay_session(
    session: Session,
    *,
    windows: Sequence[int] | None,
    reserves: Sequence[int],
    keeps: Sequence[int],
    policy: str | None,
    leaf: str | None = None,
    all_leaves: bool = False,
    summary_tokens: int | None = None,
    models: Sequence[str] = (),
    priors: PriorTable | None = None,
    defer_prior_dominated: bool = False,
    truth_tokenizer: str | None = None,
) -> list[SessionReplay]:
    """Replay every requested path of a session over the settings grid (window x reserve x keep).

    `models`: files in Pi's models.json format (custom providers), later ones winning. A path with no
    real request of its own (a leaf that ends before any reply) takes the session's model. `priors`:
    truth-fit priors learnt from the run's other sessions (`replay.priors`), by the path's model.
    `defer_prior_dominated`: when the first path's fit is prior-dominated, fit only (every path's
    `runs` empty): the run replays it once, later, with the priors learnt from the others."""
    if not session.entries:
        raise InputError(f"{session.path}: no entries after the header: nothing to replay")
    # The replay builds tens of thousands of small acyclic objects per session (requests, points,
    # runs) that die by reference counting; with the collector running, their allocations trigger
    # collections that traverse the session's parsed objects again and again (a full collection of
    # a 3.6 MB session costs ~17 ms, a sixth of a 25-setting grid) without ever freeing anything.
    with gc_paused():
        return _replay_session(session, windows=windows, reserves=reserves, keeps=keeps, policy=policy, leaf=leaf,
                               all_leaves=all_leaves, summary_tokens=summary_tokens, models=models, priors=priors,
                               defer=defer_prior_dominated, tokenizer=truth_tokenizer)


def _replay_session(
    session: Session, *, windows: Sequence[int] | None, reserves: Sequence[int], keeps: Sequence[int],
    policy: str | None, leaf: str | None, all_leaves: bool, summary_tokens: int | None, models: Sequence[str],
    priors: PriorTable | None, defer: bool = False, tokenizer: str | None = None,
) -> list[SessionReplay]:
    extra = load_model_files(models)
    tree = SessionTree(session)
    paths = tree.all_paths() if all_leaves else [tree.path(leaf)]
    # The file's own rule by the version its reader decided (the registry's, as for every agent).
    pol = policy or VERSIONED_POLICY[session.agent][session.pi_version]
    version = pi_policy(pol).version
    wls = [build_workload(p.entries, version) for p in paths]
    fallback = _model_of(wls)
    if fallback == (None, None) and not windows:
        raise InputError(f"{session.path}: no model reply in the file (only prompts, or pseudo-replies), so no "
                         "model to take a window from; give one with --context-window N")
    out = []
    for p, wl in zip(paths, wls, strict=True):
        provider, model = (wl.provider, wl.model) if wl.model else fallback
        info = lookup(provider, model, extra)
        if windows:
            ws = list(windows)
        elif info is None:
            raise InputError(f"{session.path}: model {provider}/{model} is not in the catalogue (bundled, Pi's "
                             "models.json or --models); give its context window with --context-window N")
        else:
            ws = [info.context_window]
        changes = () if windows else window_changes(wl, extra)
        prior = priors.lookup(f"{wl.provider}/{wl.model}") if priors is not None else None
        truth = fit_truth(wl, summary_tokens=summary_tokens, prior=prior, tokenizer=tokenizer)
        runs = [] if deferred(defer, truth, out) else [simulate(wl, truth, pi_settings(w, r, k, pol, changes))
                                     for w in ws for r in reserves for k in keeps]
        out.append(session_replay(
            source=session.path, agent=session.agent.value, leaf_id=p.leaf_id, model_name=f"{wl.provider}/{wl.model}", truth=truth,
            model=info, runs=runs, replies=_recorded_replies(wl), breaks=_recorded_breaks(wl),
            price_pairs=_price_pairs(wl), recorded_after=[rc.parent_base_index for rc in wl.recorded_compactions],
            recorded_after_overflow=True, path=p, origin=session, workload=wl))
    return out


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
    setting and of the report's timelines): truth per request, the policy's own count at check points,
    its compactions, the recorded ones, threshold and window."""
    return {
        "session": pr.source,
        "threshold": run.settings.threshold,
        "window": run.settings.context_window,
        "truth": [[p.base_index, p.truth] for p in run.requests],
        "policy_count": [[p.base_index, p.policy_count] for p in run.requests if p.policy_count is not None],
        "compactions": [[c.parent_base_index, c.reason.value] for c in run.compactions],
        "recorded": [list(x) for x in pr.recorded_points(run)],
    }


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
        "no_compaction": run.no_compaction,
        "failed_compactions": [c.to_dict() for c in run.failed_compactions],
        "provider_limits": sorted(set(run.provider_limits)),
    }
