"""Replay any agent's transcript under any registered policy (`replay.registry`) with the one walk
(`replay.walk`): typed `SessionReplay`s (`replay.replayed`), each run a `ReplayRun` priced with the
session's own cache model and prices; `replay.session.run_record` gives the one JSON record of the
replay contract.

Every replay goes through here (`replay.session.replay_source`): Pi sessions under Pi's policies (on a
Pi transcript, Pi's `prepareCompaction` is the policy's compactor, `policies.pi.compactor`; session 10
deleted Pi's second, exact walk, whose answers `tests/replay/test_walk_reference.py` keeps), Codex
rollouts, Claude Code transcripts, and any policy over another agent's transcript.

Default window: the configured window as the policy reads the file (`Policy.recorded_window`: Codex
rollouts record 95% of it); otherwise the window a request recorded, else the catalogue's for the
model (bundled, Pi's models.json files, --models), each model's from its first request.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from sessiontools.errors import InputError, ModelNotInCatalogue, NothingToReplay
from sessiontools.policies.base import Policy, PolicyName
from sessiontools.policies.registry import DEFAULT_POLICY, cli_version, make_policy, own_policy
from sessiontools.replay.catalog import ModelInfo, load_model_files, lookup
from sessiontools.replay.cost import Classes
from sessiontools.replay.neutral import fit_neutral_truth
from sessiontools.replay.path_grid import PathGrid
from sessiontools.replay.priors import PriorTable
from sessiontools.replay.records import ReplaySettings
from sessiontools.replay.replayed import RecordedReply, SessionReplay, deferred, session_replay
from sessiontools.replay.walk import replay_settings, simulate_path
from sessiontools.transcript.model import Transcript, TranscriptPath, Usage


def default_window(t: Transcript, path: TranscriptPath, policy: Policy | None = None,
                   extra: Sequence[ModelInfo] = ()) -> int:
    """The configured context window of the session (see the module docstring): as the file's own
    agent's policy reads the file's settings (`Policy.recorded_window`), else the window a request recorded, else the window
    the policy's CLI assumed for the model (Claude Code: 200k, 1M for `[1m]`), else the catalogue's
    (bundled, then `extra`: models.json files, --models)."""
    given = _given_window(t, path, policy)
    if given:
        return given
    _require_requests(t, path)
    req = next((r for r in reversed(path.requests) if r.model), None)
    info = lookup(req.provider, req.model, extra) if req else None
    if req is None:
        raise InputError(f"{t.source}: no request records a model; give its context window with --context-window N")
    if info is None:
        model = f"{req.provider}/{req.model}"
        raise ModelNotInCatalogue(f"{t.source}: model {model} is not in the catalogue (bundled, models.json files or "
                                  "--models); give its context window with --context-window N", model)
    return info.context_window


def _given_window(t: Transcript, path: TranscriptPath, policy: Policy | None) -> int | None:
    """The window the file configured, a request recorded or the policy's CLI assumed; None: the
    catalogue's for the model decides (and each model's holds from its first request, `window_changes`)."""
    # A fact about the file, whichever rule replays it: read by the file's own agent's policy.
    own = DEFAULT_POLICY.get(t.agent)
    configured = make_policy(policy_for(t, None)).recorded_window(t.settings) if own is not None else None
    if configured:
        return configured
    recorded = [r.context_window for r in path.requests if r.context_window]
    if recorded:
        return recorded[-1]
    return policy.default_window() if policy is not None else None


def window_changes(path: TranscriptPath, extra: Sequence[ModelInfo] = ()) -> tuple[tuple[int, int], ...]:
    """(message index, window) where the calls' model (the requests', and the aborted or failed replies'
    that record one) changes to one with another catalogue window; empty when every call's model has
    the same window (or a model is unknown: then the path's newest model's holds throughout)."""
    out: list[tuple[int, int]] = []
    seen: dict[tuple[str | None, str | None], int | None] = {}
    calls: list[Any] = [*path.requests, *path.unusable]
    for r in sorted(calls, key=lambda c: c.index) if path.unusable else calls:
        if r.model is None:
            continue
        key = (r.provider, r.model)
        if key not in seen:
            info = lookup(r.provider, r.model, extra)
            seen[key] = info.context_window if info else None
        w = seen[key]
        if w is None:
            return ()
        if not out or out[-1][1] != w:
            out.append((r.index, w))
    return tuple(out) if len(out) > 1 else ()


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
    reserve_keep = _reserve_axis(policy)
    extras = policy.grid_extras(limits=limits, **claude)
    return [replay_settings(policy, w, r, k, extra) for w in windows for extra in extras
            for r in (reserves if reserve_keep else (0,)) for k in (keeps if reserve_keep else (0,))]


def _recorded(path: TranscriptPath) -> list[tuple[int, Usage, str | None, bool]]:
    """(message index, recorded usage, timestamp, is a request) of each call that recorded a usage, in
    path order: the requests, and the calls without a usage the agent trusts (`UnusableReply`: what
    they cost is recorded all the same)."""
    calls = [(r.index, r.usage, r.timestamp, True) for r in path.requests]
    calls += [(u.index, u.usage, u.timestamp, False) for u in path.unusable if u.usage is not None]
    return sorted(calls, key=lambda c: c[0]) if path.unusable else calls


def _recorded_replies(path: TranscriptPath) -> list[RecordedReply]:
    """Each call's recorded usage, by message index (the cache model learns from the requests only)."""
    # `tuple.__new__` makes the same named tuples as their generated `__new__` (neither class has its
    # own), in half the time: two per recorded call.
    new, reply, classes = tuple.__new__, RecordedReply, Classes
    return [new(reply, (i, new(classes, (float(u.input), float(u.cache_read), float(u.cache_write), float(u.output))),
                        None if u.cost is None else float(u.cost.total), ts, learn))
            for i, u, ts, learn in _recorded(path)]


