"""Anthropic Messages API for the lab server: what the real Claude Code CLI talks to.

``POST /v1/messages`` (Claude Code adds ``?beta=true``) with ``stream: true`` is answered with
Anthropic's SSE events: ``message_start`` (message id, model, usage), per content block
``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, ``message_delta`` (``stop_reason`` ``tool_use`` or ``end_turn`` and the
usage) and ``message_stop``. ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.

What it answers (see lab/README.md, "Claude Code"):

* **summarise requests** – the last user message contains ``Respond with TEXT ONLY`` (Claude Code's
  compact prompt): ``<analysis>…</analysis>`` then ``<summary>…</summary>`` built by
  ``lab.claude_summary`` with the lab summariser's lossy rule;
* **agent requests** – the next step of the seeded workload (``lab.workload``), mapped onto Claude
  Code's tools (``read`` -> ``Read``, ``edit`` -> ``Edit``, ``bash`` -> ``Bash``, ``write`` -> ``Bash``
  with a quoted here-document). The server keeps its **own step counter**: a user message whose
  text is prompt *P* starts prompt *P* at step 0; a request whose last user message carries tool
  results gets the next step of the current prompt, and so does a request that ends with Claude
  Code's compact summary message (a compaction that preserved no messages); after the last step
  the final answer (``end_turn``).
  Rejected (400) and summarise requests do not move the counter. Tool-use ids are
  ``toolu_p{P}_s{S}_{K}`` so the transcript shows where each call came from;
* a request larger than the window: HTTP 400 ``prompt is too long: N tokens > W maximum``.

Usage uses the lab pseudo-tokenizer over segments (system, tools, one per message) and the lab
prefix cache: ``cache_read_input_tokens`` = cached prefix (multiple of 64);
``cache_creation_input_tokens`` = the rest of the prompt up to and including the last message that
carries a ``cache_control`` marker; ``input_tokens`` = the remainder after it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.claude_summary import CONTINUATION_MARKER as CONTINUATION
from lab.claude_summary import is_summarise_request, summarise
from lab.tokenizer import PrefixCache, PseudoTokenizer
from lab.workload import ToolCall, Workload

TOO_LONG = "prompt is too long: {tokens} tokens > {window} maximum"
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{4}/\d{2}/\d{2}\b")
_BILLING_RE = re.compile(r"cc_version=[^;\s]*")  # the billing line's build suffix varies per request


@dataclass
class AnthropicConfig:
    workload: Workload
    workspace: str  # absolute workspace path the CLI runs in (tool paths are absolute)
    window: int = 200000
    tokenizer: PseudoTokenizer = field(default_factory=PseudoTokenizer)
    cache_block: int = 64
    normalize: list[tuple[str, str]] = field(default_factory=list)
    chunk_chars: int = 64
    dump_dir: Path | None = None  # write every request body here (debugging)


@dataclass
class AnthropicLog:
    kind: str  # "agent" | "summarise" | "too_long" | "other"
    prompt: int | None
    step: int | None
    prompt_tokens: int
    cache_read: int
    cache_creation: int
    output: int
    messages: int


def block_text(content: Any) -> str:
    """Plain text of a message's or tool result's content (str or list of blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for b in content:
        if isinstance(b, dict):
            if b.get("type") == "text":
                parts.append(b.get("text", ""))
            elif b.get("type") == "image":
                parts.append("<image>")
    return "".join(parts)


def _blocks(msg: dict) -> list[dict]:
    c = msg.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return [b for b in (c or []) if isinstance(b, dict)]


def _has_cache_control(obj: Any) -> bool:
    if isinstance(obj, dict):
        return "cache_control" in obj or any(_has_cache_control(v) for v in obj.values() if isinstance(v, list))
    if isinstance(obj, list):
        return any(_has_cache_control(x) for x in obj)
    return False


class AnthropicModel:
    """Request -> response logic for Claude Code (independent of HTTP)."""

    def __init__(self, config: AnthropicConfig):
        self.config = config
        self.cache = PrefixCache(block=config.cache_block)
        self.log: list[AnthropicLog] = []
        self.mismatches: list[str] = []  # tool_use ids that disagreed with the step counter
        self._lock = threading.Lock()
        self.prompt: int | None = None
        self.step = 0
        self._n = 0

    # -- accounting ---------------------------------------------------------
    def _norm(self, text: str) -> str:
        for old, new in self.config.normalize:
            if old:
                text = text.replace(old, new)
        return text

    def segments(self, body: dict) -> tuple[list[str], int]:
        """Segments (system, tools, messages) and the index after the last cache_control marker."""
        segs: list[str] = []
        marked = 0
        system = body.get("system")
        if system:
            segs.append("system\n" + _BILLING_RE.sub("cc_version=<v>", _DATE_RE.sub("<date>", block_text(system))))
            if _has_cache_control(system):
                marked = len(segs)
        if body.get("tools"):
            segs.append("tools\n" + json.dumps(body["tools"], sort_keys=True, ensure_ascii=False))
            if _has_cache_control(body["tools"]):
                marked = len(segs)
        for m in body.get("messages", []):
            parts = [m.get("role", "")]
            for b in _blocks(m):
                t = b.get("type")
                if t == "text":
                    parts.append(b.get("text", ""))
                elif t == "tool_use":
                    parts.append(f"<call {b.get('id', '')}>{b.get('name', '')} "
                                 + json.dumps(b.get("input", {}), ensure_ascii=False, sort_keys=True))
                elif t == "tool_result":
                    parts.append(f"<result {b.get('tool_use_id', '')}>\n{block_text(b.get('content'))}")
                elif t == "image":
                    parts.append("<image>")
            segs.append(_DATE_RE.sub("<date>", "\n".join(parts)))
            if _has_cache_control(m.get("content")):
                marked = len(segs)
        return [self._norm(s) for s in segs], marked

    # -- decisions ------------------------------------------------------------
    def _last_user(self, messages: list[dict]) -> dict | None:
        for m in reversed(messages):
            if m.get("role") == "user":
                return m
        return None

    def _advance(self, messages: list[dict]) -> tuple[int | None, int | None, dict]:
        """Pick the reply from the server's own step counter (see module docstring)."""
        wl = self.config.workload
        last = self._last_user(messages) or {}
        blocks = _blocks(last)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if not results:
            for b in blocks:
                idx = wl.prompt_index(b.get("text", "").strip()) if b.get("type") == "text" else None
                if idx is not None:
                    self.prompt, self.step = idx, 0
                    break
            else:
                continuation = any(b.get("text", "").startswith(CONTINUATION) for b in blocks)
                if not continuation or self.prompt is None:
                    return None, None, {"text": "OK. (The lab model has no script for this prompt.)", "calls": []}
                # a compaction without preserved messages: the request ends with the summary -> go on
        else:
            m = re.match(r"toolu_p(\d+)_s(\d+)_", results[-1].get("tool_use_id", ""))
            if m and (int(m.group(1)), int(m.group(2)) + 1) != (self.prompt, self.step):
                self.mismatches.append(f"{results[-1].get('tool_use_id')} vs counter p{self.prompt} s{self.step}")
        if self.prompt is None:
            return None, None, {"text": "OK.", "calls": []}
        script = wl.prompts[self.prompt]
        p, s = self.prompt, self.step
        if s >= len(script.steps):
            return p, s, {"text": script.final, "calls": []}
        st = script.steps[s]
        self.step += 1
        calls = [{"id": f"toolu_p{p:03d}_s{s:02d}_{k}", **self.tool(c)} for k, c in enumerate(st.calls)]
        return p, s, {"text": st.text, "calls": calls}

    def tool(self, c: ToolCall) -> dict:
        """A workload tool call as a Claude Code tool_use (name, input)."""
        ws = self.config.workspace.rstrip("/")
        if c.name == "read":
            return {"name": "Read", "input": {"file_path": f"{ws}/{c.args['path']}"}}
        if c.name == "edit":
            e = c.args["edits"][0]
            return {"name": "Edit", "input": {"file_path": f"{ws}/{c.args['path']}", "old_string": e["oldText"],
                                              "new_string": e["newText"]}}
        if c.name == "write":
            body = c.args["content"]
            return {"name": "Bash", "input": {"command": f"cat > {c.args['path']} <<'LAB_EOF'\n{body}LAB_EOF",
                                              "description": f"Write {c.args['path']}"}}
        return {"name": "Bash", "input": {"command": c.args["command"]}}

    def respond(self, body: dict) -> tuple[int, dict]:
        """(status, error body) for a rejected request, or (200, reply) with text/calls/usage."""
        messages = body.get("messages", [])
        segs, marked = self.segments(body)
        tok = self.config.tokenizer
        seg_tokens = tok.count_segments(segs)
        total = sum(seg_tokens)
        with self._lock:
            self._n += 1
            if self.config.dump_dir is not None:
                self.config.dump_dir.mkdir(parents=True, exist_ok=True)
                (self.config.dump_dir / f"req-{self._n:04d}.json").write_text(json.dumps(body, indent=1))
            if total > self.config.window:
                self.log.append(AnthropicLog("too_long", self.prompt, self.step, total, 0, 0, 0, len(messages)))
                msg = TOO_LONG.format(tokens=total, window=self.config.window)
                return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": msg}}
            if is_summarise_request(messages):
                kind, p, s = "summarise", None, None
                reply = {"text": summarise(messages, self.config.workload.seed, self.config.workspace), "calls": []}
            else:
                p, s, reply = self._advance(messages)
                kind = "agent" if p is not None else "other"
            cached = self.cache.lookup_and_store(segs, seg_tokens)
        after = sum(seg_tokens[marked:]) if marked else total - cached
        creation = max(0, total - cached - after)
        inp = total - cached - creation
        output = tok.count(reply["text"] + "".join(c["name"] + json.dumps(c["input"]) for c in reply["calls"]))
        # with the 5-minute / 1-hour split the API sends (else Claude Code writes zeros there, and
        # ccusage, which reads the split, counts no cache write)
        reply["usage"] = {"input_tokens": inp, "cache_creation_input_tokens": creation,
                          "cache_read_input_tokens": cached, "output_tokens": output,
                          "cache_creation": {"ephemeral_5m_input_tokens": creation, "ephemeral_1h_input_tokens": 0}}
        reply["stop"] = "tool_use" if reply["calls"] else "end_turn"
        reply["id"] = "msg_lab" + hashlib.sha256("\x00".join(segs).encode("utf-8", "surrogatepass")).hexdigest()[:20]
        with self._lock:
            self.log.append(AnthropicLog(kind, p, s, total, cached, creation, output, len(messages)))
        return 200, reply

    def count_tokens(self, body: dict) -> dict:
        segs, _ = self.segments(body)
        return {"input_tokens": sum(self.config.tokenizer.count_segments(segs))}

    def sse_events(self, reply: dict, model: str) -> list[tuple[str, dict]]:
        usage = reply["usage"]
        start_usage = {**usage, "output_tokens": 1}
        ev: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
            "id": reply["id"], "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}})]
        n = self.config.chunk_chars
        idx = 0
        if reply["text"]:
            ev.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                               "content_block": {"type": "text", "text": ""}}))
            for i in range(0, len(reply["text"]), n):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                   "delta": {"type": "text_delta", "text": reply["text"][i:i + n]}}))
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": idx}))
            idx += 1
        for c in reply["calls"]:
            ev.append(("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {
                "type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}}))
            args = json.dumps(c["input"], ensure_ascii=False)
            for i in range(0, len(args), n):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                   "delta": {"type": "input_json_delta", "partial_json": args[i:i + n]}}))
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": idx}))
            idx += 1
        ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": reply["stop"],
                                                                        "stop_sequence": None}, "usage": usage}))
        ev.append(("message_stop", {"type": "message_stop"}))
        return ev

    # -- HTTP -------------------------------------------------------------------
    @staticmethod
    def handles(path: str) -> bool:
        return path.split("?", 1)[0].rstrip("/").endswith(("/v1/messages", "/v1/messages/count_tokens"))

    def handle(self, handler: Any) -> None:
        """Serve one POST on a ``BaseHTTPRequestHandler`` (called by lab.server's routing hook)."""
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"{}")
        except ValueError:
            _send_json(handler, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "invalid JSON body"}})
            return
        if handler.path.split("?", 1)[0].rstrip("/").endswith("count_tokens"):
            _send_json(handler, 200, self.count_tokens(body))
            return
        status, reply = self.respond(body)
        if status != 200:
            _send_json(handler, status, reply)
            return
        model = body.get("model") or "lab-model"
        events = self.sse_events(reply, model)
        if not body.get("stream"):
            content = ([{"type": "text", "text": reply["text"]}] if reply["text"] else []) + [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["input"]} for c in reply["calls"]]
            _send_json(handler, 200, {"id": reply["id"], "type": "message", "role": "assistant", "model": model,
                                      "content": content, "stop_reason": reply["stop"], "stop_sequence": None,
                                      "usage": reply["usage"]})
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("request-id", "req_" + reply["id"][7:])
        handler.end_headers()
        for name, data in events:
            handler.wfile.write(f"event: {name}\ndata: ".encode() + json.dumps(data, ensure_ascii=False).encode()
                                + b"\n\n")
        handler.wfile.flush()


def _send_json(handler: Any, status: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
