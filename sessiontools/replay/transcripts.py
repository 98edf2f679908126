"""Replay any agent's transcript under any registered policy (`replay.registry`) with the generic
simulator (`replay.neutral`), as run records of the replay JSON contract.

Used for Codex rollouts (default policy `codex`), for Pi's policies over other agents' transcripts and
for Codex's rule over Pi and Claude Code sessions ("what would Codex's rule have done to this
session"). The records have the keys of `replay.run_record`; what the generic simulator does not
model is 0 or null (`mid_run_crossings`, `thrash`, `cost`), `billed_input_tokens` is the sum of the
answered requests' prompt tokens (no cache pricing) and `agent_prompt_tokens` repeats it.

Default window: Codex rollouts record 95% of the configured window (`policies.codex.configured_window`
gives it back); otherwise the window a request recorded, else the bundled catalogue's for the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import Policy, PolicyName, PolicySettings
from sessiontools.replay.catalog import lookup
from sessiontools.replay.neutral import NeutralRun, NeutralTruth, fit_neutral_truth, simulate_path
from sessiontools.replay.priors import PriorTable, prior_text
from sessiontools.replay.registry import DEFAULT_POLICY, cli_version, make_policy
from sessiontools.transcript.model import Transcript, TranscriptPath


def default_window(t: Transcript, path: TranscriptPath, policy: Policy | None = None) -> int:
    """The configured context window of the session (see the module docstring); when the file records
    none, the window the policy's CLI assumed for the model (Claude Code: 200k, 1M for `[1m]`), else
    the catalogue's."""
    from sessiontools.policies.codex import configured_window

    reported = t.settings.get("model_context_window")
    if t.agent.value == "codex" and isinstance(reported, int) and reported > 0:
        return configured_window(reported)
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


def _grid(name: PolicyName, windows: Sequence[int], reserves: Sequence[int], keeps: Sequence[int],
          limits: Sequence[int | None], claude: dict[str, Any]) -> list[PolicySettings]:
    if name == PolicyName.CODEX:
        return [PolicySettings(w, extra=(("auto_compact_limit", lim),) if lim is not None else ())
                for w in windows for lim in limits]
    if name in (PolicyName.CLAUDE_CODE, PolicyName.CLAUDE_CODE_REACTIVE):
        out = claude.get("max_output_tokens")
        return [PolicySettings(w, extra=(("autocompact_pct", p), *((("max_output_tokens", out),) if out else ())))
                for w in windows for p in claude.get("autocompact_pcts") or (None,)]
    return [PolicySettings(w, r, k) for w in windows for r in reserves for k in keeps]


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
) -> list[dict[str, Any]]:
    """Every (path x setting) of one transcript, as replay run records (`claude`: Claude Code's
    `autocompact_pcts` and `max_output_tokens`; `priors`: truth-fit priors learnt from the run's
    other sessions, `replay.priors`; `version`: --cli-version, the CLI version whose rule applies
    instead of the one the file records)."""
    name = policy_for(t, policy)
    v = cli_version(name, t, version)
    paths = [p for p in t.paths if not p.sidechain] if all_leaves else t.paths[:1]
    out = []
    for path in paths:
        pol = make_policy(name, v, _model_id(path))
        ws = list(windows) if windows else [default_window(t, path, pol)]
        prior = priors.lookup(_model(path)) if priors is not None else None
        truth = fit_neutral_truth(path, summary_tokens, prior)
        for s in _grid(name, ws, reserves, keeps, limits or (None,), claude or {}):
            run = simulate_path(path, pol, s, truth)
            out.append(neutral_record(t, path, run, truth, pol.threshold(s)))
    return out


def _model_id(path: TranscriptPath) -> str | None:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return req.model if req else None


def _model(path: TranscriptPath) -> str:
    req = next((r for r in reversed(path.requests) if r.model), None)
    return f"{req.provider}/{req.model}" if req else "unknown/unknown"


