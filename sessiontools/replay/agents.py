"""Replay any registered policy over any agent's transcript (`replay.neutral`), as replay JSON records.

`POLICY_REGISTRY` names every replayable policy; `DEFAULT_POLICY` says which one replays an agent's
own file when `--policy` is not given. Pi sessions under Pi's own policies keep Pi's exact replay
(`replay.replay_session`); everything else (Claude Code transcripts under any policy, Pi sessions
under Claude Code's) goes through `records_for_transcript` here. The records have the keys of Pi's
replay records (`replay.run_record`), so tables, frames, gates and JSON are shared; metrics the
neutral simulator does not measure (thrash, mid-run crossings, late rate) are None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sessiontools.errors import InputError
from sessiontools.policies.base import Policy, PolicyName, PolicySettings
from sessiontools.policies.claude_code import DEFAULT_MAX_OUTPUT_TOKENS, claude_code_policy
from sessiontools.policies.pi.policy import pi_policy
from sessiontools.read.agents import Agent
from sessiontools.replay.attributed import AttributedTruth, attributed_truth
from sessiontools.replay.catalog import ModelInfo, lookup
from sessiontools.replay.neutral import NeutralRun, simulate_path
from sessiontools.transcript.model import Transcript, TranscriptPath, Trigger

#: Every policy the replay runs over the neutral transcript: name -> Policy.
POLICY_REGISTRY: dict[PolicyName, Callable[[], Policy]] = {
    PolicyName.PI_0: lambda: pi_policy(PolicyName.PI_0),
    PolicyName.PI_1: lambda: pi_policy(PolicyName.PI_1),
    PolicyName.CLAUDE_CODE: lambda: claude_code_policy(PolicyName.CLAUDE_CODE),
    PolicyName.CLAUDE_CODE_REACTIVE: lambda: claude_code_policy(PolicyName.CLAUDE_CODE_REACTIVE),
}


def default_claude_policy(t: Transcript) -> PolicyName:
    """`claude-code` when the recording compacted at a threshold (an auto-compact window was set),
    else `claude-code-reactive` (2.1.332 without a window compacts only when the provider rejects)."""
    triggers = {c.trigger for p in t.paths if not p.sidechain for c in p.compactions}
    return PolicyName.CLAUDE_CODE if Trigger.THRESHOLD in triggers else PolicyName.CLAUDE_CODE_REACTIVE


#: The policy that replays an agent's own files by default (Pi's is chosen by `replay.replay_session`).
DEFAULT_POLICY: dict[Agent, Callable[[Transcript], PolicyName]] = {
    Agent.CLAUDE_CODE: default_claude_policy,
}


def _model(path: TranscriptPath) -> tuple[str | None, str | None]:
    for r in reversed(path.requests):
        if r.model:
            return r.provider, r.model
    return None, None


def _window(path: TranscriptPath, source: str) -> tuple[int, ModelInfo | None]:
    provider, model = _model(path)
    info = lookup(provider, model)
    if info is None:
        what = f"model {provider}/{model} is not in the bundled catalogue" if model else "no request records a model"
        raise InputError(f"{source}: {what}; give the context window with --context-window N")
    return info.context_window, info


def _grid(policy: PolicyName, windows: Sequence[int], reserves: Sequence[int], keeps: Sequence[int],
          pcts: Sequence[float | None], max_output_tokens: int) -> list[PolicySettings]:
    if policy in (PolicyName.PI_0, PolicyName.PI_1):
        return [PolicySettings(w, r, k) for w in windows for r in reserves for k in keeps]
    extra = (("max_output_tokens", max_output_tokens),)
    return [PolicySettings(w, extra=(("autocompact_pct", p), *extra)) for w in windows for p in pcts]


def records_for_transcript(
    t: Transcript, *, windows: Sequence[int] | None, reserves: Sequence[int], keeps: Sequence[int],
    policy: str | None, summary_tokens: int | None = None, autocompact_pcts: Sequence[float | None] = (None,),
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> list[dict[str, Any]]:
    """Replay every non-sidechain path of `t` over the grid; one record per (path, setting)."""
    if policy is None:
        choose = DEFAULT_POLICY.get(t.agent)
        if choose is None:
            raise InputError(f"{t.source}: no default policy for a {t.agent.value} file; give --policy")
        name = choose(t)
    else:
        name = PolicyName(policy)
    pol = POLICY_REGISTRY[name]()
    out = []
    for path in (p for p in t.paths if not p.sidechain):
        if not path.requests:
            continue
        ws, info = (list(windows), None) if windows else ([], None)
        if not ws:
            w, info = _window(path, t.source)
            ws = [w]
        else:
            info = lookup(*_model(path))
        truth = attributed_truth(path, summary_tokens)
        for s in _grid(name, ws, reserves, keeps, autocompact_pcts or (None,), max_output_tokens):
            run = simulate_path(path, pol, s, truth)
            out.append(neutral_record(t, path, pol, s, run, truth, info))
    return out


def _compaction(path: TranscriptPath, c: Any, truth: AttributedTruth) -> dict[str, Any]:
    kept_tokens = sum(truth.message_tokens(path.messages[i]) for i in c.kept)
    after = path.messages[c.after_index] if c.after_index >= 0 else None
    return {
        "reason": c.reason.value, "parent_entry_id": after.id if after else None,
        "first_kept_entry_id": path.messages[c.kept[0]].id if c.kept else None,
        "tokens_before": c.tokens_before, "truth_at_trigger": round(c.truth_at_trigger),
        "pi_view_at_trigger": round(c.count_at_trigger), "early": c.early, "thrash": False,
        "is_split_turn": False, "messages_summarized": None, "turn_prefix_messages": 0,
        "kept_messages": len(c.kept), "kept_tokens": round(kept_tokens), "summary_tokens": round(truth.summary_tokens),
        "summary_source": "model", "matches_recorded": c.matches_recorded,
    }


def _metrics(run: NeutralRun, compactions: list[dict[str, Any]], prices: dict[str, float] | None) -> dict[str, Any]:
    n_threshold = sum(1 for c in run.compactions if c.reason.value == "threshold")
    summ_in = sum(max(0, c["truth_at_trigger"] - c["kept_tokens"]) for c in compactions)
    summ_out = sum(c["summary_tokens"] for c in compactions)
    early = sum(1 for c in run.compactions if c.early)
    cost = None
    if prices:
        cost = round((run.agent_prompt_tokens + summ_in) * prices.get("input", 0.0)
                     + summ_out * prices.get("output", 0.0), 6)
    return {
        "compactions": len(run.compactions), "threshold_compactions": n_threshold,
        "overflow_compactions": sum(1 for c in run.compactions if c.reason.value == "overflow"),
        "manual_compactions": sum(1 for c in run.compactions if c.reason.value == "manual"),
        "early": early, "late": run.late, "mid_run_crossings": None, "overflows": run.overflows,
        "failed_recoveries": run.failed_recoveries, "thrash": None, "check_points": run.check_points,
        "early_rate": round(early / n_threshold, 6) if n_threshold else 0.0, "late_rate": None,
        "peak_truth_tokens": round(run.peak_truth), "agent_prompt_tokens": round(run.agent_prompt_tokens),
        "billed_input_tokens": round(run.agent_prompt_tokens + summ_in),
        "summarization_input_tokens": round(summ_in), "summarization_output_tokens": round(summ_out), "cost": cost,
    }


def neutral_record(t: Transcript, path: TranscriptPath, pol: Policy, s: PolicySettings, run: NeutralRun,
                   truth: AttributedTruth, info: ModelInfo | None) -> dict[str, Any]:
    """One element of the replay JSON `runs` list, for a neutral replay."""
    provider, model = _model(path)
    compactions = [_compaction(path, c, truth) for c in run.compactions]
    extra = {k: v for k, v in s.extra}
    return {
        "session": t.source, "leaf_id": path.leaf_id, "agent": t.agent.value, "model": f"{provider}/{model}",
        "settings": {"context_window": s.context_window, "reserve_tokens": s.reserve_tokens,
                     "keep_recent_tokens": s.keep_recent_tokens, "policy": pol.name.value, **extra,
                     "threshold": pol.threshold(s)},
        "compactions": compactions,
        "metrics": _metrics(run, compactions, info.prices if info else None),
        "recorded_match": {"recorded": run.recorded, "matched": run.matched,
                           "missed": max(0, run.recorded - run.matched),
                           "extra": sum(1 for c in run.compactions if not c.matches_recorded)},
        "truth_model": {"overhead_tokens": round(truth.overhead), "ratio_to_chars4": round(truth.ratio, 4),
                        "entries_attributed": truth.attributed, "entries_modelled": len(path.messages) - truth.attributed,
                        "summary_tokens": round(truth.summary_tokens), "requests_fitted": truth.n,
                        "prior_dominated": truth.n < 2, "notes": []},
        "requests_from_recorded_usage": run.requests_recorded, "requests_from_model": run.requests_modelled,
        "no_compaction": [],
    }
