"""Codex's local compaction prompt at the pinned release (codex-rs `core/src/compact.rs`, 0.171.0).

A local ("inline") compaction sends the conversation so far with `COMPACT_PROMPT` as the last user
message to the Responses API; the model's last message is the summary, and the new history holds
the recent user messages and `SUMMARY_PREFIX` + "\\n" + the summary as a user message. The prompts
are data, kept as template files beside this module (`codex_prompts/0.171.0/`, from the pinned
binary; see the README there).

A remote compaction (`/responses/compact` on OpenAI's servers, `compaction_summary` items with
`encrypted_content`) is written by the provider: its request and its summary are not visible, so it
cannot be regenerated. `resummarize` does not regenerate Codex compactions yet: it says so per file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).with_name("codex_prompts")
RELEASE = "0.171.0"


@cache
def compact_prompt(release: str = RELEASE) -> str:
    """`SUMMARIZATION_PROMPT` of codex-rs (templates/compact/prompt.md), with its final newline."""
    return (PROMPTS_DIR / release / "prompt.md").read_text(encoding="utf-8")


@cache
def summary_prefix(release: str = RELEASE) -> str:
    """`SUMMARY_PREFIX` of codex-rs (templates/compact/summary_prefix.md), without a final newline."""
    text = (PROMPTS_DIR / release / "summary_prefix.md").read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text


#: Why a Codex rollout is not resummarized (said once per file).
REMOTE_REASON = ("its compactions ran on OpenAI's servers (remote compaction: the summary is encrypted and the "
                 "request is not visible), so they cannot be regenerated")
LOCAL_REASON = (f"regenerating Codex's local compactions is not supported yet (its compact prompt of {RELEASE} is "
                "ported in sessiontools/policies/codex_compact.py; the rollout replay and writer are missing)")
