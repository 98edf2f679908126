"""Claude Code's compaction rule as `Policy` objects: `claude-code` (threshold) and `claude-code-reactive`.

The rule differs per CLI version: `policies.claude_code_rules` holds the table (`rule_for(version)`);
a policy made by `claude_code_policy(name, version, model)` follows that row. What follows is the
newest row, 2.1.332's, in detail.

Measured on Claude Code **2.1.332** (`@anthropic-ai/claude-code` + its native linux-x64 binary), read
from the binary and confirmed on real runs against the lab server (lab/README.md, "Claude Code";
sample_sessions/claude-code/). Claude Code is closed source: every constant below must be re-checked
when the pinned version moves (`lab/claude_env.py`, `make samples-claude`, then
tests/replay/test_claude_code_policy.py).

Threshold (`claude-code`). With the auto-compact window W (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, at
least 100000, or the `autoCompactWindow` setting; without one W is the model's own window) the
effective window is E = W - min(maxOutputTokens, 20000) and the threshold T = E - 13000, or with
`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P` T = min(floor(E * P / 100), E - 13000) (W = 100000: 14 -> 11200,
15 -> 12000). Before every request (a turn's first and each one after a tool result) Claude Code
counts C = usage of its last response (input + cache creation + cache read + output) +
ceil(chars / 4 * 4 / 3), chars = the text of every message after the *first* line of that response
(text blocks, tool name + compact JSON input, tool-result text), and compacts when C >= T. (The
4/3 is the lab model's: the binary's JS divides by 3 bytes per token for a model family it does not
list and by 4 for those it does, `bytes_per_token`; read, the listed families not measured.) On 6 runs
(356 responses, 35 compactions) every compaction had C >= T (smallest margin +11) and no other
request did; without the 4/3 factor 13 of the 35 fall below T. The recorded `preTokens` is the
count without the factor, usage + ceil(chars / 4) (exact for 33 of 42, else 1 token off).

Reactive (`claude-code-reactive`, and `claude-code` too when the provider rejects a request). After
the API answers `prompt is too long` Claude Code compacts and retries; the boundary says
`trigger: "auto"` and the 400 is not written. Here: it compacts when a request would exceed the
window W (the provider's limit).

What is kept (the preserved segment) is always whole API rounds (a response and its tool results)
from the end of the current turn, never the user's prompt. 2.1.332 chooses how many with a "round
ladder" whose rule was not decoded; it is modelled on the nine recorded automatic compactions: a
threshold compaction keeps the last `THRESHOLD_KEPT_ROUNDS` round (the median; exact for 6 of 7
recorded), a reactive one the last rounds up to `REACTIVE_MAX_KEPT_ROUNDS` while they fit in
`REACTIVE_KEEP_FRACTION` of the window (fitted on the two recorded reactive compactions, 3 and 2
rounds kept: any fraction in [0.54, 0.655] reproduces both; 0.6 is the middle). The 7th threshold
one (claude-threshold-14, 4th) kept nothing: it was the only compaction whose turn had already been
compacted, so that the turn's prompt was no longer in the context; the model keeps nothing then
(one recorded case: a hypothesis, not a decoded rule). A manual `/compact` is the user's action: the
replay performs it where it was recorded and keeps what `keep` keeps (the recorded one kept the
final answer, the last round).

The threshold's window is at least `claude_code_rules.MIN_AUTO_COMPACT_WINDOW` (Claude Code's minimum for
`CLAUDE_CODE_AUTO_COMPACT_WINDOW`); a smaller `--context-window` still overflows at W, so the
replay then compacts reactively.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.policies.base import (
    Axis,
    Candidate,
    CheckPoint,
    CountView,
    Kept,
    Policy,
    PolicyName,
    PolicySettings,
    count_plus_quarter,
    count_usage_alone,
)
from sessiontools.policies.claude_code_js import js_tokens, print_mode_prompt, restored_files
from sessiontools.policies.claude_code_rules import (
    DEFAULT_WINDOW,
    LONG_WINDOW,
    NEWEST,
    ClaudeCodeRule,
    Count,
    Keeps,
    context_window,
    model_family,
    rule_for,
)
from sessiontools.policies.claude_code_rules import threshold as rule_threshold
from sessiontools.transcript.model import Message, UnitKind

#: The Claude Code version these rules were measured on.
MEASURED_VERSION = "2.1.332"
#: The model's maximum output tokens in the recordings (`max_tokens` of every request).
DEFAULT_MAX_OUTPUT_TOKENS = 128000
#: The count's safety factor on the chars/4 estimate of the messages after the last response.
ESTIMATE_FACTOR = 4 / 3
#: Rounds a threshold compaction keeps (the recorded median; 6 of 7 recorded kept exactly one).
THRESHOLD_KEPT_ROUNDS = 1
#: At most this many rounds kept by a reactive compaction (the most recorded).
REACTIVE_MAX_KEPT_ROUNDS = 3
#: A reactive compaction gives up its oldest kept rounds while they exceed this share of the window.
REACTIVE_KEEP_FRACTION = 0.6


def claude_threshold(window: int, pct: float | None = None,
                     max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS) -> int:
    """The newest release's T (`claude_code_rules.threshold` of its row) at the recordings' max output:
    E = max(W, 100000) - min(maxOutputTokens, 20000), T = E - 13000, or min(floor(E * P / 100), E - 13000)
    with CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P (a W below 100000 still overflows at W)."""
    return rule_threshold(NEWEST, window, None, pct, max_output_tokens)


#: 2.1.222 / 2.1.332 (the JS in the native binary): models whose estimate is chars / 4; every other
#: model (a newer one, such as the lab's) chars / 3, i.e. chars / 4 x `ESTIMATE_FACTOR`.
FOUR_BYTES_PER_TOKEN = frozenset({
    "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5-sonnet", "claude-3-5-haiku", "claude-3-7-sonnet",
    "claude-opus-4-0", "claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-0",
    "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5"})


#: The counts whose estimate is the JS per-block one (`policies.claude_code_js.js_tokens`).
_JS_COUNTS = (Count.USAGE_ROUND4, Count.USAGE_ROUND4_ALL, Count.USAGE_ROUND_BPT_ALL)


def bytes_per_token(model: str | None) -> int:
    """2.1.332's characters per estimated token for a model: 4 for the families it lists (and no model),
    else 3, by the id's family (`model_family`)."""
    if not model:
        return 4
    return 4 if model_family(model) in FOUR_BYTES_PER_TOKEN else 3


