"""Builders for Pi sessions and messages, shared by the test suite and by users' own tests.

    b = SessionBuilder()
    u = b.user("fix the bug in src/app.py")
    a = b.assistant("reading", tool_calls=[("read", {"path": "src/app.py"})], usage=b.usage(1200))
    b.tool_result(a, "read", "print('hi')")
    session = b.session()          # a sessiontools.read.Session, read through the real reader

Ids are deterministic (`e0001`, ...), timestamps advance by one second per entry, and every
entry's parent is the current leaf unless `branch(from_id)` moved it. `records(version=1)` gives
the legacy linear format (no ids, `firstKeptEntryIndex`), `records(version=2)` the v2 format
(`hookMessage` role for custom messages).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from sessiontools.read import Session, read_bytes

_T0 = datetime(2025, 1, 1, tzinfo=UTC)
_ZERO_USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_block(data: str = "iVBORw0KGgo=", mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def usage(
    prompt: int, output: int = 100, *, cache_read: int = 0, cache_write: int = 0, total: int | None = None, cost: float = 0.0
) -> dict[str, Any]:
    """An assistant usage object whose prompt side (input + cacheRead + cacheWrite) is `prompt`."""
    inp = max(0, prompt - cache_read - cache_write)
    tot = inp + output + cache_read + cache_write if total is None else total
    return {
        "input": inp,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": tot,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


class SessionBuilder:
    """Append entries the way Pi's SessionManager does (each a child of the current leaf)."""

    def __init__(self, session_id: str = "sess-0001", cwd: str = "/work/project", *, provider: str = "anthropic",
                 model: str = "claude-sonnet-4-5", api: str = "anthropic-messages") -> None:
        self.header = {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(_T0), "cwd": cwd}
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.provider, self.model, self.api = provider, model, api
        self._n = 0
        self._calls = 0

    # ------------------------------------------------------------------ plumbing
    def _ts(self) -> datetime:
        return _T0 + timedelta(seconds=self._n)

    def add(self, entry_type: str, **fields: Any) -> str:
        """Append a raw entry of any type (unknown types too) and make it the leaf."""
        self._n += 1
        eid = f"e{self._n:04d}"
        entry = {"type": entry_type, "id": eid, "parentId": self.leaf, "timestamp": _iso(self._ts()), **fields}
        self.entries.append(entry)
        self.leaf = eid
        return eid

    def message(self, message: Mapping[str, Any]) -> str:
        msg = dict(message)
        msg.setdefault("timestamp", int(self._ts().timestamp() * 1000))
        return self.add("message", message=msg)

    def branch(self, from_id: str | None) -> SessionBuilder:
        """Continue from an earlier entry (Pi's `SessionManager.branch`)."""
        self.leaf = from_id
        return self

    usage = staticmethod(usage)

    # ------------------------------------------------------------------ messages
    def user(self, content: str | list[dict[str, Any]]) -> str:
        return self.message({"role": "user", "content": content})

    def assistant(
        self,
        text: str | None = "ok",
        *,
        tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
        thinking: str | None = None,
        usage: Mapping[str, Any] | None = None,
        stop_reason: str | None = None,
        error: str | None = None,
    ) -> str:
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append(text_block(text))
        calls = list(tool_calls)
        for name, args in calls:
            self._calls += 1
            content.append({"type": "toolCall", "id": f"call_{self._calls}", "name": name, "arguments": dict(args)})
        stop = stop_reason or ("error" if error else "toolUse" if calls else "stop")
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": self.api,
            "provider": self.provider,
            "model": self.model,
            "usage": dict(usage) if usage is not None else _ZERO_USAGE,
            "stopReason": stop,
        }
        if error:
            msg["errorMessage"] = error
        return self.message(msg)

    def last_call_id(self) -> str:
        return f"call_{self._calls}"

    def tool_result(self, tool_name: str, content: str | list[dict[str, Any]], *, call_id: str | None = None,
                    is_error: bool = False) -> str:
        blocks = [text_block(content)] if isinstance(content, str) else content
        return self.message({
            "role": "toolResult",
            "toolCallId": call_id or self.last_call_id(),
            "toolName": tool_name,
            "content": blocks,
            "isError": is_error,
        })

    def bash(self, command: str, output: str, *, exit_code: int = 0, exclude: bool = False) -> str:
        msg: dict[str, Any] = {"role": "bashExecution", "command": command, "output": output, "exitCode": exit_code,
                               "cancelled": False, "truncated": False}
        if exclude:
            msg["excludeFromContext"] = True
        return self.message(msg)

    def custom(self, custom_type: str, content: str | list[dict[str, Any]], *, display: bool = True) -> str:
        """A `custom` role message (v2 wrote these with role `hookMessage`)."""
        return self.message({"role": "custom", "customType": custom_type, "content": content, "display": display})

    def system(self, content: str = "", *, sections: Mapping[str, str | None] | None = None,
               tools_added: list[dict[str, Any]] | None = None, tools_removed: list[dict[str, Any]] | None = None) -> str:
        """A 1.x `system` role message."""
        msg: dict[str, Any] = {"role": "system", "content": content}
        if sections is not None:
            msg["sections"] = dict(sections)
        if tools_added is not None:
            msg["toolsAdded"] = tools_added
        if tools_removed is not None:
            msg["toolsRemoved"] = tools_removed
        return self.message(msg)

    # ------------------------------------------------------------------ other entries
    def compaction(self, summary: str, first_kept: str | None, tokens_before: int, *,
                   details: Mapping[str, Any] | None = None, system_message: Mapping[str, Any] | None = None,
                   usage: Mapping[str, Any] | None = None, retain_none: bool = False) -> str:
        fields: dict[str, Any] = {"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": tokens_before}
        if details is not None:
            fields["details"] = dict(details)
        if system_message is not None:
            fields["systemMessage"] = dict(system_message)
        if usage is not None:
            fields["usage"] = dict(usage)
        eid = self.add("compaction", **fields)
        if retain_none:
            self.entries[-1]["firstKeptEntryId"] = eid
        return eid

    def branch_summary(self, summary: str, from_id: str) -> str:
        return self.add("branch_summary", fromId=from_id, summary=summary)

    def custom_message(self, custom_type: str, content: str | list[dict[str, Any]], *, display: bool = True) -> str:
        return self.add("custom_message", customType=custom_type, content=content, display=display)

    def custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self.add("custom", customType=custom_type, data=data)

    def context_edit(self, target_id: str, replacement: Mapping[str, Any] | None) -> str:
        return self.add("context_edit", targetId=target_id, replacement=replacement)

    def label(self, target_id: str, label: str | None) -> str:
        return self.add("label", targetId=target_id, label=label)

    def session_info(self, name: str) -> str:
        return self.add("session_info", name=name)

    def model_change(self, provider: str, model_id: str) -> str:
        return self.add("model_change", provider=provider, modelId=model_id)

    def thinking_level(self, level: str) -> str:
        return self.add("thinking_level_change", thinkingLevel=level)

    # ------------------------------------------------------------------ output
    def records(self, version: int = 3) -> list[dict[str, Any]]:
        """Header + entries in the given format version (1: linear legacy, 2: hookMessage, 3: current)."""
        header = copy.deepcopy(self.header)
        entries = copy.deepcopy(self.entries)
        if version >= 3:
            return [header, *entries]
        for e in entries:
            if e.get("type") == "message" and e["message"].get("role") == "custom":
                e["message"]["role"] = "hookMessage"
        if version == 2:
            header["version"] = 2
            return [header, *entries]
        # v1: a linear file, no ids; compactions point at an index into the file (header = 0).
        header.pop("version", None)
        index_of = {e["id"]: i + 1 for i, e in enumerate(entries)}
        for e in entries:
            if e.get("type") == "compaction":
                target = e.pop("firstKeptEntryId", None)
                if target in index_of:
                    e["firstKeptEntryIndex"] = index_of[target]
            e.pop("id", None)
            e.pop("parentId", None)
        return [header, *entries]

    def jsonl(self, version: int = 3) -> bytes:
        return b"".join(orjson.dumps(r) + b"\n" for r in self.records(version))

    def session(self, version: int = 3, path: str = "<builder>") -> Session:
        return read_bytes(self.jsonl(version), path)


def run_record(settings: Any, *, agent: str, session: str = "s.jsonl", model: str = "lab/lab-model",
               **metrics: Any) -> Any:
    """A replay run record (`replay.run_document.RunRecord`) at `settings` (`replay.records.ReplaySettings`)
    with no compaction and every metric 0 (costs None: no price known) but the `metrics` given, for
    tests of what the report and the figures draw of runs."""
    from dataclasses import fields

    from sessiontools.replay.cost import CacheModel, CacheStyle
    from sessiontools.replay.metrics import RunMetrics
    from sessiontools.replay.records import RecordedMatch
    from sessiontools.replay.run_document import PriceRecord, RunRecord, TruthRecord

    zero = {f.name: None if f.name.startswith("cost") else 0 for f in fields(RunMetrics)}
    return RunRecord(session, agent, None, model, settings, (), RunMetrics(**{**zero, **metrics}),
                     RecordedMatch(0, 0, 0), TruthRecord(0, 1.0, 0, 0, 0, 0, True), CacheModel(CacheStyle.NONE),
                     PriceRecord("none", None), None, 0, 0, 0, 0, (), (), ())
