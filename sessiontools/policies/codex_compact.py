"""Codex's local compaction prompt at the pinned release (codex-rs `core/src/compact.rs`, 0.171.0).

A local ("inline") compaction sends the conversation so far with `COMPACT_PROMPT` as the last user
message to the Responses API; the model's last message is the summary, and the new history holds
the recent user messages and `SUMMARY_PREFIX` + "\\n" + the summary as a user message. The prompts
are data, kept as template files beside this module (`codex_prompts/0.171.0/`, from the pinned
binary; see the README there).

A remote compaction (`/responses/compact` on OpenAI's servers, `compaction_summary` items with
`encrypted_content`) is written by the provider: its request and its summary are not visible, so it
cannot be regenerated: `resummarize` says so per file. A local one is regenerated from the request
and result built below (`request_body`, `replacement_history`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from sessiontools.policies.codex import (
    APPROX_BYTES_PER_TOKEN,
    COMPACT_USER_MESSAGE_MAX_TOKENS,
    CONTEXTUAL_USER_PREFIXES,
    approx_tokens,
)

PROMPTS_DIR = Path(__file__).with_name("codex_prompts")
RELEASE = "0.171.0"
#: The releases whose local compaction is proven to be 0.171.0's: the recorded rollout of each
#: (sample_sessions/codex) regenerates byte for byte and its replacement histories are this rule's
#: (tests/cli/test_resummarize_codex.py). Not 0.121.0 (its replacement history places the turn's
#: initial context elsewhere), nor 0.63.0/0.77.0 (no replacement_history recorded, another rule).
PORTED_RELEASES = frozenset({"0.145.0", RELEASE})


@cache
def compact_prompt(release: str = RELEASE) -> str:
    """`SUMMARIZATION_PROMPT` of codex-rs (templates/compact/prompt.md), with its final newline."""
    return (PROMPTS_DIR / release / "prompt.md").read_text(encoding="utf-8")


@cache
def summary_prefix(release: str = RELEASE) -> str:
    """`SUMMARY_PREFIX` of codex-rs (templates/compact/summary_prefix.md), without a final newline."""
    text = (PROMPTS_DIR / release / "summary_prefix.md").read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text


#: Why a Codex rollout with remote compactions is not resummarized (said once per file).
REMOTE_REASON = ("its compactions ran on OpenAI's servers (remote compaction: the summary is encrypted and the "
                 "request is not visible), so they cannot be regenerated")



# -- the local compaction request and its result, as Codex 0.171.0 builds them ----------------------
#
# Measured against the real CLI (tests/e2e/test_codex_compact_requests.py: the lab logs the body the
# CLI sends): the request is a Responses call with no tools whose `input` is the base instructions as
# a developer message (without the sections on the `update_plan` tool, which a compaction request does
# not carry), then the history as Codex holds it, then the compact prompt as a user message. The
# result is the replacement history: the user messages of the history (newest first within 20,000
# tokens, then in order; Codex's own context messages and earlier summaries excluded), the turn's
# initial context (skills instructions, environment context) before the last of them, and the summary
# as a user message: `SUMMARY_PREFIX` + "\n" + the model's last assistant message.

#: What Codex strips from an item when it sends the history (its own bookkeeping in the rollout).
ROLLOUT_ONLY_KEYS = ("internal_chat_message_metadata_passthrough",)
#: Sections of the base instructions about the `update_plan` tool (absent from a compaction request).
PLAN_SECTIONS = ("## Planning", "## `update_plan`")


def approx_token_count(text: str) -> int:
    """codex-rs `truncate::approx_token_count`: UTF-8 bytes / 4, rounded up."""
    return approx_tokens(len(text.encode("utf-8", "surrogatepass")))


def truncate_text(text: str, max_tokens: int) -> str:
    """The middle of `text` cut to about `max_tokens` (a user message over the 20,000-token budget).
    Codex keeps a head and a tail around a "…N tokens truncated…" marker; the marker's exact wording
    is not checked against the binary (no sample reaches it)."""
    data = text.encode("utf-8", "surrogatepass")
    budget = max_tokens * APPROX_BYTES_PER_TOKEN
    if len(data) <= budget:
        return text
    head = data[: budget // 2].decode("utf-8", "ignore")
    tail = data[len(data) - budget // 2:].decode("utf-8", "ignore")
    removed = -(-(len(data) - len(head.encode()) - len(tail.encode())) // APPROX_BYTES_PER_TOKEN)
    return f"{head}…{removed} tokens truncated…{tail}"


def item_text(item: Mapping[str, Any]) -> str:
    """The text of a message item (its text parts joined, as codex-rs `content_items_to_text`)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [p.get("text") for p in content or () if isinstance(p, Mapping)]
    return "\n".join(t for t in parts if isinstance(t, str) and t)


def is_summary_text(text: str) -> bool:
    return text.startswith(summary_prefix() + "\n")


