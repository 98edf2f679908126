"""Pi's summarisation request, exactly: what `compact` sends for a `Preparation`, and how it
assembles the answers into the summary it records.

The specification is Pi's own `core/compaction/compaction.js` (`generateSummary`,
`generateTurnPrefixSummary`, `compact`) and `utils.js` (`SUMMARIZATION_SYSTEM_PROMPT`) of
@mariozechner/pi-coding-agent 0.73.1 and @earendil-works/pi-coding-agent 1.6.0. The prompts are data,
kept as template files beside this module (`prompts/<release>/`, copied byte for byte from those
releases; `tests/policies/test_summarize.py` checks them against the installed packages).

One compaction is one or two model calls, each with the summarisation system prompt and a single
user message:

* the **history** request: `<conversation>\\n{serialized}\\n</conversation>\\n\\n`, then
  `<previous-summary>\\n{previous}\\n</previous-summary>\\n\\n` when a previous summary exists (a
  non-empty string: JavaScript truthiness), then `SUMMARIZATION_PROMPT` or
  `UPDATE_SUMMARIZATION_PROMPT`;
* for a **split turn** with a non-empty turn prefix, a **turn-prefix** request over the prefix
  (0.x: `<conversation>` tags and the "PREFIX of a turn" prompt; 1.x: `# Conversation` /
  `# Instructions` headings and the "concise checkpoint" prompt). When a split turn has nothing
  before the turn to summarise, no history request is sent: 0.x takes "No prior history.", 1.x the
  previous summary, else "No prior history.".

The recorded summary is `{history}\\n\\n---\\n\\n**Turn Context (split turn):**\\n\\n{prefix}` for a
split turn (else the history text), then Pi's `<read-files>`/`<modified-files>` tail.

Output limit (`maxTokens`): 0.73.1 asks for `floor(0.8 * reserveTokens)` (the turn prefix
`floor(0.5 * reserveTokens)`); 1.6.0 passes none, so pi-ai's `buildBaseOptions` uses the model's
`maxTokens`, clamped to the room the window leaves after its 3.5-characters-per-token estimate of
the request (`clampMaxTokensToContext`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from sessiontools.jsvalues import js_truthy, utf16_len
from sessiontools.policies.pi.prepare import Preparation
from sessiontools.policies.pi.serialize import _js_str, compute_file_lists, format_file_operations

PROMPTS_DIR = Path(__file__).with_name("prompts")
#: The Pi release whose prompts and limits each major version follows.
RELEASES = {"0": "0.73.1", "1": "1.6.0"}

NO_PRIOR_HISTORY = "No prior history."
TURN_CONTEXT_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"

#: 0.73.1 `generateSummary` / `generateTurnPrefixSummary`: shares of reserveTokens asked as output.
HISTORY_MAX_TOKENS_SHARE = 0.8
TURN_PREFIX_MAX_TOKENS_SHARE = 0.5
#: 1.6.0 pi-ai `simple-options.js` (`clampMaxTokensToContext`, `estimate.js`).
CHARS_PER_TOKEN = 3.5
CONTEXT_SAFETY_TOKENS = 4096
CONTEXT_SAFETY_RATIO = 0.15
MIN_OUTPUT_WITH_RATIO_MARGIN = 32768
#: The model's `maxTokens` when none is given: what the lab's models.json (lab/driver.py) declares.
DEFAULT_MODEL_MAX_TOKENS = 4096


class RequestKind(StrEnum):
    """Which of Pi's summarisation prompts a request uses."""

    INITIAL = "initial"
    UPDATE = "update"
    TURN_PREFIX = "turn_prefix"


@dataclass(frozen=True, slots=True)
class Prompts:
    """The four texts of one Pi release (or a user's replacement for the initial/update prompt)."""

    system: str
    initial: str
    update: str
    turn_prefix: str


def _read_prompt(release: str, name: str) -> str:
    text = (PROMPTS_DIR / release / f"{name}.md").read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text  # the files end with one newline Pi's strings lack


@cache
def prompts_version(policy: str) -> str:
    """The Pi release line ("0" or "1") whose summary prompts a replay of `policy` writes with: 1.x's
    for `pi-1`, 0.x's for every other policy (a Codex chain writes with its own prompt)."""
    return "1" if str(policy) == "pi-1" else "0"


def pi_prompts(pi_version: str) -> Prompts:
    """The prompts Pi `pi_version` ("0" or "1") ships."""
    release = RELEASES[pi_version]
    return Prompts(*(_read_prompt(release, n) for n in ("system", "initial", "update", "turn_prefix")))


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summarisation call as Pi makes it: system prompt, the single user message, output limit."""

    kind: RequestKind
    system: str
    user: str
    max_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "system": self.system, "user": self.user, "max_tokens": self.max_tokens}


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """The model's window and declared output limit (1.x derives its `maxTokens` from them)."""

    context_window: int
    max_tokens: int = DEFAULT_MODEL_MAX_TOKENS


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """The calls one compaction makes and how their answers become the recorded summary."""

    pi_version: str
    history: SummaryRequest | None
    #: the history text used when no history request is sent (a split turn with nothing before it)
    history_fallback: str | None
    turn_prefix: SummaryRequest | None
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]

    @property
    def requests(self) -> tuple[SummaryRequest, ...]:
        return tuple(r for r in (self.history, self.turn_prefix) if r is not None)

    def assemble(self, history_text: str | None, turn_prefix_text: str | None) -> str:
        """Pi's `compact`: the summary it records, from the answers to `requests`."""
        history = history_text if self.history is not None else self.history_fallback
        if self.turn_prefix is not None:
            summary = f"{_js_str(history)}{TURN_CONTEXT_SEPARATOR}{turn_prefix_text}"
        else:
            summary = history or ""
        return summary + format_file_operations(self.read_files, self.modified_files)

    def details(self) -> dict[str, list[str]]:
        return {"readFiles": list(self.read_files), "modifiedFiles": list(self.modified_files)}


