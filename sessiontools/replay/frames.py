"""Replay results as polars DataFrames: one row per run (setting), one row per compaction.

`runs_frame` schema (one row per session x path x setting):
  session (str: the file), leaf_id (str), model (str: provider/model), policy (str),
  context_window, reserve_tokens, keep_recent_tokens, threshold (int, tokens: the policy's own T; null when it
  follows each model's window, a session that changed models under Pi's rule),
  agent (str: whose file), auto_compact_limit (int, Codex's axis), autocompact_pct (float, Claude Code's),
  every metric of `replay.metrics.METRICS` (ints are tokens or counts; `early_rate` and `late_rate`
  fractions 0-1; cost columns US dollars, null when no price is known),
  recorded, matched, missed, extra (int: the recorded compactions and how the replay matched them),
  truth_overhead_tokens (int), truth_ratio_to_chars4 (float), truth_prior_dominated (bool: too few
  requests for the session's data alone to decide the fit, so it leans on a prior), requests_from_recorded_usage,
  requests_from_model, requests_from_provider_error (int), unmetered_replies (int: replies recorded with
  no usage, a zero usage or a zero prompt, neither requests nor billed), recorded_cost_agent (float, dollars: the
  file's own usage.cost total, the truth cost_agent is checked against), prices_source (str:
  catalogue | a models.json path | recorded usage.cost | agent prices | none), cache_style (str: write | auto | none).

`compactions_frame` schema (one row per compaction a run decided on):
  session, leaf_id, policy (str), context_window, reserve_tokens, keep_recent_tokens, threshold (int),
  auto_compact_limit (int), autocompact_pct (float): the run's setting, as in `runs_frame` (so that the
  compactions of a Codex limit grid or a Claude Code percentage grid tell their run apart),
  n (int: 1-based position in its run), reason (str: threshold | overflow | user), parent_entry_id,
  first_kept_entry_id (str), tokens_before (int: Pi's own tokensBefore), truth_at_trigger,
  policy_count_at_trigger (int, tokens: the policy's own count at the trigger; `pi_view_at_trigger`
  before dataset schema 4), early, thrash, is_split_turn (bool), messages_summarized,
  turn_prefix_messages (int), kept_tokens, summary_tokens (int, tokens), summary_source (str:
  recorded | model), matches_recorded (bool), and the cache-bust cost of the request after it
  (`cache_bust_cost`, dollars, null without prices) where the run was priced.

Both take typed run records (`replay.run_document.RunRecord`, what `--jobs` workers return).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessiontools.replay.metrics import METRICS

if TYPE_CHECKING:
    from sessiontools.replay.records import ReplaySettings
    from sessiontools.replay.run_document import RunRecord

_FLOAT_METRICS = {"early_rate", "late_rate"}


def _metric_dtype(name: str, pl: Any) -> Any:
    if name in _FLOAT_METRICS or name.startswith("cost"):
        return pl.Float64
    return pl.Int64


def runs_schema() -> dict[str, Any]:
    import polars as pl

    schema: dict[str, Any] = {
        "session": pl.Utf8, "leaf_id": pl.Utf8, "model": pl.Utf8, "policy": pl.Utf8, "context_window": pl.Int64,
        "reserve_tokens": pl.Int64, "keep_recent_tokens": pl.Int64, "threshold": pl.Int64,
        "agent": pl.Utf8, "auto_compact_limit": pl.Int64, "autocompact_pct": pl.Float64,
    }
    schema.update({m: _metric_dtype(m, pl) for m in METRICS})
    schema.update({
        "recorded": pl.Int64, "matched": pl.Int64, "missed": pl.Int64, "extra": pl.Int64,
        "truth_overhead_tokens": pl.Int64, "truth_ratio_to_chars4": pl.Float64,
        "truth_prior_dominated": pl.Boolean, "requests_from_recorded_usage": pl.Int64, "requests_from_model": pl.Int64,
        "requests_from_provider_error": pl.Int64, "unmetered_replies": pl.Int64, "recorded_cost_agent": pl.Float64,
        "prices_source": pl.Utf8,
        "cache_style": pl.Utf8,
    })
    return schema


def _setting_columns(s: ReplaySettings) -> dict[str, Any]:
    """A run's setting as columns: the window, Pi's reserve and keep, the policy's threshold (null when
    the session changed models under a rule whose threshold follows the window), Codex's limit and
    Claude Code's percentage."""
    pct = s.value("autocompact_pct")
    return {
        "context_window": s.context_window, "reserve_tokens": s.reserve_tokens,
        "keep_recent_tokens": s.keep_recent_tokens, "threshold": s.shown_threshold,
        "auto_compact_limit": s.value("auto_compact_limit"),
        "autocompact_pct": None if pct is None else float(pct),
    }


def runs_frame(records: Sequence[RunRecord]) -> Any:
    """One row per run: its setting and its metrics."""
    import polars as pl

    rows = []
    for r in records:
        rm, tm = r.recorded_match, r.truth_model
        rows.append({
            "session": r.session, "leaf_id": r.leaf_id, "model": r.model, "policy": r.settings.policy.value,
            **_setting_columns(r.settings), "agent": r.agent,
            **r.metrics.to_dict(),
            "recorded": rm.recorded, "matched": rm.matched, "missed": rm.missed, "extra": rm.extra,
            "truth_overhead_tokens": tm.overhead_tokens, "truth_ratio_to_chars4": tm.ratio_to_chars4,
            "truth_prior_dominated": tm.prior_dominated,
            "requests_from_recorded_usage": r.requests_from_recorded_usage,
            "requests_from_model": r.requests_from_model,
            "requests_from_provider_error": r.requests_from_provider_error,
            "unmetered_replies": r.unmetered_replies,
            "recorded_cost_agent": r.recorded_cost_agent,
            "prices_source": r.prices.source,
            "cache_style": r.cache_model.style.value,
        })
    return pl.DataFrame(rows, schema=runs_schema())


def compactions_schema() -> dict[str, Any]:
    import polars as pl

    return {
        "session": pl.Utf8, "leaf_id": pl.Utf8, "context_window": pl.Int64, "reserve_tokens": pl.Int64,
        "keep_recent_tokens": pl.Int64, "threshold": pl.Int64, "auto_compact_limit": pl.Int64,
        "autocompact_pct": pl.Float64, "policy": pl.Utf8, "n": pl.Int64, "reason": pl.Utf8,
        "parent_entry_id": pl.Utf8, "first_kept_entry_id": pl.Utf8, "tokens_before": pl.Int64,
        "truth_at_trigger": pl.Int64, "policy_count_at_trigger": pl.Int64, "early": pl.Boolean, "thrash": pl.Boolean,
        "is_split_turn": pl.Boolean, "messages_summarized": pl.Int64, "turn_prefix_messages": pl.Int64,
        "kept_tokens": pl.Int64, "summary_tokens": pl.Int64, "summary_source": pl.Utf8,
        "matches_recorded": pl.Boolean, "cache_bust_cost": pl.Float64,
    }


def compactions_frame(records: Sequence[RunRecord]) -> Any:
    """One row per simulated compaction event."""
    import polars as pl

    schema = compactions_schema()
    rows = []
    for r in records:
        setting = {"session": r.session, "leaf_id": r.leaf_id, **_setting_columns(r.settings),
                   "policy": r.settings.policy.value}
        for k, c in enumerate(r.compactions, start=1):
            row = {**setting, "n": k, **c.to_dict()}
            rows.append({name: row.get(name) for name in schema})
    return pl.DataFrame(rows, schema=schema)
