"""Replay any agent's transcript under any registered policy (`replay.registry`) with the transcript
walk (`replay.walk`): typed `SessionReplay`s (`replay.replayed`), each run a `ReplayRun` priced with the session's own
cache model and prices, as Pi's exact replay is (`replay.session`); `run_record` gives both the one
JSON record of the replay contract.

Used for Codex rollouts (default policy `codex`), Claude Code transcripts, Pi's policies over other
agents' transcripts and Codex's or Claude Code's rule over Pi sessions ("what would Codex's rule have
done to this session").

Default window: the configured window as the policy reads the file (`Policy.recorded_window`: Codex
rollouts record 95% of it); otherwise the window a request recorded, else the bundled catalogue's for the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.errors import InputError, NothingToReplay
from sessiontools.policies.base import Policy, PolicyName
from sessiontools.policies.registry import DEFAULT_POLICY, cli_version, make_policy, own_policy
from sessiontools.replay.catalog import lookup
from sessiontools.replay.cost import Classes
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.path_grid import PathGrid
from sessiontools.replay.priors import PriorTable
from sessiontools.replay.records import ReplaySettings
from sessiontools.replay.replayed import RecordedReply, SessionReplay, deferred, session_replay
from sessiontools.replay.walk import replay_settings, simulate_path
from sessiontools.transcript.model import Transcript, TranscriptPath, Usage


def default_window(t: Transcript, path: TranscriptPath, policy: Policy | None = None) -> int:
    """The configured context window of the session (see the module docstring): as the file's own
    agent's policy reads the file's settings (`Policy.recorded_window`), else the window a request recorded, else the window
    the policy's CLI assumed for the model (Claude Code: 200k, 1M for `[1m]`), else the catalogue's."""
    # A fact about the file, whichever rule replays it: read by the file's own agent's policy.
    own = DEFAULT_POLICY.get(t.agent)
    configured = make_policy(policy_for(t, None)).recorded_window(t.settings) if own is not None else None
    if configured:
        return configured
    recorded = [r.context_window for r in path.requests if r.context_window]
    if recorded:
        return recorded[-1]
    assumed = policy.default_window() if policy is not None else None
    if assumed:
        return assumed
    _require_requests(t, path)
    req = next((r for r in reversed(path.requests) if r.model), None)
    info = lookup(req.provider, req.model) if req else None
    if info is None:
        what = f"model {req.provider}/{req.model} is not in the bundled catalogue" if req else "no request records a model"
        raise InputError(f"{t.source}: {what}; give the context window with --context-window N")
    return info.context_window


def _require_requests(t: Transcript, path: TranscriptPath) -> None:
    """A path without a model request is nothing to replay at every setting (whatever window or policy
    is given), not a run of 0 requests."""
    if not path.requests:
        n = len(path.messages)
        raise NothingToReplay(f"{t.source}: no model request in the file ({n} message(s), no response): nothing to replay")


def policy_for(t: Transcript, policy: str | None) -> PolicyName:
    if policy is not None:
        return PolicyName(policy)
    default = DEFAULT_POLICY.get(t.agent)
    if default is None:
        raise InputError(f"{t.source}: no default policy for {t.agent.value} transcripts; choose one with --policy")
    return default(t) if callable(default) else default


def _grid(policy: Policy, windows: Sequence[int], reserves: Sequence[int], keeps: Sequence[int],
          limits: Sequence[int | None], claude: dict[str, Any]) -> list[ReplaySettings]:
    """The grid of `policy` over its own axes (`Policy.axes`: reserve and keep only where the policy
    has them), each setting with the policy's own threshold."""
    pi_axes = any(a.key == "reserve_tokens" for a in policy.axes)
    extras = policy.grid_extras(limits=limits, **claude)
    return [replay_settings(policy, w, r, k, extra) for w in windows for extra in extras
            for r in (reserves if pi_axes else (0,)) for k in (keeps if pi_axes else (0,))]


def _recorded(path: TranscriptPath) -> list[tuple[int, Usage, str | None, bool]]:
    """(message index, recorded usage, timestamp, is a request) of each call that recorded a usage, in
    path order: the requests, and the calls without a usage the agent trusts (`UnusableReply`: what
    they cost is recorded all the same)."""
    calls = [(r.index, r.usage, r.timestamp, True) for r in path.requests]
    calls += [(u.index, u.usage, u.timestamp, False) for u in path.unusable if u.usage is not None]
    return sorted(calls, key=lambda c: c[0]) if path.unusable else calls


def _recorded_replies(path: TranscriptPath) -> list[RecordedReply]:
    """Each call's recorded usage, by message index (the cache model learns from the requests only)."""
    return [RecordedReply(i, Classes(float(u.input), float(u.cache_read), float(u.cache_write), float(u.output)),
                          None if u.cost is None else float(u.cost.total), ts, learn)
            for i, u, ts, learn in _recorded(path)]


