"""Codex's auto-compaction rule as a `Policy`, read like codex-rs/core, per CLI release.

The rule of the rollout's own release (`session_meta.cli_version`, `--cli-version` overrides it) is
a row of `policies.codex_rules` (measured on 35 releases, 0.40 - 0.171): before 0.95 the count is the
last response's total alone (plus, from 0.64, the encrypted reasoning of earlier turns), before 0.100
an explicit limit is not capped, 0.74 - 0.93 check only mid-turn, before 0.66 only a model codex-rs
knows has a default limit. Below, the newest row (0.163 - 0.171),
four parts, each with the codex-rs function it follows:

- **Limit** (`threshold`): `model_info.auto_compact_token_limit()` = min(`model_auto_compact_token_limit`,
  90% of the configured `model_context_window`) (codex-rs `openai_models` / `turn.rs`
  `auto_compact_token_status`, scope `Total`). The rollout does not record the configured window: its
  `token_count` events report 95% of it (`model_context_window` 60800 for a configured 64000), so the
  configured window at recorded settings is reported / 0.95 (`CodexPolicy.recorded_window`; before 0.49
  the whole window: `codex_rules`). The explicit
  limit is not recorded at all.
- **Count** (`count`): `ContextManager::get_total_token_usage` (`context_manager/history.rs`): the last
  response's `total_tokens` (input + output) plus `estimate_item_token_count` of every item after the
  newest model-generated item (`items_after_last_model_generated_item`); an item's estimate is
  ceil(bytes / 4) (`approx_tokens_from_byte_count`), an encrypted reasoning item 3/4 of its payload
  minus 650 (`estimate_reasoning_length`). **Measured on 0.171.0** (`RUST_LOG=codex_core=trace`, its
  `post sampling token usage` line, at all 42 checks of a recording of `codex-pair-b`): a tool
  output counts `len(call_id)` + the UTF-8 bytes of its output text, not the `serde_json` length
  of the item the source of that time suggests (no JSON wrapper, no escapes: 15 + bytes with 15-char
  call ids, 38 + bytes with 38-char ones). Other items are counted as their `serde_json` length
  (`id` and the internal metadata are `skip_serializing`), unmeasured.
- **When** (`check_points`, `fires`): `token_limit_reached = count >= limit`. Checked before sampling a
  turn, *before* the turn's context updates and new user message are recorded (`run_turn` ->
  `run_pre_sampling_compact`), and after each sampling request when a follow-up is needed (a tool
  output to answer: `run_turn`'s `token_limit_reached && needs_follow_up`, mid-turn). No check after
  a final answer, and never reactive: `context_length_exceeded` fails the turn.
- **What stays** (`keep`): `compact.rs` `build_compacted_history`: the initial context (base
  instructions, developer messages, contextual user messages such as `<environment_context>`), the
  real user messages newest first up to `COMPACT_USER_MESSAGE_MAX_TOKENS` (the oldest one that
  overflows is truncated to the rest of the budget), then the summary.

`tokens_before` is the last response's `total_tokens`, what the Codex reader records on a compaction.
Over other agents' transcripts (Pi, Claude Code) a message is sized as the Codex item it would be (a
`message` or a `function_call_output` around its text), answering "what would Codex's rule have done
to this session".
"""

from __future__ import annotations

import json
from bisect import bisect_left
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
    count_plus,
)
from sessiontools.policies.codex_rules import FALLBACK_WINDOW, NEWEST, CodexRule, rule_for
from sessiontools.policies.codex_rules import context_window as codex_context_window
from sessiontools.read.values import iso_seconds
from sessiontools.transcript.codex import output_text

