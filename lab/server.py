"""Scripted OpenAI-compatible chat-completions server that answers the real Pi agent.

Endpoints (bound to 127.0.0.1 only):

* ``POST /v1/chat/completions`` – streams Server-Sent Events exactly like OpenAI's Chat Completions
  API, which Pi's ``openai-completions`` provider consumes: a role chunk, text deltas, tool-call
  deltas (``index``/``id``/``function.name`` first, then ``function.arguments`` pieces), a chunk with
  ``finish_reason`` (``tool_calls`` or ``stop``), a usage chunk with ``choices: []`` and
  ``usage.prompt_tokens`` / ``completion_tokens`` / ``prompt_tokens_details.cached_tokens``, then
  ``data: [DONE]``.
* ``GET /v1/models`` – the one configured model.

What it answers:

* agent requests: the next step of the seeded script (``lab.workload``), chosen from the request's
  last message only (prompt text -> step 0; ``tool`` message with id ``call_p{P}_s{S}_{K}`` -> step
  ``S + 1`` of prompt ``P``), then the prompt's final answer;
* summarisation requests (Pi's summarisation system prompt): a six-section summary from
  ``lab.summarizer``;
* optionally (``ServerConfig.overhead``, ``lab.rough.HiddenOverhead``) hidden provider-side tokens
  added to every request's ``prompt_tokens`` (and to the overflow check), never cached;
* any request whose pseudo-token count exceeds the configured window: HTTP 400 with OpenAI's
  context-length error, which both Pi releases recognise as context overflow.

Usage comes from ``lab.tokenizer`` (pseudo-tokenizer + prefix cache). Summarisation requests are
not cached (Pi 1.x sends them with ``cacheRetention: "none"``), and they are never cached into the
agent's prefix cache either.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lab.rough import HiddenOverhead, RoughTokenizer
from lab.summarizer import classify, summarize
from lab.tokenizer import PrefixCache, PseudoTokenizer
from lab.workload import Workload, build_workload, call_id, parse_call_id

OVERFLOW_MESSAGE = (
    "This model's maximum context length is {window} tokens. However, your messages resulted in "
    "{tokens} tokens. Please reduce the length of the messages."
)


@dataclass
class ServerConfig:
    workload: Workload
    window: int = 32000
    tokenizer: PseudoTokenizer | RoughTokenizer = field(default_factory=PseudoTokenizer)
    # hidden provider-side input tokens per request (lab.rough); 0 for the original samples
    overhead: HiddenOverhead = field(default_factory=HiddenOverhead)
    cache_block: int = 64
    model_id: str = "lab-model"
    # (old, new) string replacements applied before counting tokens, so that machine-specific paths
    # (workspace, Pi's install dir) and the date in Pi's system prompt do not change the usage.
    normalize: list[tuple[str, str]] = field(default_factory=list)
    chunk_chars: int = 64
    # Responses API only: an encrypted reasoning item of this many characters opens every agent
    # response (0: none). The lab, like the API, leaves it out of later requests' input tokens.
    reasoning_chars: int = 0


@dataclass
class RequestLog:
    kind: str  # "agent" | "initial" | "update" | "turn_prefix" | "branch" | "overflow"
    prompt: int | None
    step: int | None
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    messages: int
    hidden: int = 0  # hidden provider-side tokens included in prompt_tokens
    # a summarisation request's body as received (system prompt, user message, max_tokens), so a test
    # can compare what the real Pi CLI sent with what sessiontools' `resummarize` sends
    body: dict | None = None


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict):
            if part.get("type") == "text":
                parts.append(part.get("text", ""))
            elif part.get("type") == "image_url":
                parts.append("<image>")
    return "".join(parts)


_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


class LabModel:
    """The request -> response logic, independent of HTTP."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.cache = PrefixCache(block=config.cache_block)
        self.log: list[RequestLog] = []
        self._lock = threading.Lock()
        self._agent_requests = 0  # agent (non-summarisation) requests answered so far, for the overhead

    # -- accounting ---------------------------------------------------------
    def _norm(self, text: str) -> str:
        for old, new in self.config.normalize:
            if old:
                text = text.replace(old, new)
        return text

    def segments(self, body: dict) -> list[str]:
        segs = []
        if body.get("tools"):
            segs.append("tools\n" + json.dumps(body["tools"], sort_keys=True, ensure_ascii=False))
        for m in body.get("messages", []):
            role = m.get("role", "")
            text = _content_text(m.get("content"))
            if role in ("system", "developer"):
                text = _DATE_RE.sub("<date>", text)
            seg = f"{role}\n{text}"
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", {})
                seg += f"\n<call {tc.get('id', '')}>{fn.get('name', '')} {fn.get('arguments', '')}"
            if m.get("tool_call_id"):
                seg = f"<result {m['tool_call_id']}>\n" + seg
            segs.append(self._norm(seg))
        return segs

    # -- decisions ------------------------------------------------------------
    def _position(self, messages: list[dict]) -> tuple[int | None, int]:
        for m in reversed(messages):
            role = m.get("role")
            if role == "tool":
                parsed = parse_call_id(m.get("tool_call_id", ""))
                if parsed:
                    return parsed[0], parsed[1] + 1
                return None, 0
            if role == "user":
                return self.config.workload.prompt_index(_content_text(m.get("content"))), 0
        return None, 0

    def respond(self, body: dict) -> tuple[int, dict | None, dict | None]:
        """Return (status, error_body, reply) where reply has text/tool_calls/finish/usage."""
        messages = body.get("messages", [])
        system = _content_text(messages[0].get("content")) if messages and messages[0].get("role") in (
            "system", "developer") else ""
        user = _content_text(messages[-1].get("content")) if messages else ""
        kind = classify(system, user)
        segs = self.segments(body)
        tok = self.config.tokenizer
        seg_tokens = tok.count_segments(segs)
        with self._lock:
            hidden = self.config.overhead.value(self._agent_requests)
            if kind is None:
                self._agent_requests += 1
        prompt_tokens = sum(seg_tokens) + hidden
        if prompt_tokens > self.config.window:
            with self._lock:
                self.log.append(RequestLog("overflow", None, None, prompt_tokens, 0, 0, len(messages), hidden))
            msg = OVERFLOW_MESSAGE.format(window=self.config.window, tokens=prompt_tokens)
            return 400, {"error": {"message": msg, "type": "invalid_request_error", "param": "messages",
                                   "code": "context_length_exceeded"}}, None

        text = ""
        calls: list[dict] = []
        prompt_idx: int | None = None
        step: int | None = None
        if kind is not None:
            text = summarize(kind, user, self.config.workload.seed)
            finish = "stop"
            cached = 0
        else:
            prompt_idx, step = self._position(messages)
            script = self.config.workload.prompts[prompt_idx] if prompt_idx is not None else None
            if script is None:
                text = "OK. (The lab model has no script for this prompt.)"
                finish = "stop"
            elif step < len(script.steps):
                st = script.steps[step]
                text = st.text
                for k, c in enumerate(st.calls):
                    calls.append({"id": call_id(prompt_idx, step, k), "name": c.name,
                                  "arguments": json.dumps(c.args, ensure_ascii=False)})
                finish = "tool_calls"
            else:
                text = script.final
                finish = "stop"
            cached = self.cache.lookup_and_store(segs, seg_tokens)
        completion = tok.count(text + "".join(c["name"] + c["arguments"] for c in calls))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        with self._lock:
            self.log.append(RequestLog(kind or "agent", prompt_idx, step, prompt_tokens, cached, completion,
                                       len(messages), hidden, body if kind is not None else None))
        rid = "chatcmpl-" + hashlib.sha256("\x00".join(segs).encode("utf-8", "surrogatepass")).hexdigest()[:20]
        return 200, None, {"id": rid, "text": text, "calls": calls, "finish": finish, "usage": usage}

    def sse_chunks(self, reply: dict, model: str) -> list[dict]:
        base = {"id": reply["id"], "object": "chat.completion.chunk", "created": 1700000000, "model": model}

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        n = self.config.chunk_chars
        out = [chunk({"role": "assistant", "content": ""})]
        text = reply["text"]
        for i in range(0, len(text), n):
            out.append(chunk({"content": text[i:i + n]}))
        for k, c in enumerate(reply["calls"]):
            out.append(chunk({"tool_calls": [{"index": k, "id": c["id"], "type": "function",
                                              "function": {"name": c["name"], "arguments": ""}}]}))
            args = c["arguments"]
            for i in range(0, len(args), n):
                out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": args[i:i + n]}}]}))
        out.append(chunk({}, reply["finish"]))
        out.append({**base, "choices": [], "usage": reply["usage"]})
        return out