def _price_pairs(path: TranscriptPath) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [({"input": u.input, "output": u.output, "cacheRead": u.cache_read, "cacheWrite": u.cache_write},
             {"input": u.cost.input, "output": u.cost.output, "cacheRead": u.cost.cache_read,
              "cacheWrite": u.cost.cache_write})
            for _, u, _, _ in _recorded(path) if u.cost is not None]


def _recorded_after(path: TranscriptPath) -> list[int]:
    """The last message before each recorded compaction (its summary messages aside)."""
    from sessiontools.transcript.model import Role

    msgs = path.messages
    return [max((m.index for m in msgs[:c.index] if m.role != Role.SUMMARY), default=-1) for c in path.compactions]


def replay_transcript(
    t: Transcript,
    *,
    windows: Sequence[int] | None,
    reserves: Sequence[int],
    keeps: Sequence[int],
    policy: str | None,
    limits: Sequence[int | None] = (None,),
    summary_tokens: int | None = None,
    all_leaves: bool = False,
    claude: dict[str, Any] | None = None,
    priors: PriorTable | None = None,
    version: str | None = None,
    defer_prior_dominated: bool = False,
    truth_tokenizer: str | None = None,
) -> list[SessionReplay]:
    """Every (path x setting) of one transcript, replayed (`claude`: Claude Code's `autocompact_pcts`
    and `max_output_tokens`; `priors`: truth-fit priors learnt from the run's other sessions,
    `replay.priors`; `version`: --cli-version, the CLI version whose rule applies instead of the one
    the file records; `defer_prior_dominated`: as `replay.session.replay_session`'s). A Pi transcript under a Pi policy is the exact port's (`replay_source`), never
    this walk's."""
    from sessiontools.replay.registry import has_exact_port

    if has_exact_port(t.agent, policy):
        raise ValueError(f"{t.source}: {t.agent.value} under {policy or 'its own policy'} is replayed by the exact "
                         "port (replay.session.replay_source), not the transcript walk")
    return walk_transcript(t, windows=windows, reserves=reserves, keeps=keeps, policy=policy, limits=limits,
                           summary_tokens=summary_tokens, all_leaves=all_leaves, claude=claude, priors=priors,
                           version=version, defer_prior_dominated=defer_prior_dominated,
                           truth_tokenizer=truth_tokenizer)


def walk_transcript(
    t: Transcript, *, windows: Sequence[int] | None, reserves: Sequence[int], keeps: Sequence[int],
    policy: str | None, limits: Sequence[int | None] = (None,), summary_tokens: int | None = None,
    all_leaves: bool = False, claude: dict[str, Any] | None = None, priors: PriorTable | None = None,
    version: str | None = None, defer_prior_dominated: bool = False, truth_tokenizer: str | None = None,
    keep_path: bool = False,
) -> list[SessionReplay]:
    """`replay_transcript` for any pair, a Pi transcript under a Pi policy included (`lab.walk_parity`
    compares it there with the exact walk, run by run). `keep_path`: each run keeps the policy's
    simulated path of the agent's own records (`simulate_path`'s, for `resummarize`)."""
    name = policy_for(t, policy)
    v = cli_version(name, t, version)
    paths = [p for p in t.paths if not p.sidechain] if all_leaves else t.paths[:1]
    out = []
    for path in paths:
        _require_requests(t, path)
        pol = make_policy(name, v, _model_id(path))
        ws = list(windows) if windows else [default_window(t, path, pol)]
        prior = priors.lookup(_model(path)) if priors is not None else None
        own = own_policy(t, path)
        truth = fit_neutral_truth(path, summary_tokens, prior, own, tokenizer=truth_tokenizer)
        runs = [] if deferred(defer_prior_dominated, truth, out) else _runs(
            path, pol, truth, _grid(pol, ws, reserves, keeps, limits or (None,), claude or {}), keep_path)
        req = next((r for r in reversed(path.requests) if r.model), None)
        info = lookup(req.provider, req.model) if req else None
        out.append(session_replay(
            source=t.source, agent=t.agent.value, leaf_id=path.leaf_id, model_name=_model(path), truth=truth,
            model=info, runs=runs, replies=_recorded_replies(path), breaks=sorted(c.index for c in path.compactions),
            price_pairs=_price_pairs(path), recorded_after=_recorded_after(path),
            recorded_after_overflow=own.recorded_compaction_after_rejection,
            path=path, origin=t, unmetered=len(path.unmetered)))
    return out


def _runs(path: TranscriptPath, policy: Policy, truth: Any, settings: Sequence[ReplaySettings],
          keep_path: bool = False) -> list[Any]:
    """Each setting's run of `path`, the walks sharing what no setting changes (`PathGrid`)."""
    grid = PathGrid(path, policy, truth, settings)
    return [simulate_path(path, policy, s, truth, grid=grid, keep_path=keep_path) for s in settings]


def _model_id(path: TranscriptPath) -> str | None:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return req.model if req else None


def _model(path: TranscriptPath) -> str:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return f"{req.provider}/{req.model}" if req else "unknown/unknown"