def estimate_chars(chars: int, model: str | None = "claude-opus-5-5") -> int:
    """ceil(chars / bytes per token): the estimate Claude Code 2.1.332 adds to the last usage before
    comparing with T (measured on the lab's model, 3 bytes per token: ceil(chars / 4 x 4 / 3))."""
    return math.ceil(chars / bytes_per_token(model))


def recorded_chars(chars: int) -> int:
    """ceil(chars / 4): the estimate in the recorded `preTokens`."""
    return math.ceil(chars / 4)


def _block_chars(b: Any) -> int:
    if not isinstance(b, dict):
        return 0
    t = b.get("type")
    if t == "text":
        return len(b.get("text") or "")
    if t == "tool_use":
        args = json.dumps(b.get("input"), separators=(",", ":"), ensure_ascii=False)
        return len(b.get("name") or "") + len(args)
    if t == "tool_result":
        c = b.get("content")
        if isinstance(c, str):
            return len(c)
        return sum(len(x.get("text") or "") for x in c or []
                   if isinstance(x, dict) and x.get("type") == "text")
    return 0


def claude_chars(m: Message) -> int:
    """The characters Claude Code's estimator counts in a message: text blocks, tool name + compact
    JSON input, tool-result text (thinking and images are not counted). A message of another agent
    is measured by its units' text (a tool call as written by that agent's adapter)."""
    raw = m.raw if isinstance(m.raw, dict) else None
    msg = raw.get("message") if raw is not None and raw.get("type") in ("user", "assistant") else None
    if isinstance(msg, dict):
        c = msg.get("content")
        return len(c) if isinstance(c, str) else sum(_block_chars(b) for b in c or [] if isinstance(c, list))
    return sum(len(u.text) for u in m.units if u.kind not in (UnitKind.THINKING, UnitKind.IMAGE))


def _is_attachment(m: Any) -> bool:
    """An `attachment` line Claude Code sends (`transcript.claude_attachments`)."""
    raw = getattr(m, "raw", None)
    return isinstance(raw, dict) and raw.get("type") == "attachment"