def _estimate_text_tokens(text: str) -> int:
    return math.ceil(utf16_len(text) / CHARS_PER_TOKEN)


def clamp_max_tokens_v1(limits: ModelLimits, system: str, user: str) -> int:
    """pi-ai 1.6.0 `clampMaxTokensToContext(model, context, model.maxTokens)` for a system prompt and
    one user text message (no usage in the context: every message is estimated)."""
    max_tokens = limits.max_tokens
    if limits.context_window <= 0:
        return max(1, max_tokens)
    tokens = (_estimate_text_tokens(system) if system else 0) + _estimate_text_tokens(user)
    margin = max(CONTEXT_SAFETY_TOKENS, math.ceil(tokens * CONTEXT_SAFETY_RATIO))
    room = limits.context_window - tokens - margin
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(MIN_OUTPUT_WITH_RATIO_MARGIN, limits.context_window - tokens - CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))


def _max_tokens(pi_version: str, share: float, reserve: int, limits: ModelLimits, system: str, user: str) -> int:
    if pi_version == "0":
        return math.floor(share * reserve)
    return clamp_max_tokens_v1(limits, system, user)


def history_request(
    prep: Preparation, previous_summary: Any, limits: ModelLimits, prompts: Prompts | None = None,
) -> SummaryRequest:
    """`generateSummary(messagesToSummarize, ..., previousSummary)` of Pi `prep.pi_version`."""
    p = prompts or pi_prompts(prep.pi_version)
    has_previous = js_truthy(previous_summary)
    text = f"<conversation>\n{prep.serialized()}\n</conversation>\n\n"
    if has_previous:
        text += f"<previous-summary>\n{_js_str(previous_summary)}\n</previous-summary>\n\n"
    text += p.update if has_previous else p.initial
    kind = RequestKind.UPDATE if has_previous else RequestKind.INITIAL
    mt = _max_tokens(prep.pi_version, HISTORY_MAX_TOKENS_SHARE, prep.settings.reserve_tokens, limits, p.system, text)
    return SummaryRequest(kind, p.system, text, mt)


def turn_prefix_request(prep: Preparation, limits: ModelLimits, prompts: Prompts | None = None) -> SummaryRequest:
    """`generateTurnPrefixSummary(turnPrefixMessages, ...)` of Pi `prep.pi_version`."""
    p = prompts or pi_prompts(prep.pi_version)
    conversation = prep.serialized_turn_prefix()
    if prep.pi_version == "0":
        text = f"<conversation>\n{conversation}\n</conversation>\n\n{p.turn_prefix}"
    else:
        text = f"# Conversation\n{conversation}\n\n# Instructions\n{p.turn_prefix}"
    mt = _max_tokens(prep.pi_version, TURN_PREFIX_MAX_TOKENS_SHARE, prep.settings.reserve_tokens, limits, p.system,
                     text)
    return SummaryRequest(RequestKind.TURN_PREFIX, p.system, text, mt)


def plan_summary(
    prep: Preparation, previous_summary: Any, limits: ModelLimits, prompts: Prompts | None = None,
) -> SummaryPlan:
    """Pi's `compact(preparation)` with `previous_summary` in place of `prep.previous_summary` (a
    chain of regenerated summaries passes its own): the requests it sends and its assembly."""
    read, modified = compute_file_lists(prep.file_ops)
    split = prep.is_split_turn and len(prep.turn_prefix_messages) > 0
    history: SummaryRequest | None = None
    fallback: str | None = None
    if not split or prep.messages_to_summarize:
        history = history_request(prep, previous_summary, limits, prompts)
    elif prep.pi_version == "0":
        fallback = NO_PRIOR_HISTORY
    else:  # 1.x: `previousSummary ?? "No prior history."`
        fallback = NO_PRIOR_HISTORY if previous_summary is None else previous_summary
    prefix = turn_prefix_request(prep, limits, prompts) if split else None
    return SummaryPlan(prep.pi_version, history, fallback, prefix, tuple(read), tuple(modified))


def answer_text(blocks: list[Any]) -> str:
    """The text Pi keeps from a reply: its text blocks joined by newlines (both releases)."""
    return "\n".join(_js_str(b.get("text")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


__all__ = [
    "ModelLimits",
    "Prompts",
    "RequestKind",
    "SummaryPlan",
    "SummaryRequest",
    "answer_text",
    "clamp_max_tokens_v1",
    "history_request",
    "pi_prompts",
    "plan_summary",
    "turn_prefix_request",
]