def neutral_record(t: Transcript, path: TranscriptPath, run: NeutralRun, truth: NeutralTruth,
                   threshold: int) -> dict[str, Any]:
    """One element of the replay JSON `runs` list, from the generic simulator."""
    s = run.settings
    comps = []
    for c in run.compactions:
        m = path.messages[c.after_index] if 0 <= c.after_index < len(path.messages) else None
        comps.append({
            "reason": c.reason.value, "parent_entry_id": m.id if m else None, "after_line": m.line if m else None,
            "first_kept_entry_id": None, "tokens_before": c.tokens_before, "truth_at_trigger": round(c.truth_at_trigger),
            "pi_view_at_trigger": round(c.count_at_trigger), "early": c.early, "thrash": False, "is_split_turn": False,
            "messages_summarized": None, "turn_prefix_messages": 0,
            "kept_tokens": round(sum(truth.message_tokens(path.messages[i]) for i in c.kept)),
            "summary_tokens": round(truth.summary_tokens), "summary_source": "model",
            "matches_recorded": c.matches_recorded,
        })
    n_threshold = sum(1 for c in run.compactions if c.reason.value == "threshold")
    summ_in = sum(c.truth_at_trigger for c in run.compactions)
    summ_out = truth.summary_tokens * len(run.compactions)
    early = sum(1 for c in run.compactions if c.early)
    metrics = {
        "compactions": len(run.compactions), "threshold_compactions": n_threshold,
        "overflow_compactions": len(run.compactions) - n_threshold, "early": early, "late": run.late,
        "mid_run_crossings": 0, "overflows": run.overflows, "failed_recoveries": run.failed_recoveries, "thrash": 0,
        "check_points": run.check_points, "early_rate": round(early / n_threshold, 6) if n_threshold else 0.0,
        "late_rate": round(run.late / run.check_points, 6) if run.check_points else 0.0,
        "peak_truth_tokens": round(run.peak_truth), "billed_input_tokens": round(run.agent_prompt_tokens + summ_in),
        "summarization_input_tokens": round(summ_in), "summarization_output_tokens": round(summ_out),
        # not modelled here: the cache split and prices of Pi's replay
        "user_compactions": run.user_compactions, "input_tokens": None, "cache_read_tokens": None, "cache_write_tokens": None,
        "output_tokens": None, "rejected_input_tokens": None, "cost_agent": None, "cost_summarization": None,
        "cost": None,
    }
    extra = {k: v for k, v in s.extra}
    return {
        "session": t.source,
        "agent": t.agent.value,
        "leaf_id": path.leaf_id,
        "model": _model(path),
        "settings": {"context_window": s.context_window, "reserve_tokens": s.reserve_tokens,
                     "keep_recent_tokens": s.keep_recent_tokens, "policy": run.policy,
                     "auto_compact_limit": extra.get("auto_compact_limit"), "threshold": threshold,
                     **{k: v for k, v in extra.items() if k != "auto_compact_limit"}},
        "compactions": comps,
        "metrics": metrics,
        "recorded_match": {"recorded": run.recorded, "matched": run.matched, "missed": run.recorded - run.matched,
                           "extra": len(run.compactions) - run.matched},
        "truth_model": {
            "overhead_tokens": round(truth.overhead), "ratio_to_chars4": round(truth.ratio, 4),
            "entries_attributed": None, "entries_modelled": None, "summary_tokens": round(truth.summary_tokens),
            "requests_fitted": truth.n, "prior_dominated": truth.prior_dominated,
            "notes": [f"{truth.n} request(s): overhead and ratio shrunk toward the prior ({prior_text(truth.prior)})"]
            if truth.prior is not None and truth.prior_dominated else [],
        },
        "agent_prompt_tokens": round(run.agent_prompt_tokens),
        "requests_from_recorded_usage": run.requests_recorded,
        "requests_from_model": run.requests_modelled,
        "no_compaction": [],
    }