def _rounds(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """The API rounds of the current turn: a response's messages and the tool results after it, from
    the last user prompt on; none when the turn's prompt is no longer in the context (it was
    summarised by an earlier compaction of the same turn)."""
    start = max((k + 1 for k, c in enumerate(candidates) if c.role == "user"), default=None)
    if start is None:
        return []
    rounds: list[list[Candidate]] = []
    for c in candidates[start:]:
        if c.role == "assistant" and (not rounds or rounds[-1][-1].role != "assistant"):
            rounds.append([c])
        elif rounds:
            rounds[-1].append(c)
    return rounds


class ClaudeCodePolicy(Policy):
    """`claude-code` (threshold, and reactive on a rejected request) or `claude-code-reactive`, under
    one version's rule (`rule`, default the newest measured) for one model (its output ceiling)."""

    reactive = True
    trims_summary_request = True  # its reactive compaction runs when the context no longer fits
    fires_at_threshold = True  # the binary's check: at or above the threshold
    axes = (Axis("context_window", "W"), Axis("autocompact_pct", "auto-compact at", "percent"))

    def grid_extras(self, **options: Any) -> list[tuple[tuple[str, Any], ...]]:
        if self.reactive_only:  # its threshold is W: no percentage or max output is read (the key stays, unset)
            return [(("autocompact_pct", None),)]
        out = options.get("max_output_tokens")
        return [(("autocompact_pct", p), *((("max_output_tokens", out),) if out else ()))
                for p in options.get("autocompact_pcts") or (None,)]

    def __init__(self, reactive_only: bool = False, rule: ClaudeCodeRule = NEWEST, model: str | None = None) -> None:
        self.reactive_only = reactive_only
        self.rule = rule
        self.model = model
        # 2.1.332: the messages after the *first* line of the last response; the JS releases: after its last
        self.counts_own_reply = rule.counts_own_reply
        # The JS releases do not compact after `prompt is too long`: the request fails, the user compacts
        self.reactive = rule.reactive
        self.name = PolicyName.CLAUDE_CODE_REACTIVE if reactive_only else PolicyName.CLAUDE_CODE
        # Checked before every request; a reactive-only Claude Code never reaches a threshold.
        self.check_points = (frozenset() if reactive_only
                             else frozenset({CheckPoint.BEFORE_SAMPLING, CheckPoint.BETWEEN_TURNS}))
        # The settings it reads: a reactive-only Claude Code compacts at the window W alone (`threshold`,
        # `keep_for`'s budget), never at a percentage of it.
        if reactive_only:
            self.axes = (Axis("context_window", "W"),)

    def threshold_off_from(self, path: Any) -> int | None:
        """Where the recording shows auto-compact switched off (module `threshold_off_from`), judged on
        this release's own count against its own threshold for the model, whatever the replayed
        window; only under a recorded release's rule (the file's own or --cli-version's)."""
        if self.reactive_only or self.rule is NEWEST or self.rule.threshold_needs_window:
            return None
        from sessiontools.policies.claude_code_recorded import threshold_off_from

        return threshold_off_from(path, rule_threshold(self.rule, context_window(self.model), self.model), self)

    def default_window(self) -> int:
        """The window this CLI assumed for the model: 1M for `[1m]` ids, else 200k."""
        return context_window(self.model)

    def recorded_window(self, settings: Mapping[str, Any]) -> int | None:
        """1M when the file shows a request answered with a prompt above 200k (Claude Code's only
        other window: the model ran with 1M, a `[1m]` id, the 1M beta or a gateway's model, whatever
        the id says); else not recorded."""
        largest = settings.get("largest_answered_prompt")
        return LONG_WINDOW if isinstance(largest, int) and largest > DEFAULT_WINDOW else None

    def threshold(self, settings: PolicySettings) -> int:
        if self.reactive_only:
            return settings.context_window
        if self.rule is not NEWEST:
            return rule_threshold(self.rule, settings.context_window, self.model, settings.get("autocompact_pct"),
                                  settings.get("max_output_tokens"))
        return claude_threshold(settings.context_window, settings.get("autocompact_pct"),
                                settings.get("max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS))

    def count(self, view: CountView) -> float:
        if self.rule.count is Count.USAGE:  # 2.0.x: the newest response's usage alone (0 before one)
            return float(view.last_usage_total or 0)
        if self.rule.count in _JS_COUNTS:  # size(): 4 x the per-block estimate
            items = view.trailing if view.last_usage_total is not None else view.context
            return (view.last_usage_total or 0) + sum(c for c, _ in items) / 4
        if view.last_usage_total is None:
            return float(estimate_chars(sum(c for c, _ in view.context), self.model))
        return view.last_usage_total + estimate_chars(sum(c for c, _ in view.trailing), self.model)

    def count_columns(self) -> tuple[Any, Any]:
        """`count` with a usage, as (term of a message, combine(usage total, the terms' sum))."""
        if self.rule.count is Count.USAGE:
            return _no_term, count_usage_alone
        if self.rule.count in _JS_COUNTS:
            return _chars_term, count_plus_quarter
        model = self.model
        return _chars_term, lambda last, chars: last + estimate_chars(chars, model)

    def tokens_before(self, view: CountView) -> int:
        if self.rule.count is not Count.USAGE_CEIL4_X4_3:  # the JS releases record their count
            return round(self.count(view))
        if view.last_usage_total is None:
            return recorded_chars(sum(c for c, _ in view.context))
        return round(view.last_usage_total) + recorded_chars(sum(c for c, _ in view.trailing))

    def size(self, message: Any) -> tuple[int, int]:
        if not self.rule.counts_attachments and _is_attachment(message):  # sent, not estimated by this release
            return 0, len(message.text.encode())
        if self.rule.count in _JS_COUNTS:
            per = bytes_per_token(self.model) if self.rule.count is Count.USAGE_ROUND_BPT_ALL else 4
            return 4 * js_tokens(message, self.rule.count, per), len(message.text.encode())
        return claude_chars(message), len(message.text.encode())

    def new_process(self, prompt: Any) -> bool:
        """A print-mode prompt (`print_mode_prompt`): the restored files, never written to the
        transcript, are gone when the next process reloads it."""
        return print_mode_prompt(prompt)

    def keep(self, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        """The preserved segment of a threshold (or manual) compaction: the last round(s) of the turn
        (2.1.332), nothing but the summary (the JS releases)."""
        if self.rule.keeps is Keeps.NOTHING:
            return Kept(())
        if self.rule.keeps is Keeps.READ_FILES:
            return Kept(restored_files(candidates), until_next_prompt=True)
        rounds = _rounds(candidates)
        kept = rounds[-THRESHOLD_KEPT_ROUNDS:] if THRESHOLD_KEPT_ROUNDS and rounds else []
        return Kept(tuple(c.index for r in kept for c in r))

    def keep_for(self, reason: str, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        """A reactive compaction (reason "overflow") keeps up to `REACTIVE_MAX_KEPT_ROUNDS` rounds,
        giving up the oldest while they exceed `REACTIVE_KEEP_FRACTION` of the window; the others `keep`."""
        if reason != "overflow" or self.rule.keeps is not Keeps.LAST_ROUND:
            return self.keep(candidates, settings)
        kept = _rounds(candidates)[-REACTIVE_MAX_KEPT_ROUNDS:]
        budget = REACTIVE_KEEP_FRACTION * settings.context_window
        while len(kept) > 1 and sum(c.tokens for r in kept for c in r) > budget:
            kept = kept[1:]
        return Kept(tuple(c.index for r in kept for c in r))


def claude_code_policy(name: str | PolicyName, version: str | None = None,
                       model: str | None = None) -> ClaudeCodePolicy:
    """The Policy object for `claude-code` or `claude-code-reactive` under `version`'s rule (None: the
    newest measured one) for `model`."""
    n = PolicyName(name)
    if n not in (PolicyName.CLAUDE_CODE, PolicyName.CLAUDE_CODE_REACTIVE):
        raise ValueError(f"{n} is not a Claude Code policy")
    return ClaudeCodePolicy(reactive_only=n == PolicyName.CLAUDE_CODE_REACTIVE,
                            rule=rule_for(version) if version else NEWEST, model=model)


def _no_term(size: tuple[int, int]) -> int:
    return 0



def _chars_term(size: tuple[int, int]) -> int:
    return size[0]

