"""Editing a Codex rollout's lines for `resummarize` (`policies.codex_resummarize`): where a
compaction's answer item is, where a new compaction goes, a recorded replacement history with a new
summary, new item ids, and 0.171's `ordinal`s counted again. Values in, values out."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sessiontools.policies import codex_compact as cc


def answer_lines(objects: Sequence[Mapping[str, Any] | None]) -> dict[int, int]:
    """compacted line -> the line of its answer (the assistant message recorded just before it)."""
    out: dict[int, int] = {}
    last_assistant = None
    for n, obj in enumerate(objects, 1):
        if obj is None:
            continue
        if obj.get("type") == "response_item":
            p = obj.get("payload") or {}
            last_assistant = n if p.get("type") == "message" and p.get("role") == "assistant" else None
        elif obj.get("type") == "compacted" and last_assistant is not None:
            out[n] = last_assistant
            last_assistant = None
    return out


def new_id(seed: str, what: str) -> str:
    h = hashlib.sha256(f"{seed}:{what}".encode()).hexdigest()
    return f"msg_{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def answer_of(summary_text: str) -> str:
    return summary_text[len(cc.summary_prefix()) + 1:]


def with_summary(replacement: Sequence[Mapping[str, Any]], text: str) -> list[dict[str, Any]]:
    """The recorded replacement history with its summary item's text replaced (ids kept)."""
    out = [dict(it) for it in replacement]
    for k in range(len(out) - 1, -1, -1):
        it = out[k]
        if it.get("type") == "message" and it.get("role") == "user" and cc.is_summary_text(cc.item_text(it)):
            content = list(it.get("content") or [{"type": "input_text"}])
            out[k] = {**it, "content": [{**content[0], "text": text}]}
            return out
    out.append(cc.message("user", text))
    return out


def next_items(objs: Sequence[Mapping[str, Any] | None]) -> dict[int, int]:
    """line L -> the line of the first response item after L (a new compaction goes right before it)."""
    out: dict[int, int] = {}
    nxt = len(objs) + 1
    for n in range(len(objs), 0, -1):
        out[n] = nxt
        obj = objs[n - 1]
        if obj is not None and obj.get("type") == "response_item":
            nxt = n
    return out


def timestamp(obj: Mapping[str, Any] | None) -> Any:
    return obj.get("timestamp") if obj is not None else None


def renumbered(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """0.171's lines carry an `ordinal` (their position): count again (lines were added or dropped)."""
    if not any("ordinal" in ln for ln in lines):
        return lines
    out = []
    for k, ln in enumerate(lines):
        rec = {"timestamp": ln.get("timestamp"), "ordinal": k}
        rec.update((key, v) for key, v in ln.items() if key not in ("timestamp", "ordinal"))
        out.append(rec)
    return out