def _price_pairs(path: TranscriptPath) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(usage, usage.cost) of each call that records a cost, in Pi's keys (`catalog.recorded_prices`).
    Made as they are read: `prices_of` reads them only when the catalogue has no prices for the model."""
    for _, u, _, _ in _recorded(path):
        c = u.cost
        if c is not None:
            yield ({"input": u.input, "output": u.output, "cacheRead": u.cache_read, "cacheWrite": u.cache_write},
                   {"input": c.input, "output": c.output, "cacheRead": c.cache_read, "cacheWrite": c.cache_write})


def _recorded_after(path: TranscriptPath) -> list[int]:
    """The last message before each recorded compaction (its summary messages aside): the largest
    index of a message of `messages[:c.index]` that is not a summary, -1 when there is none."""
    from sessiontools.transcript.model import Role

    msgs, comps, summary = path.messages, path.compactions, Role.SUMMARY
    if not comps:
        return []
    # One pass over the messages, the compactions by place (a max over the prefix of each was
    # quadratic); a compaction at a negative place (a slice from the end) the slow way.
    out = [max((m.index for m in msgs[:c.index] if m.role != summary), default=-1) if c.index < 0 else -1
           for c in comps]
    best: int | None = None  # the largest so far (None: no message yet, as `max`'s default)
    j = 0
    for k in sorted((k for k, c in enumerate(comps) if c.index >= 0), key=lambda k: comps[k].index):
        stop = min(comps[k].index, len(msgs))
        while j < stop:
            m = msgs[j]
            if m.role != summary and (best is None or m.index > best):
                best = m.index
            j += 1
        out[k] = -1 if best is None else best
    return out


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
    models: Sequence[str] = (),
    keep_path: bool = False,
) -> list[SessionReplay]:
    """Every (path x setting) of one transcript, replayed (`claude`: Claude Code's `autocompact_pcts`
    and `max_output_tokens`; `priors`: truth-fit priors learnt from the run's other sessions,
    `replay.priors`; `version`: --cli-version, the CLI version whose rule applies instead of the one
    the file records; `models`: files in Pi's models.json format, later ones winning, for the
    catalogue's windows and prices). `defer_prior_dominated`: when the first path's fit is
    prior-dominated, fit only (every path's `runs` empty): the run replays it once, later, with the
    priors learnt from the others. `keep_path`: each run keeps the policy's simulated path of the
    agent's own records (`simulate_path`'s, for `resummarize`).

    With no `windows` and no window the file gives, each model's catalogue window holds from its
    first request (`window_changes`) under a policy whose threshold is the window less a reserve."""
    from sessiontools.read.parse import gc_paused

    # The replay builds tens of thousands of small acyclic objects per session (requests, points,
    # runs) that die by reference counting; with the collector running, their allocations trigger
    # collections that traverse the session's parsed objects again and again (a full collection of
    # a 3.6 MB session costs ~17 ms, a sixth of a 25-setting grid) without ever freeing anything.
    with gc_paused():
        return _replay_transcript(t, windows=windows, reserves=reserves, keeps=keeps, policy=policy, limits=limits,
                                  summary_tokens=summary_tokens, all_leaves=all_leaves, claude=claude or {},
                                  priors=priors, version=version, defer=defer_prior_dominated,
                                  tokenizer=truth_tokenizer, extra=load_model_files(models), keep_path=keep_path)


def _replay_transcript(
    t: Transcript, *, windows: Sequence[int] | None, reserves: Sequence[int], keeps: Sequence[int],
    policy: str | None, limits: Sequence[int | None], summary_tokens: int | None, all_leaves: bool,
    claude: dict[str, Any], priors: PriorTable | None, version: str | None, defer: bool, tokenizer: str | None,
    extra: Sequence[ModelInfo], keep_path: bool = False,
) -> list[SessionReplay]:
    name = policy_for(t, policy)
    v = cli_version(name, t, version)
    paths = [p for p in t.paths if not p.sidechain] if all_leaves else t.paths[:1]
    # A path with no request of its own (a leaf that ends before any reply) takes the session's model.
    fallback = next((p for p in paths if p.requests), None)
    if fallback is None:
        for path in paths:
            _require_requests(t, path)
    out = []
    for path in paths:
        modelled = path if path.requests else fallback
        assert modelled is not None
        pol = make_policy(name, v, _model_id(modelled))
        changes: tuple[tuple[int, int], ...] = ()
        if windows:
            ws = list(windows)
        else:
            ws = [default_window(t, modelled, pol, extra)]
            if path.requests and _given_window(t, path, pol) is None and _reserve_axis(pol):
                changes = window_changes(path, extra)
        prior = priors.lookup(_model(modelled)) if priors is not None else None
        own = own_policy(t, path)
        truth = fit_neutral_truth(path, summary_tokens, prior, own, tokenizer=tokenizer)
        grid = _grid(pol, ws, reserves, keeps, limits or (None,), claude)
        if changes:
            grid = [replace(s, window_changes=changes, policy_threshold=None) for s in grid]
        walk_grid = None if deferred(defer, truth, out) else PathGrid(path, pol, truth, grid)
        runs = [] if walk_grid is None else _runs(walk_grid, keep_path)
        req = next((r for r in reversed(modelled.requests) if r.model), None)
        info = lookup(req.provider, req.model, extra) if req else None
        out.append(session_replay(
            source=t.source, agent=t.agent.value, leaf_id=path.leaf_id, model_name=_model(modelled), truth=truth,
            model=info, runs=runs, replies=_recorded_replies(path), breaks=sorted(c.index for c in path.compactions),
            price_pairs=_price_pairs(path), recorded_after=_recorded_after(path),
            recorded_after_overflow=own.recorded_compaction_after_rejection,
            path=path, origin=t, unmetered=len(path.unmetered), walk_grid=walk_grid))
    return out


def _reserve_axis(policy: Policy) -> bool:
    """Whether the policy's threshold is the window less a reserve (its `reserve_tokens` axis): a
    threshold that follows each model's window."""
    return any(a.key == "reserve_tokens" for a in policy.axes)


def _runs(grid: PathGrid, keep_path: bool = False) -> list[Any]:
    """Each setting of `grid` (its path, policy and truth) walked, the walks sharing what no setting
    changes (`PathGrid`)."""
    return [simulate_path(grid.path, grid.policy, s, grid.truth, grid=grid, keep_path=keep_path)
            for s in grid.settings]


def _model_id(path: TranscriptPath) -> str | None:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return req.model if req else None


def _model(path: TranscriptPath) -> str:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return f"{req.provider}/{req.model}" if req else "unknown/unknown"
