"""A deterministic synthetic corpus of Claude Code transcripts (2.1 format) for `make bench`.

Imitates sample_sessions/claude-code (the real CLI against the lab server): `queue-operation`
and the prompt, `attachment` lines, an `api-request` line per call, each response written as one
line per content block (thinking, text, tool_use) sharing `message.id` and its usage (input, cache
read growing with the context, cache creation, output); parallel tool calls whose results are
parented on their own `tool_use` line; `last-prompt`, `cost-state`, `mode` metadata. When the
context passes the threshold, a compaction: `compact_boundary` (`logicalParentUuid`, `preTokens`,
`postTokens`, the preserved segment and uuids), an attachment, then the summary user message
(`isCompactSummary`, "This session is being continued ..."). Some sessions delegate to subagents
(a `Task` call), written as `<session>/subagents/agent-*.jsonl` sidechain files. Text is English,
code or Chinese (bench/corpus.py's generator); everything comes from the seeded generator.
"""

from __future__ import annotations

import random

from bench.corpus import _text
from bench.corpus_agents import Generated, Lines, main, stamp_time

VERSION = "2.1.332"
THRESHOLD = 150_000
CONTINUATION = ("This session is being continued from a previous conversation that ran out of context. "
                "The summary below covers the earlier portion of the conversation.\n\nSummary:\n")
TAIL = "\n\nIf you need specific details from before compaction (like exact code snippets), read the transcript."