class _Handler(BaseHTTPRequestHandler):
    server_version = "sessiontools-lab/1"
    model: LabModel  # set on the subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
        pass

    def _json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            mid = self.model.config.model_id
            self._json(200, {"object": "list", "data": [{"id": mid, "object": "model", "owned_by": "lab"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/responses"):  # OpenAI Responses API (Codex): lab/responses_api.py
            from lab.responses_api import handle as handle_responses

            handle_responses(self)
            return
        anthropic = getattr(self, "anthropic", None)  # lab.anthropic_api.AnthropicModel (Claude Code)
        if anthropic is not None and anthropic.handles(self.path):
            anthropic.handle(self)
            return
        if anthropic is None and self.path.split("?")[0].rstrip("/").endswith("/messages"):
            self._pi_summary_messages()  # Pi's summarisation prompt sent as an Anthropic Messages request
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        status, err, reply = self.model.respond(body)
        if err is not None:
            self._json(status, err)
            return
        assert reply is not None
        chunks = self.model.sse_chunks(reply, body.get("model") or self.model.config.model_id)
        if not body.get("stream"):
            self._json(200, _non_streaming(reply, body.get("model") or self.model.config.model_id))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for c in chunks:
            self.wfile.write(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


    def _pi_summary_messages(self) -> None:
        """``POST /v1/messages`` (not streamed) carrying Pi's summarisation prompt (``system``, one
        user message): the same summary as over chat completions, in Anthropic's reply shape. It lets
        sessiontools' ``resummarize --api anthropic-messages`` be tested against the lab."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "invalid JSON"}})
            return
        system = body.get("system")
        system = _content_text(system) if not isinstance(system, str) else system
        messages = [{"role": "system", "content": system}, *body.get("messages", [])]
        status, err, reply = self.model.respond({"model": body.get("model"), "messages": messages,
                                                 "max_tokens": body.get("max_tokens")})
        if err is not None or reply is None:
            self._json(status, {"type": "error", "error": {"type": "invalid_request_error",
                                                           "message": (err or {}).get("error", {}).get("message")}})
            return
        if reply["calls"] or reply["finish"] != "stop":
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": "the lab answers only Pi's summarisation prompt here"}})
            return
        u = reply["usage"]
        self._json(200, {"id": "msg_" + reply["id"][9:], "type": "message", "role": "assistant",
                         "model": body.get("model"), "content": [{"type": "text", "text": reply["text"]}],
                         "stop_reason": "end_turn", "stop_sequence": None,
                         "usage": {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"]}})


def _non_streaming(reply: dict, model: str) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": reply["text"] or None}
    if reply["calls"]:
        msg["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": c["arguments"]}} for c in reply["calls"]]
    return {"id": reply["id"], "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": reply["finish"]}], "usage": reply["usage"]}


class LabServer:
    """``with LabServer(config) as srv: srv.base_url`` – threaded server on 127.0.0.1, port 0."""

    def __init__(self, config: ServerConfig, host: str = "127.0.0.1", port: int = 0, anthropic: Any = None):
        self.model = LabModel(config)
        self.anthropic = anthropic  # optional lab.anthropic_api.AnthropicModel: serves POST /v1/messages
        handler = type("LabHandler", (_Handler,), {"model": self.model, "anthropic": anthropic})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> LabServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="lab-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the lab model server in the foreground (127.0.0.1).")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--profile", default="mixed")
    ap.add_argument("--window", type=int, default=32000)
    ap.add_argument("--ratio", type=float, default=3.2, help="chars per token for non-CJK text")
    ap.add_argument("--cjk", type=float, default=1.0, help="tokens per CJK character")
    ap.add_argument("--tokenizer", choices=("ratio", "rough"), default="ratio",
                    help="ratio: fixed chars per token (--ratio/--cjk); rough: o200k with per-class weights")
    ap.add_argument("--overhead", default="0", help="hidden tokens per request: N or LO-HI (varies every 4 requests)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--workspace", help="write the fixture workspace here first")
    args = ap.parse_args(argv)
    wl = build_workload(args.seed, args.prompts, args.profile)
    if args.workspace:
        from pathlib import Path

        wl.write_workspace(Path(args.workspace))
    lo, _, hi = args.overhead.partition("-")
    tokenizer = RoughTokenizer() if args.tokenizer == "rough" else PseudoTokenizer(args.ratio, args.cjk)
    cfg = ServerConfig(workload=wl, window=args.window, tokenizer=tokenizer,
                       overhead=HiddenOverhead(int(lo), int(hi or lo), seed=args.seed))
    srv = LabServer(cfg, port=args.port).start()
    print(srv.base_url, flush=True)
    for p in wl.prompts:
        print(f"prompt {p.index}: {p.prompt}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