#: `auto_compact_token_limit()` defaults to this fraction of the configured window.
AUTO_COMPACT_WINDOW_FRACTION = 0.9
#: `compact.rs`: the user messages kept after a compaction, in approximate tokens.
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
#: `codex_utils_output_truncation`: the bytes-per-token heuristic (ceil division).
APPROX_BYTES_PER_TOKEN = 4
#: `estimate_reasoning_length`: encrypted payload bytes * 3/4 minus this.
ENCRYPTED_REASONING_OVERHEAD = 650
#: serde `skip_serializing` fields of `ResponseItem` that the rollout writes.
NOT_SERIALIZED = ("id", "internal_chat_message_metadata_passthrough")
#: Text that opens a contextual user message (`is_contextual_user_message_content`): initial context.
CONTEXTUAL_USER_PREFIXES = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<user_shell_command>",
    "<turn_aborted>", "<subagent_notification>", "<skill>", "<permissions instructions>",
)
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
#: A pre-turn compaction is written at most this many seconds before its turn's prompt (lab: <= 0.1 s).
PRE_TURN_PROMPT_GAP = 1.0
#: A tool call id when another agent's transcript has none (OpenAI's are `call_` + 24 characters).
DEFAULT_CALL_ID_BYTES = 29


def approx_tokens(nbytes: int) -> int:
    """`approx_tokens_from_byte_count`: ceil(bytes / 4)."""
    return -(-max(nbytes, 0) // APPROX_BYTES_PER_TOKEN)


def default_limit(context_window: int) -> int:
    """90% of the configured window (`auto_compact_token_limit` with no explicit limit)."""
    return int(context_window * AUTO_COMPACT_WINDOW_FRACTION)


def _serialized(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))




