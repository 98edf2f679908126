"""Codex's auto-compaction rule per CLI version: the table (data) and `rule_for(version)`.

One row so far, with what each part was checked on:

- **0.171.0, measured** (`policies.codex`, lab/README.md "Codex"): limit = min(`model_auto_compact_token_limit`,
  90% of the configured `model_context_window`); count = the last response's total tokens + bytes/4 of
  the items after the newest model item; checked before a turn and mid-turn after a follow-up; never
  reactive.
- **The recorded window is 95% of the configured one**: 0.171.0 (lab, 64000 -> 60800), 0.63.0 (its real
  CLI against the lab, same config: 60800), and every real rollout of 0.63 - 0.121 we read that
  records a window (gpt-5.1-codex, gpt-5.1-codex-max, gpt-5.3-codex, gpt-5.4, gpt-5.4-mini): 258400 =
  95% of 272000. So `policies.codex.configured_window` holds for all of them.
- **The window when the rollout records none** (`context_window`): 272000 for `gpt-5*` and `codex-*`
  models, as codex-rs's `openai_model_info.rs` lists them (read in one stored version of the file;
  the release tags could not be read here: the repository snapshot is larger than could be fetched).

Not established: the auto-compact limit per model family before 0.171 (codex-rs's
`auto_compact_token_limit` per family; 0.63.0 against the lab never compacted below its limit 17000
on the pair workload, whose context stayed at 12179 tokens, and hung at a limit of 8000), so every
version gets 0.171.0's row.
"""

from __future__ import annotations

from dataclasses import dataclass

#: codex-rs `openai_model_info.rs`: the gpt-5 and codex- families' context window.
GPT5_WINDOW = 272_000


@dataclass(frozen=True, slots=True)
class CodexRule:
    """One row: the rule of the releases from `first` on."""

    first: str
    limit_fraction: float  # the default limit as a share of the configured window
    reported_window_fraction: float  # token_count.model_context_window / configured window
    how: str


RULES: tuple[CodexRule, ...] = (
    CodexRule("0.0.0", 0.9, 0.95,
              "measured: 0.171.0 on the lab (limit, count, check points); the 95% reported window also on "
              "0.63.0 (lab) and on real rollouts of 0.63 - 0.121; the limit before 0.171 not established"),
)
NEWEST = RULES[-1]


def rule_for(version: str | None) -> CodexRule:
    """The row for a Codex version (one row: every version)."""
    return NEWEST


def context_window(model: str | None) -> int | None:
    """The configured window codex-rs assumes for a model when the rollout records none (None: unknown)."""
    m = (model or "").lower()
    if m.startswith(("gpt-5", "codex-")):
        return GPT5_WINDOW
    return None