def is_context_message(item: Mapping[str, Any]) -> bool:
    """Codex's own injected context: developer messages, and user messages that are its context blocks
    (`policies.codex.CONTEXTUAL_USER_PREFIXES`: `<environment_context>`, `# AGENTS.md instructions`, ...)."""
    if item.get("type") != "message":
        return False
    if item.get("role") in ("developer", "system"):
        return True
    text = item_text(item).lstrip()
    return item.get("role") == "user" and text.startswith(CONTEXTUAL_USER_PREFIXES)


def is_user_message(item: Mapping[str, Any]) -> bool:
    """A message the user typed (codex-rs `collect_user_messages`: not context, not an earlier summary)."""
    return (item.get("type") == "message" and item.get("role") == "user" and not is_context_message(item)
            and not is_summary_text(item_text(item)))


def sent_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item of the history as Codex sends it (the rollout's bookkeeping keys removed)."""
    return {k: v for k, v in item.items() if k not in ROLLOUT_ONLY_KEYS}


def compaction_instructions(base_instructions: str) -> str:
    """The base instructions without the `update_plan` sections (a compaction request has no tools):
    each from its heading to the next `## ` heading, or to the end."""
    text = base_instructions
    for heading in PLAN_SECTIONS:
        start = text.find(heading) if text.startswith(heading) else text.find("\n" + heading)
        if start < 0:
            continue
        start += 0 if text.startswith(heading) and start == 0 else 1
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + (text[nxt + 1:] if nxt >= 0 else "")
    return text


def message(role: str, text: str, item_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "message"}
    if item_id is not None:
        msg["id"] = item_id
    msg.update({"role": role, "content": [{"type": "input_text", "text": text}]})
    return msg


def request_body(history: Sequence[Mapping[str, Any]], *, model: str, base_instructions: str | None,
                 session_id: str | None, release: str = RELEASE) -> dict[str, Any]:
    """The body of Codex's local compaction request (`POST /responses`), fields in Codex's order.
    Left out: `client_metadata` (installation, turn and window ids that no rollout records)."""
    items: list[dict[str, Any]] = []
    if base_instructions:
        items.append(message("developer", compaction_instructions(base_instructions)))
    items += [sent_item(it) for it in history]
    items.append(message("user", compact_prompt(release)))
    body: dict[str, Any] = {"model": model, "stream": True, "input": items, "tools": [], "tool_choice": "auto",
                            "parallel_tool_calls": False, "reasoning": {"summary": "auto"}, "store": False,
                            "include": ["reasoning.encrypted_content"]}
    if session_id:
        body["prompt_cache_key"] = session_id
    return body


#: The header Codex marks a compaction request with (the lab's Responses route reads `request_kind`).
def request_headers(trigger: str = "auto", phase: str = "mid_turn") -> dict[str, str]:
    meta = {"request_kind": "compaction",
            "compaction": {"trigger": trigger, "reason": "context_limit", "implementation": "responses",
                           "phase": phase, "strategy": "memento"}}
    return {"x-codex-turn-metadata": json.dumps(meta, separators=(",", ":"))}


def summary_text(answer: str, release: str = RELEASE) -> str:
    """The summary message's text: `SUMMARY_PREFIX` + "\\n" + the model's last assistant message."""
    return f"{summary_prefix(release)}\n{answer}"


def replacement_history(history: Sequence[Mapping[str, Any]], summary: str,
                        new_id: Callable[[str], str] | None = None,
                        max_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS) -> list[dict[str, Any]]:
    """The history after a local compaction (see above). The user messages keep their items; the
    initial context (the newest run of context messages) is copied before the last user message with
    ids from `new_id`; the summary is a new user message."""
    users = [it for it in history if is_user_message(it)]
    selected: list[dict[str, Any]] = []
    remaining = max_tokens
    for it in reversed(users):
        if remaining <= 0:
            break
        text = item_text(it)
        tokens = approx_token_count(text)
        if tokens <= remaining:
            selected.append(sent_item(it))
            remaining -= tokens
        else:
            cut = sent_item(it)
            cut["content"] = [{"type": "input_text", "text": truncate_text(text, remaining)}]
            selected.append(cut)
            break
    selected.reverse()
    context = _initial_context(history)
    ids = new_id or (lambda what: what)
    copies = [{**sent_item(it), "id": ids(f"context-{k}")} if "id" in it else sent_item(it)
              for k, it in enumerate(context)]
    out = selected[:-1] + copies + selected[-1:] if selected else copies
    out.append(message("user", summary or "(no summary available)", ids("summary")))
    return out


def _initial_context(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The newest run of consecutive context messages (what Codex injects at a turn's start)."""
    runs: list[list[Mapping[str, Any]]] = []
    current: list[Mapping[str, Any]] = []
    for it in history:
        if is_context_message(it):
            current.append(it)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs[-1] if runs else []


def last_assistant_text(output: Sequence[Mapping[str, Any]]) -> str:
    """codex-rs `get_last_assistant_message_from_turn`: the last assistant message's text."""
    for it in reversed(output):
        if it.get("type") == "message" and it.get("role") == "assistant":
            return item_text(it)
    return ""
