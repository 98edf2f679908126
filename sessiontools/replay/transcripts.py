"""Replay any agent's transcript under any registered policy (`replay.registry`) with the transcript
walk (`replay.walk`): typed `TranscriptReplay`s, each run a `ReplayRun` priced with the session's own
cache model and prices, as Pi's exact replay is (`replay.session`); `run_record` gives both the one
JSON record of the replay contract.

Used for Codex rollouts (default policy `codex`), Claude Code transcripts, Pi's policies over other
agents' transcripts and Codex's or Claude Code's rule over Pi sessions ("what would Codex's rule have
done to this session").

Default window: the configured window as the policy reads the file (`Policy.recorded_window`: Codex
rollouts record 95% of it); otherwise the window a request recorded, else the bundled catalogue's for the model.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import Policy, PolicyName
from sessiontools.replay.catalog import ModelInfo, lookup, recorded_prices
from sessiontools.replay.cost import (
    CacheModel,
    Classes,
    RecordedCall,
    RunCost,
    learn_cache,
    price_run,
    seconds,
)
from sessiontools.replay.neutral import NeutralTruth, fit_neutral_truth
from sessiontools.replay.priors import PriorTable, prior_text
from sessiontools.replay.records import ReplayRun, ReplaySettings
from sessiontools.replay.registry import DEFAULT_POLICY, cli_version, make_policy
from sessiontools.replay.session import Prices, RecordedUsage
from sessiontools.replay.walk import replay_settings, simulate_path
from sessiontools.transcript.model import Transcript, TranscriptPath


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
    req = next((r for r in reversed(path.requests) if r.model), None)
    info = lookup(req.provider, req.model) if req else None
    if info is None:
        what = f"model {req.provider}/{req.model} is not in the bundled catalogue" if req else "no request records a model"
        raise InputError(f"{t.source}: {what}; give the context window with --context-window N")
    return info.context_window


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


@dataclass(slots=True)
class TranscriptReplay:
    """Everything replayed for one path of one transcript (the `PathReplay` of the transcript walk)."""

    transcript: Transcript
    path: TranscriptPath
    truth: NeutralTruth
    model: ModelInfo | None
    runs: list[ReplayRun]
    cache: CacheModel
    recorded_classes: dict[int, Classes]
    recorded_costs: dict[int, float]
    price: Prices

    @property
    def source(self) -> str:
        return self.transcript.source

    @property
    def agent(self) -> str:
        return self.transcript.agent.value

    @property
    def leaf_id(self) -> str | None:
        return self.path.leaf_id

    @property
    def model_name(self) -> str:
        return _model(self.path)

    def cost_of(self, run: ReplayRun) -> RunCost:
        return price_run(run, self.recorded_classes, self.cache, self.price.per_token, self.truth.overhead,
                         self.recorded_costs)

    def truth_dict(self) -> dict[str, Any]:
        t = self.truth
        return {
            "overhead_tokens": round(t.overhead), "ratio_to_chars4": round(t.ratio, 4),
            "entries_attributed": len(t.attributed), "entries_modelled": len(self.path.messages) - len(t.attributed),
            "summary_tokens": round(t.summary_tokens), "requests_fitted": t.n, "prior_dominated": t.prior_dominated,
            "notes": [f"{t.n} request(s): overhead and ratio shrunk toward the prior ({prior_text(t.prior)})"]
            if t.prior is not None and t.prior_dominated else [],
        }

    def recorded_points(self, run: ReplayRun) -> list[tuple[int, float]]:
        """(the last message before it, truth of the last request before it) of each recorded compaction,
        on the axis of the run's own compactions (`SimCompaction.parent_base_index`)."""
        from sessiontools.transcript.model import Role

        out = []
        msgs = self.path.messages
        for c in self.path.compactions:
            after = max((m.index for m in msgs[:c.index] if m.role != Role.SUMMARY), default=-1)
            before = [p for p in run.requests if p.base_index <= after and not p.overflow]
            if before:
                out.append((after, before[-1].truth))
        return out


def recorded_path_usage(path: TranscriptPath) -> RecordedUsage:
    """The recorded classes and costs of each request of a path, and the calls to learn the cache from."""
    classes: dict[int, Classes] = {}
    costs: dict[int, float] = {}
    calls = []
    breaks = sorted(c.index for c in path.compactions)
    prev = -1
    for r in path.requests:
        u = r.usage
        c = classes[r.index] = Classes(float(u.input), float(u.cache_read), float(u.cache_write), float(u.output))
        if u.cost is not None:
            costs[r.index] = float(u.cost.total)
        k = bisect_left(breaks, prev)
        calls.append(RecordedCall(seconds(r.timestamp), c, k < len(breaks) and breaks[k] < r.index))
        prev = r.index
    return RecordedUsage(classes, costs, calls)


def _path_prices(info: ModelInfo | None, path: TranscriptPath) -> Prices:
    if info is not None and info.prices:
        return Prices(info.prices, "catalogue" if info.source == "bundled" else info.source)
    pairs = [({"input": r.usage.input, "output": r.usage.output, "cacheRead": r.usage.cache_read,
               "cacheWrite": r.usage.cache_write},
              {"input": r.usage.cost.input, "output": r.usage.cost.output, "cacheRead": r.usage.cost.cache_read,
               "cacheWrite": r.usage.cost.cache_write})
             for r in path.requests if r.usage.cost is not None]
    found = recorded_prices(pairs)
    return Prices(found, "recorded usage.cost") if found else Prices(None, "none")


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
) -> list[TranscriptReplay]:
    """Every (path x setting) of one transcript, replayed (`claude`: Claude Code's `autocompact_pcts`
    and `max_output_tokens`; `priors`: truth-fit priors learnt from the run's other sessions,
    `replay.priors`; `version`: --cli-version, the CLI version whose rule applies instead of the one
    the file records; `defer_prior_dominated`: as `replay.session.replay_session`'s). A Pi transcript under a Pi policy is the exact port's (`replay_source`), never
    this walk's."""
    from sessiontools.replay.registry import has_exact_port

    if has_exact_port(t.agent, policy):
        raise ValueError(f"{t.source}: {t.agent.value} under {policy or 'its own policy'} is replayed by the exact "
                         "port (replay.session.replay_source), not the transcript walk")
    name = policy_for(t, policy)
    v = cli_version(name, t, version)
    paths = [p for p in t.paths if not p.sidechain] if all_leaves else t.paths[:1]
    out = []
    for path in paths:
        pol = make_policy(name, v, _model_id(path))
        ws = list(windows) if windows else [default_window(t, path, pol)]
        prior = priors.lookup(_model(path)) if priors is not None else None
        truth = fit_neutral_truth(path, summary_tokens, prior)
        deferred = defer_prior_dominated and (truth.prior_dominated if not out else not out[0].runs)
        runs = [] if deferred else [simulate_path(path, pol, s, truth)
                                    for s in _grid(pol, ws, reserves, keeps, limits or (None,), claude or {})]
        req = next((r for r in reversed(path.requests) if r.model), None)
        info = lookup(req.provider, req.model) if req else None
        rec = recorded_path_usage(path)
        out.append(TranscriptReplay(t, path, truth, info, runs, learn_cache(rec.calls), rec.classes, rec.costs,
                                    _path_prices(info, path)))
    return out


def _model_id(path: TranscriptPath) -> str | None:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return req.model if req else None


def _model(path: TranscriptPath) -> str:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return f"{req.provider}/{req.model}" if req else "unknown/unknown"
