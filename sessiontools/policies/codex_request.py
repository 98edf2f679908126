"""Codex's local compaction as `resummarize` sends it (codex-rs 0.171.0): the request shape (the
Responses body `policies.codex_compact.request_body` builds and Codex's headers), what Codex keeps
of the answer (its last assistant message), and which rollouts the port can regenerate."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sessiontools.policies import codex_compact as cc
from sessiontools.policies.summary_request import ResponsesRequest
from sessiontools.read.codex.records import Compacted, Rollout


class CodexKind(StrEnum):
    COMPACT = "compact"


@dataclass(frozen=True, slots=True)
class CodexRequest(ResponsesRequest):
    """One local compaction request: the Responses body and Codex's headers."""

    kind: CodexKind = CodexKind.COMPACT
    max_tokens: int | None = None  # Codex sends no output limit

    @property
    def system(self) -> str:
        """The developer (base instructions) text, for the size estimates of the report."""
        items = self.body.get("input") or []
        return cc.item_text(items[0]) if items and items[0].get("role") == "developer" else ""

    @property
    def user(self) -> str:
        """The text of every other item (messages, calls, outputs), for the size estimates."""
        items = self.body.get("input") or []
        start = 1 if items and items[0].get("role") == "developer" else 0
        return "\n".join(_item_chars(it) for it in items[start:])


def _item_chars(item: Mapping[str, Any]) -> str:
    if item.get("type") == "message":
        return cc.item_text(item)
    if item.get("type") == "function_call":
        return f"{item.get('name', '')}{item.get('arguments', '')}"
    out = item.get("output")
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False) if out is not None else ""



def codex_unsupported(rollout: Rollout) -> str | None:
    """None when the rollout's compactions can be regenerated; else why not (said once per file)."""
    remote = [r for r in rollout.records if isinstance(r, Compacted) and r.encrypted]
    if remote:
        return f"{len(remote)} remote compaction(s): {cc.REMOTE_REASON}"
    versions = {m.cli_version for m in rollout.metas if m.cli_version}
    other = sorted(versions - cc.PORTED_RELEASES)
    if other:
        return (f"written by Codex {', '.join(other)}: only the local compaction of Codex "
                f"{', '.join(sorted(cc.PORTED_RELEASES))} is ported (other releases build the history after a "
                "compaction differently, or record none)")
    return None



def reply_text(content: list[Any]) -> str:
    """What Codex keeps of a Responses answer's output items: the last assistant message's text."""
    return cc.last_assistant_text([it for it in content if isinstance(it, dict)])