class _File:
    """One transcript file (the session's, or a subagent's) and its uuid chain."""

    def __init__(self, s: _Session, sidechain: bool, agent_id: str | None = None) -> None:
        self.s, self.sidechain, self.agent_id = s, sidechain, agent_id
        self.f = Lines()
        self.parent: str | None = None
        self.ctx = 0  # tokens of the context sent with the next request
        self.chain: list[str] = []  # conversation uuids on the current path

    def line(self, obj: dict) -> dict:
        self.f.add(obj)
        return obj

    def conv(self, kind: str, message: dict | None, parent: str | None = None, root: bool = False,
             **extra: object) -> str:
        s = self.s
        s.k += 1
        uuid = f"{s.n:08x}-{s.k >> 16:04x}-4{s.k & 0xfff:03x}-8000-{s.k:012x}"
        obj: dict = {"parentUuid": None if root else self.parent if parent is None else parent, "isSidechain": self.sidechain}
        if self.agent_id:
            obj["agentId"] = self.agent_id
        obj["type"] = kind
        if message is not None:
            obj["message"] = message
        obj.update(extra)
        obj |= {"uuid": uuid, "timestamp": stamp_time(s.k), "userType": "external", "entrypoint": "cli",
                "cwd": f"/work/bench{s.n}", "sessionId": s.sid, "version": VERSION, "gitBranch": "main"}
        self.line(obj)
        self.parent = uuid
        self.chain.append(uuid)
        return uuid

    def meta(self, kind: str, **fields: object) -> None:
        self.line({"type": kind, **fields, "sessionId": self.s.sid})

    def response(self, blocks: list[dict], stop: str) -> list[str]:
        """One API response: its `api-request` line, then a line per block (same id and usage)."""
        s, rng = self.s, self.s.rng
        s.k += 1
        rid = f"msg_{s.n:04x}{s.k:08x}"
        self.meta("api-request", id=f"req-{s.n:04x}{s.k:08x}", timestamp=stamp_time(s.k), version=VERSION,
                  querySource="sdk", params={"model": "claude-sonnet-4-5", "max_tokens": 32000,
                                             "betas": ["claude-code-20250219", "interleaved-thinking-2025-05-14"]})
        new = rng.randrange(200, 3000)
        out = rng.randrange(30, 900)
        usage = {"input_tokens": rng.randrange(3, 12), "cache_creation_input_tokens": new,
                 "cache_read_input_tokens": self.ctx, "output_tokens": out,
                 "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                "ephemeral_5m_input_tokens": new}}
        self.ctx += new + out
        s.requests += 1
        uuids = []
        req = f"req_{s.n:04x}{s.k:08x}"  # one API request id for every line of the response, as Claude Code writes it
        for b in blocks:
            uuids.append(self.conv("assistant", {"id": rid, "type": "message", "role": "assistant",
                                                 "model": "claude-sonnet-4-5", "content": [b], "stop_reason": stop,
                                                 "stop_sequence": None, "usage": usage}, requestId=req))
        return uuids

    def tool_result(self, parent: str, call_id: str, text: str) -> str:
        self.ctx += int(len(text) / 4 * self.s.ratio)
        return self.conv("user", {"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                                                "content": text}]}, parent=parent)


class _Session:
    def __init__(self, rng: random.Random, n: int) -> None:
        self.rng, self.n, self.k = rng, n, 0
        self.lang = rng.choice(["en", "en", "code", "zh"])
        self.ratio = {"en": 1.3, "code": 1.4, "zh": 2.6}[self.lang]
        self.sid = f"{n:08x}-0000-4000-8000-{n:012x}"
        self.requests = self.compactions = self.calls = 0
        self.main = _File(self, False)
        self.subagents: dict[str, bytes] = {}
        self.delegates = rng.random() < 0.3

    def text(self, lo: int, hi: int) -> str:
        return _text(self.rng, self.rng.randrange(lo, hi), self.lang)

    def call(self, name: str, payload: dict) -> dict:
        self.calls += 1
        return {"type": "tool_use", "id": f"toolu_{self.n:04x}_{self.calls:06d}", "name": name, "input": payload}

    def step(self, f: _File, final: bool) -> None:
        """One response of `f`'s agent and, unless final, its tool calls' results."""
        rng = self.rng
        blocks: list[dict] = []
        if rng.random() < 0.3:
            blocks.append({"type": "thinking", "thinking": self.text(40, 600), "signature": "Eu" + "A" * 200})
        if final or rng.random() < 0.5:
            blocks.append({"type": "text", "text": self.text(40, 1200)})
        if final:
            f.response(blocks, "end_turn")
            return
        task = f is self.main and self.delegates and rng.random() < 0.2
        if task:
            calls = [self.call("Task", {"description": "look into it", "prompt": self.text(100, 600),
                                        "subagent_type": "general-purpose"})]
        else:
            calls = [self.call(rng.choice(["Read", "Bash", "Grep"]), {"file_path": f"src/mod{rng.randrange(50)}.py"})
                     for _ in range(2 if rng.random() < 0.25 else 1)]
        uuids = f.response(blocks + calls, "tool_use")
        last = None
        for c, u in zip(calls, uuids[len(blocks):], strict=True):
            text = self.subagent(c) if task else _text(rng, rng.choice([200, 1500, 6000, 20000]), self.lang)
            last = f.tool_result(u, c["id"], text)
        f.parent = last

    def subagent(self, call: dict) -> str:
        """A subagent's transcript in its own file; returns its final answer (the Task result)."""
        agent_id = f"{self.n:04x}{len(self.subagents):04x}"
        f = _File(self, True, agent_id)
        f.ctx = 8_000
        f.conv("user", {"role": "user", "content": call["input"]["prompt"]})
        steps = self.rng.randrange(1, 6)
        for s in range(steps):
            self.step(f, final=s == steps - 1)
        self.subagents[f"s{self.n:04d}/subagents/agent-{agent_id}.jsonl"] = f.f.data()
        return "Subagent report: " + self.text(100, 1500)

    def compact(self) -> None:
        f, rng = self.main, self.rng
        pre = f.ctx
        kept = f.chain[-3:]
        summary = "## Goal\n" + self.text(600, 3000)
        post = 4000 + int(len(summary) / 4 * self.ratio)
        f.conv("system", None, root=True, subtype="compact_boundary", content="Conversation compacted",
               level="info", logicalParentUuid=f.chain[-1],
               compactMetadata={"trigger": "auto", "preTokens": pre, "postTokens": post,
                                "preservedSegment": {"headUuid": kept[0], "tailUuid": kept[-1]},
                                "preservedMessages": {"uuids": kept}})
        f.conv("attachment", None, attachment={"type": "session_context", "context": {}})
        f.conv("user", {"role": "user", "content": CONTINUATION + summary + TAIL}, isCompactSummary=True,
               isVisibleInTranscriptOnly=True)
        f.ctx = post + rng.randrange(0, 2000)
        self.compactions += 1

    def turn(self) -> None:
        f, rng = self.main, self.rng
        prompt = self.text(80, 800)
        f.meta("queue-operation", operation="enqueue", timestamp=stamp_time(self.k), content=prompt)
        f.conv("user", {"role": "user", "content": prompt}, promptId=f"p{self.k:08x}")
        if rng.random() < 0.5:
            f.conv("attachment", None, attachment={"type": "todo_reminder", "content": [], "itemCount": 0})
        steps = rng.randrange(1, 9)
        for s in range(steps):
            self.step(f, final=s == steps - 1)
            if f.ctx > THRESHOLD and s < steps - 1:
                self.compact()
        f.meta("last-prompt", lastPrompt=prompt[:200], leafUuid=f.parent)
        if rng.random() < 0.3:
            f.meta("cost-state", totalCostUSD=0.0, totalAPIDuration=1000, modelUsage={})


def session(rng: random.Random, n: int, target_bytes: int) -> Generated:
    """One session of roughly `target_bytes` (its subagent files included)."""
    s = _Session(rng, n)
    s.main.ctx = 12_000  # system prompt and tools
    s.main.meta("mode", mode="normal")
    while s.main.f.size + sum(len(b) for b in s.subagents.values()) < target_bytes:
        s.turn()
    files = {f"s{n:04d}.jsonl": s.main.f.data(), **s.subagents}
    return Generated(files, s.requests, s.compactions, sidechains=len(s.subagents))


if __name__ == "__main__":
    main(session, "bench/corpus-claude-code", __doc__)