def item_bytes(item: Mapping[str, Any], json_tool_outputs: bool = False, whole_item: bool = False) -> int:
    """`estimate_response_item_model_visible_bytes` of one Codex response item (as the rollout has it;
    tool outputs as measured on 0.171, see the module docstring, or, `json_tool_outputs`, as the
    `serde_json` length of the item, as 0.100 - 0.145 count them; `whole_item`: every field the
    rollout writes, `id` and `internal_chat_message_metadata_passthrough` included, as 0.150 - 0.155
    count them)."""
    kind = item.get("type")
    encrypted = item.get("encrypted_content")
    if kind in ("reasoning", "compaction", "context_compaction", "compaction_summary") and isinstance(encrypted, str):
        return max(len(encrypted) * 3 // 4 - ENCRYPTED_REASONING_OVERHEAD, 0)
    if whole_item:
        return _serialized(dict(item))
    if kind == "message":
        return _serialized({"type": kind, "role": item.get("role"), "content": item.get("content")})
    if kind in TOOL_OUTPUTS and json_tool_outputs:
        return _serialized({"type": kind, "call_id": item.get("call_id"), "output": item.get("output")})
    if kind in TOOL_OUTPUTS:
        return len(str(item.get("call_id") or "").encode("utf-8")) + len(output_text(item.get("output")).encode("utf-8"))
    return _serialized({k: v for k, v in item.items() if k not in NOT_SERIALIZED})


def is_codex_item(raw: Any) -> bool:
    return isinstance(raw, Mapping) and isinstance(raw.get("type"), str) and "payload" not in raw


def message_bytes(role: str, text: str, raw: Any, call_id: str | None = None, json_tool_outputs: bool = False,
                  whole_item: bool = False) -> int:
    """Bytes Codex would count for a message: its own item's, or the item another agent's message
    would be in a Codex history (`whole_item` is then the `serde_json` item: it has no other fields)."""
    if is_codex_item(raw):
        return item_bytes(raw, json_tool_outputs, whole_item)
    if role == "tool" and (json_tool_outputs or whole_item):
        return _serialized({"type": "function_call_output", "call_id": call_id or "x" * DEFAULT_CALL_ID_BYTES,
                            "output": text})
    if role == "tool":
        return (len(call_id.encode("utf-8")) if call_id else DEFAULT_CALL_ID_BYTES) + len(text.encode("utf-8"))
    part = "output_text" if role == "assistant" else "input_text"
    return _serialized({"type": "message", "role": "developer" if role == "system" else role,
                        "content": [{"type": part, "text": text}]})


def is_contextual(text: str) -> bool:
    return text.lstrip().startswith(CONTEXTUAL_USER_PREFIXES)


def _followed_by_prompt(path: Any, index: int) -> Any:
    """The user's prompt that follows message `index` before any request (None: a request comes
    first, or nothing follows)."""
    req = next((r.index for r in path.requests if r.index > index), None)
    for m in path.messages[index + 1:req]:
        if is_user_turn_boundary(m):
            return m
    return None


def is_user_turn_boundary(message: Any) -> bool:
    """`is_user_turn_boundary`: a real user message (not initial context Codex writes itself)."""
    return message.role.value == "user" and not is_contextual(message.text)


def ends_reasoning_scope(message: Any, any_user: bool) -> bool:
    """A user-role item `get_non_last_reasoning_items_tokens` stops at: a real prompt, a user message
    Codex writes itself inside a turn (the shell `apply_patch` warning: Role.OTHER here, a user message
    to codex-rs) and, where `any_user` (0.64 - 0.116: `role == "user"`, before `is_user_turn_boundary`),
    the initial context Codex writes as user messages too."""
    raw = message.raw
    if isinstance(raw, Mapping) and raw.get("type") == "message":
        return raw.get("role") == "user" and (any_user or not is_contextual(message.text))
    return is_user_turn_boundary(message)


def past_reasoning(messages: Sequence[Any], any_user: bool = False) -> int:
    """`ContextManager::get_non_last_reasoning_items_tokens`: the estimate (`estimate_reasoning_length`,
    bytes/4 per item) of the encrypted reasoning items before the newest user message
    (`ends_reasoning_scope`). The API leaves a finished turn's reasoning out of the next turns' input
    tokens, so the last response's total does not hold it; Codex adds it unless the server says it did
    (`x-reasoning-included`, which the rollout does not record: real rollouts are read without it).
    Real rollouts: a 0.77 mid-turn compaction at a last total of 158,120 (+91,608) and a 0.105 pre-turn
    one at 194,859 (+50,142) for a limit of 244,800 fire only so."""
    last = next((k for k in range(len(messages) - 1, -1, -1) if ends_reasoning_scope(messages[k], any_user)), None)
    if last is None:
        return 0
    total = 0
    for m in messages[:last]:
        raw = m.raw
        if isinstance(raw, Mapping) and raw.get("type") == "reasoning" and isinstance(raw.get("encrypted_content"), str):
            total += approx_tokens(item_bytes(raw))
    return total


class CodexPolicy(Policy):
    """codex-rs's auto-compaction under one release's rule (`rule`, `policies.codex_rules`; default the
    newest, 0.171's: see the module docstring)."""

    name = PolicyName.CODEX
    check_points = frozenset({CheckPoint.BEFORE_SAMPLING, CheckPoint.BETWEEN_TURNS})
    reactive = False
    pre_turn_excludes_input = True
    fires_at_threshold = True  # compact.rs: at or above the limit
    model: str | None = None
    version: str | None = None
    rule: CodexRule = NEWEST

    def default_window(self) -> int | None:
        """codex-rs's window for the model when the rollout records none (gpt-5*, codex-*: 272000; the
        release's own catalogue where it lists the model; from 0.99 any other model 272000). A model the
        release knew no window for (before 0.99) is replayed at that fallback too, rather than refused."""
        if not self.model:
            return None
        return codex_context_window(self.model, self.version) or FALLBACK_WINDOW

    def recorded_window(self, settings: Mapping[str, Any]) -> int | None:
        """The configured window behind the rollout's reported `model_context_window` (reported / 0.95)."""
        reported = settings.get("model_context_window")
        if type(reported) is not int or reported <= 0:
            return None
        # a fact about the file: the fraction of the release that wrote it (before 0.49: the whole window)
        return round(reported / rule_for(settings.get("cli_version")).reported_window_fraction)
    trims_summary_request = True  # compact.rs: remove_first_item() until the compaction request fits
    axes = (Axis("context_window", "W"), Axis("auto_compact_limit", "auto-compact limit"))

    def grid_extras(self, **options: Any) -> list[tuple[tuple[str, Any], ...]]:
        return [(("auto_compact_limit", lim),) if lim is not None else () for lim in options.get("limits") or (None,)]

    def threshold(self, settings: PolicySettings) -> int:
        """The release's limit: an explicit one (capped at 90% of the window from 0.100 on), else 90% of
        the window. Before 0.77 only a model codex-rs knows has a default, 90% of *its own* window
        (244800 for gpt-5*, whatever the configured one); with no limit at all, W + 1 (nothing compacts
        below the window: Codex runs out of room)."""
        limit = default_limit(settings.context_window)
        explicit = settings.get("auto_compact_limit")
        if explicit is not None:
            return min(int(explicit), limit) if self.rule.explicit_capped else int(explicit)
        if self.rule.default_any_model:
            return limit
        if self.rule.own_limits is not None:  # before 0.49: the model's own limit, if it has one
            m = (self.model or "").lower()
            return next((lim for prefix, lim in self.rule.own_limits if m.startswith(prefix)),
                        settings.context_window + 1)
        own = codex_context_window(self.model, self.version)
        return default_limit(own) if own is not None else settings.context_window + 1

    def summary_tokens(self, default: float, recorded: Sequence[tuple[float, float]], history: float) -> float:
        """`compact.rs` summarises the whole history, the previous summary included, so a summary grows
        with the history it covers: interpolated between the recorded compactions' (workload tokens,
        summary tokens), from (0, 0) to the first, the newest one's size past the last (none recorded:
        `default`). Measured on the lab pairs (`sample_sessions/codex/codex-pair-*`): the 20k
        recording's summaries are 1,186 - 1,862 tokens; the 28k one's two predict 1,236 - 1,841."""
        if not recorded:
            return default
        xs = [x for x, _ in recorded]
        if history >= xs[-1]:
            return recorded[-1][1]
        j = bisect_left(xs, history)
        x0, y0 = recorded[j - 1] if j else (0.0, 0.0)
        x1, y1 = recorded[j]
        return y0 + (y1 - y0) * (history - x0) / (x1 - x0) if x1 > x0 else y1

    def user_compactions(self, path: Any) -> frozenset[int]:
        """Codex's rollouts do not say who compacted (before the turn trigger 0.17x records), but its
        own compactions lie where it checks: mid-turn and 0.63's after-answer check go on with a request
        of the same turn, a pre-turn one is written just before the prompt of its turn (within 0.1 s in
        every lab recording, 1 ms in a real 0.105 one). A compaction followed by the user's next prompt
        with no request between is the user's `/compact` when the release has no pre-turn check (0.74 -
        0.93: a real 0.77 one at a last total of 80,734, limit 244,800) or when the prompt comes more
        than `PRE_TURN_PROMPT_GAP` seconds later (a real 0.64 one, 56 s, at 49,080)."""
        out = set()
        for k, c in enumerate(path.compactions):
            follow = _followed_by_prompt(path, c.index)
            if follow is None:
                continue
            at, prompt = iso_seconds(c.timestamp), iso_seconds(follow.timestamp)
            if not self.rule.pre_turn_check or (at is not None and prompt is not None and prompt - at > PRE_TURN_PROMPT_GAP):
                out.add(k)
        return frozenset(out)

    def pre_turn_recorded(self, new_input: Sequence[Any], previous: Any = None) -> int:
        """0.110 on: the pre-turn check runs before the turn's context updates and prompt are recorded
        (none of them); 0.94, 0.99 and 0.100 (`context_before_pre_turn_check`): after the initial context a
        resumed turn writes again (the leading developer and contextual user messages), before the
        prompt. The initial context written right after a compaction (`previous` is its summary; a
        real 0.105 rollout's pre-turn compaction) is that compaction's doing: the check precedes it."""
        after_summary = previous is not None and previous.role.value == "summary"
        if not self.pre_turn_excludes_input or not self.rule.context_before_pre_turn_check or after_summary:
            return super().pre_turn_recorded(new_input, previous)
        n = 0
        for m in new_input:
            if not (m.role.value == "system" or (m.role.value == "user" and is_contextual(m.text))):
                break
            n += 1
        return n

    def size(self, message: Any) -> tuple[int, int]:
        role = message.role.value
        return len(message.text), message_bytes(role, message.text, message.raw, message.id,
                                                self.rule.json_tool_outputs, self.rule.whole_item)

    @property
    def count_reads_messages(self) -> bool:
        return self.rule.counts_past_reasoning

    def count(self, view: CountView) -> float:
        """0.171: the last response's total + bytes/4 of the items after it (of the whole context when
        there is none since the compaction); before: that total alone. From 0.64 on, both plus the
        estimate of the encrypted reasoning before the newest user turn (`past_reasoning`)."""
        past = past_reasoning(view.messages, self.rule.reasoning_scope_any_user) \
            if view.last_usage_total is not None and self.rule.counts_past_reasoning else 0
        if view.last_usage_total is not None and not self.rule.count_trailing:
            return view.last_usage_total + past
        items = view.trailing if view.last_usage_total is not None else view.context
        return (view.last_usage_total or 0.0) + past + sum(approx_tokens(b) for _, b in items)

    def count_columns(self) -> tuple[Any, Any] | None:
        """`count` with a usage, as (term of an item, combine(usage total, the terms' sum)); None where it
        reads the items themselves (the past reasoning, from 0.64 on)."""
        if self.rule.counts_past_reasoning:
            return None
        if not self.rule.count_trailing:
            return _no_term, count_plus
        return _bytes_term, count_plus

    def tokens_before(self, view: CountView) -> int:
        return round(view.last_usage_total) if view.last_usage_total is not None else round(self.count(view))

    def keep(self, candidates: Sequence[Candidate], settings: PolicySettings) -> Kept:
        kept: list[int] = []
        notes: list[str] = []
        context_seen: set[str] = set()
        budget = settings.get("user_message_max_tokens", COMPACT_USER_MESSAGE_MAX_TOKENS)
        for c in reversed(candidates):
            msg = c.message
            text = msg.text if msg is not None else ""
            user = c.role == "user" or (c.role == "other" and isinstance(msg.raw if msg else None, Mapping)
                                        and msg.raw.get("role") == "user")  # a user item Codex wrote itself
            if c.role in ("system",) or (user and is_contextual(text)):
                # initial context: Codex writes the current one into the new history, once (a copy it
                # wrote again after an earlier compaction, 0.121, is the same message)
                if text not in context_seen:
                    kept.append(c.index)
                context_seen.add(text)
            elif user and budget > 0:
                kept.append(c.index)
                need = approx_tokens(len(text.encode("utf-8")))
                if need > budget:
                    notes.append(f"user message {c.index} truncated to {budget} tokens")
                budget -= need
        return Kept(tuple(sorted(kept)), notes)


def codex_policy(version: str | None = None, model: str | None = None) -> CodexPolicy:
    """Codex's rule for `version` (`policies.codex_rules.rule_for`; None: the newest measured) and
    `model` (its window when the rollout records none, and whether 0.63 gives it a limit)."""
    pol = CodexPolicy()
    pol.model = model
    pol.version = version
    pol.rule = rule_for(version)
    if not pol.rule.pre_turn_check:
        pol.check_points = frozenset({CheckPoint.BETWEEN_TURNS})
    return pol


def _no_term(size: tuple[int, int]) -> int:
    return 0


def _bytes_term(size: tuple[int, int]) -> int:
    return approx_tokens(size[1])

