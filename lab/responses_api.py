"""OpenAI Responses API (``POST /v1/responses``, SSE) for the lab server, as the Codex CLI uses it.

``lab.server`` routes ``/responses`` here (``handle``). The "model" is the same seeded workload as
for Pi (``lab.workload``), with Codex's tool-call shapes: every workload call becomes one call of
the shell tool the request offers (``shell_tool``): ``exec_command`` ``{"cmd": ...}`` (0.77 and
later for an unknown model, the only one 0.171 sends), else ``shell_command`` ``{"command": ...}``,
else ``shell`` ``{"command": ["bash", "-lc", ...]}`` (0.63):

* ``read {path}``            -> ``cat <path>``
* ``bash {command}``         -> ``<command>``
* ``edit {path, edits}``     -> ``apply_patch`` heredoc (``*** Update File``), which Codex intercepts
* ``write {path, content}``  -> ``cat > <path> <<'SESSIONTOOLS_EOF' ... SESSIONTOOLS_EOF``

Which answer (deterministic, never from the request's size): the *last* input item that is one of

* a ``function_call_output`` whose ``call_id`` is ``call_p{P}_s{S}_{K}``  -> step ``S + 1`` of prompt P;
* a user message whose text is prompt P of the workload                  -> step 0 of prompt P;
* a user message carrying a lab summary (Codex's summary prefix + a summary written by this server)
  -> the position the compaction request that produced it was at (remembered per summary text);

then the prompt's final answer once its steps are used up.

Compaction requests (header ``x-codex-turn-metadata`` with ``"request_kind":"compaction"``, or,
from releases that send no such header, a last input item that is a user message with Codex's
compaction prompt, ``CONTEXT CHECKPOINT COMPACTION``, the same text from 0.63 to 0.171) are
answered with ``lab.summarizer.summarize``: the input items after the newest summary message (the
compaction prompt, the last user message, excluded) are serialised the way Pi serialises a
conversation (``[User]:``, ``[Assistant]:``, ``[Assistant tool calls]: read(path="…")`` with the
workload's own call, ``[Tool result]:`` = the command output after Codex's ``Output:`` header), and
the summary inside the newest summary message is the ``<previous-summary>`` (kind ``update``, else
``initial``). So the lossy rule of lab/README.md applies unchanged (generation G, drop index
``drop_index(seed, G, len(Done))``, keep-last limits).

Usage: the pseudo-tokenizer of ``lab.tokenizer`` over segments (tools, then one per input item; ids,
wall times and Codex's chunk ids removed, workspace path -> ``/workspace``, dates -> ``<date>``),
plus ``ServerConfig.overhead`` hidden tokens on every agent request (0 for the samples of a lab
model; a fixed ~233k for the known-model recordings, so a 272k model's default limit is reached).
``input_tokens`` is the whole prompt, ``input_tokens_details.cached_tokens`` the prefix-cache hit
(compaction requests: 0 and not stored). A prompt over the window is answered with
``response.failed`` carrying ``error.code = "context_length_exceeded"`` (what Codex maps to
``ContextWindowExceeded``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
import threading
from typing import Any

from lab.summarizer import summarize
from lab.workload import ToolCall, Workload, call_id, parse_call_id

SUMMARY_MARKER = "\n- Summary generation: "
EOF_MARK = "SESSIONTOOLS_EOF"
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_WALL_RE = re.compile(r"Wall time: [0-9.]+ seconds")
_CHUNK_RE = re.compile(r"Chunk ID: [0-9a-f]+")
#: The opening of Codex's compaction prompt (codex-rs `templates/compact/prompt.md`, 0.63 - 0.171).
COMPACT_PROMPT_MARK = "CONTEXT CHECKPOINT COMPACTION"
#: Shell tools Codex offers, in the order the lab prefers them.
SHELL_TOOLS = ("exec_command", "shell_command", "shell")


def shell_tool(body: dict) -> str:
    """The shell tool the request offers (``exec_command`` when it offers none of ``SHELL_TOOLS``)."""
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return next((n for n in SHELL_TOOLS if n in names), "exec_command")


def shell_arguments(tool: str, cmd: str) -> str:
    if tool == "shell":
        return json.dumps({"command": ["bash", "-lc", cmd]}, ensure_ascii=False)
    return json.dumps({"command" if tool == "shell_command" else "cmd": cmd}, ensure_ascii=False)


def is_compaction_request(items: list[dict], headers: dict[str, str]) -> bool:
    if _request_kind(headers) == "compaction":
        return True
    last = items[-1] if items else {}
    return (last.get("type") == "message" and last.get("role") == "user"
            and COMPACT_PROMPT_MARK in item_text(last))
_SESSION_RE = re.compile(r"session ID \d+|Process running with session ID \d+")
OVERFLOW_MESSAGE = (
    "Your input exceeds the context window of this model. ({tokens} tokens > {window} maximum)"
)


def item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "input_image":
            parts.append("<image>")
    return "".join(parts)


def output_text(item: dict) -> str:
    out = item.get("output")
    if isinstance(out, str) and out.startswith("{\"output\":"):  # 0.63 `shell`: {"output", "metadata"}
        try:
            return str(json.loads(out).get("output", ""))
        except ValueError:
            return out
    if isinstance(out, str):
        return out
    if isinstance(out, dict):
        return str(out.get("content", ""))
    if isinstance(out, list):
        return "".join(p.get("text", "") for p in out if isinstance(p, dict))
    return ""


def command_output(text: str) -> str:
    """The command's own output inside Codex's exec result (after the ``Output:`` line)."""
    i = text.find("\nOutput:\n")
    return text[i + len("\nOutput:\n"):] if i >= 0 else text


def to_command(call: ToolCall) -> str:
    """The ``exec_command`` ``cmd`` that performs one workload call."""
    a = call.args
    if call.name == "read":
        return f"cat {shlex.quote(a['path'])}"
    if call.name == "bash":
        return a["command"]
    if call.name == "edit":
        lines = [f"*** Update File: {a['path']}"]
        for e in a["edits"]:
            lines += ["@@", f"-{e['oldText']}", f"+{e['newText']}"]
        return "apply_patch <<'PATCH'\n*** Begin Patch\n" + "\n".join(lines) + "\n*** End Patch\nPATCH"
    if call.name == "write":
        d = a["path"].rsplit("/", 1)[0] if "/" in a["path"] else "."
        body = a["content"] if a["content"].endswith("\n") else a["content"] + "\n"
        return f"mkdir -p {shlex.quote(d)} && cat > {shlex.quote(a['path'])} <<'{EOF_MARK}'\n{body}{EOF_MARK}"
    raise ValueError(f"unknown workload tool {call.name}")


def is_summary_message(item: dict) -> bool:
    return item.get("type") == "message" and item.get("role") == "user" and SUMMARY_MARKER in item_text(item)


def summary_of(item: dict) -> str:
    """The lab summary inside a Codex summary message (from its ``## Goal`` heading on)."""
    text = item_text(item)
    i = text.find("## Goal")
    return text[i:] if i >= 0 else text


def is_context_message(item: dict) -> bool:
    """Codex's injected context (developer messages, ``<environment_context>`` and similar user text)."""
    if item.get("type") != "message":
        return False
    if item.get("role") in ("developer", "system"):
        return True
    return item.get("role") == "user" and item_text(item).lstrip().startswith("<")


class ResponsesModel:
    """Request -> SSE events for Codex; shares the LabModel's config, cache and log."""

    def __init__(self, lab_model: Any):
        self.lab = lab_model
        self.config = lab_model.config
        self.workload: Workload = lab_model.config.workload
        self.positions: dict[str, tuple[int | None, int]] = {}
        self._lock = threading.Lock()

    # -- accounting -----------------------------------------------------------------
    def _norm(self, text: str) -> str:
        for old, new in self.config.normalize:
            if old:
                text = text.replace(old, new)
        return text

    def segment(self, item: dict) -> str:
        kind = item.get("type", "")
        if kind == "message":
            text = item_text(item)
            if is_context_message(item):
                text = _DATE_RE.sub("<date>", text)
            return f"{item.get('role', '')}\n{text}"
        if kind == "function_call":
            return f"<call {item.get('call_id', '')}>{item.get('name', '')} {item.get('arguments', '')}"
        if kind == "function_call_output":
            out = _SESSION_RE.sub("session ID <n>", _CHUNK_RE.sub("Chunk ID: <id>", output_text(item)))
            return f"<result {item.get('call_id', '')}>\n" + _WALL_RE.sub("Wall time: <t> seconds", out)
        if kind == "reasoning":
            return "reasoning\n" + json.dumps(item.get("summary") or [], sort_keys=True)
        rest = {k: v for k, v in item.items() if k not in ("id", "call_id")}
        return f"{kind}\n" + json.dumps(rest, sort_keys=True, ensure_ascii=False)

    def segments(self, body: dict) -> list[str]:
        segs = []
        if body.get("tools"):
            segs.append("tools\n" + json.dumps(body["tools"], sort_keys=True, ensure_ascii=False))
        if body.get("instructions"):
            segs.append("instructions\n" + _DATE_RE.sub("<date>", body["instructions"]))
        segs += [self.segment(it) for it in body.get("input", []) if isinstance(it, dict)]
        return [self._norm(s) for s in segs]

    # -- decisions ------------------------------------------------------------------
    def position(self, items: list[dict]) -> tuple[int | None, int]:
        for it in reversed(items):
            if it.get("type") == "function_call_output":
                parsed = parse_call_id(it.get("call_id", ""))
                if parsed:
                    return parsed[0], parsed[1] + 1
            elif is_summary_message(it):
                with self._lock:
                    pos = self.positions.get(summary_of(it))
                if pos is not None:
                    return pos
            elif it.get("type") == "message" and it.get("role") == "user" and not is_context_message(it):
                idx = self.workload.prompt_index(item_text(it))
                if idx is not None:
                    return idx, 0
        return None, 0

    def _call_for(self, cid: str) -> ToolCall | None:
        m = re.search(r"call_p(\d+)_s(\d+)_(\d+)", cid or "")
        if not m:
            return None
        p, s, k = (int(g) for g in m.groups())
        try:
            return self.workload.prompts[p].steps[s].calls[k]
        except IndexError:
            return None

    def conversation(self, items: list[dict]) -> tuple[str, str | None]:
        """Pi-style serialisation of the items after the newest summary, and that summary."""
        start, prev = 0, None
        for i, it in enumerate(items):
            if is_summary_message(it):
                start, prev = i + 1, summary_of(it)
        lines: list[str] = []
        calls: list[str] = []
        for it in items[start:]:
            kind = it.get("type")
            if kind == "function_call":
                call = self._call_for(it.get("call_id", ""))
                if call is not None:
                    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.args.items())
                    calls.append(f"{call.name}({args})")
                else:
                    calls.append(f"{it.get('name', '?')}(arguments={json.dumps(it.get('arguments', ''))})")
                continue
            if calls:
                lines.append("[Assistant tool calls]: " + "; ".join(calls))
                calls = []
            if kind == "function_call_output":
                lines.append("[Tool result]: " + command_output(output_text(it)).strip())
            elif kind == "message" and not is_context_message(it):
                role = "User" if it.get("role") == "user" else "Assistant"
                lines.append(f"[{role}]: {item_text(it)}")
        if calls:
            lines.append("[Assistant tool calls]: " + "; ".join(calls))
        return "\n\n".join(lines), prev

    def respond(self, body: dict, headers: dict[str, str]) -> tuple[list[dict], dict]:
        """Return (SSE events, log fields)."""
        items = [it for it in body.get("input", []) if isinstance(it, dict)]
        compaction = is_compaction_request(items, headers)
        segs = self.segments(body)
        tok = self.config.tokenizer
        seg_tokens = tok.count_segments(segs)
        # hidden provider-side tokens (ServerConfig.overhead; 0 unless a recording sets them): a fixed
        # amount lifts every count into the range of a real model's limit (~245k) with a small workload
        prompt_tokens = sum(seg_tokens) + (0 if compaction else self.config.overhead.value(0))
        rid = "resp_" + hashlib.sha256("\x00".join(segs).encode("utf-8", "surrogatepass")).hexdigest()[:24]
        model = body.get("model") or self.config.model_id
        if prompt_tokens > self.config.window:
            msg = OVERFLOW_MESSAGE.format(tokens=prompt_tokens, window=self.config.window)
            return _failed(rid, model, msg), {"kind": "overflow", "prompt_tokens": prompt_tokens,
                                              "cached": 0, "completion": 0, "messages": len(items)}
        texts: list[str] = []
        calls: list[dict] = []
        prompt_idx: int | None = None
        step: int | None = None
        if compaction:
            history = items[:-1] if items and items[-1].get("role") == "user" else items
            conv, prev = self.conversation(history)
            user_text = f"<conversation>\n{conv}\n</conversation>"
            if prev is not None:
                user_text += f"\n\n<previous-summary>\n{prev}\n</previous-summary>"
            summary = summarize("update" if prev is not None else "initial", user_text, self.workload.seed)
            pos = self.position(history)
            with self._lock:
                self.positions[summary] = pos
            texts.append(summary)
            cached = 0
        else:
            prompt_idx, step = self.position(items)
            script = self.workload.prompts[prompt_idx] if prompt_idx is not None else None
            if script is None:
                texts.append("OK. (The lab model has no script for this prompt.)")
            elif step < len(script.steps):
                st = script.steps[step]
                if st.text:
                    texts.append(st.text)
                tool = shell_tool(body)
                for k, c in enumerate(st.calls):
                    calls.append({"call_id": call_id(prompt_idx, step, k), "name": tool,
                                  "arguments": shell_arguments(tool, to_command(c))})
            else:
                texts.append(script.final)
            cached = self.lab.cache.lookup_and_store(segs, seg_tokens)
        completion = tok.count("".join(texts) + "".join(c["name"] + c["arguments"] for c in calls))
        usage = {"input_tokens": prompt_tokens, "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": prompt_tokens + completion}
        reasoning = encrypted_reasoning(rid, self.config.reasoning_chars) if not compaction else None
        events = _events(rid, model, texts, calls, usage, self.config.chunk_chars, reasoning)
        log = {"kind": "compaction" if compaction else "agent", "prompt": prompt_idx, "step": step,
               "prompt_tokens": prompt_tokens, "cached": cached, "completion": completion, "messages": len(items)}
        return events, log


def _request_kind(headers: dict[str, str]) -> str | None:
    raw = headers.get("x-codex-turn-metadata")
    if not raw:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    return meta.get("request_kind") if isinstance(meta, dict) else None


def _response(rid: str, model: str, status: str, output: list | None = None, **extra: Any) -> dict:
    return {"id": rid, "object": "response", "created_at": 1700000000, "status": status, "model": model,
            "output": output or [], **extra}


def _failed(rid: str, model: str, message: str) -> list[dict]:
    err = {"code": "context_length_exceeded", "message": message, "type": "invalid_request_error"}
    return [{"type": "response.created", "response": _response(rid, model, "in_progress")},
            {"type": "response.failed", "response": _response(rid, model, "failed", error=err)}]


def encrypted_reasoning(rid: str, chars: int) -> dict | None:
    """A reasoning item with an opaque `encrypted_content` of `chars` base64 characters (None for 0)."""
    if chars <= 0:
        return None
    seed = hashlib.sha256(rid.encode()).digest()
    payload = base64.b64encode(seed * (chars // 44 + 1)).decode()[:chars]
    return {"type": "reasoning", "id": "rs_" + rid[5:], "summary": [], "encrypted_content": payload}


def _events(rid: str, model: str, texts: list[str], calls: list[dict], usage: dict, n: int,
            reasoning: dict | None = None) -> list[dict]:
    events: list[dict] = [{"type": "response.created", "response": _response(rid, model, "in_progress")}]
    done: list[dict] = []
    if reasoning is not None:
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": {**reasoning, "encrypted_content": None}})
        events.append({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
        done.append(reasoning)
    for i, text in enumerate(texts):
        mid = f"msg_{rid[5:]}_{i}"
        idx = len(done)
        events.append({"type": "response.output_item.added", "output_index": idx, "item": {
            "type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}})
        for j in range(0, len(text), n):
            events.append({"type": "response.output_text.delta", "output_index": idx, "content_index": 0,
                           "item_id": mid, "delta": text[j:j + n]})
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        events.append({"type": "response.output_item.done", "output_index": idx, "item": item})
        done.append(item)
    for c in calls:
        idx = len(done)
        item = {"type": "function_call", "id": "fc_" + c["call_id"], "call_id": c["call_id"], "name": c["name"],
                "arguments": c["arguments"], "status": "completed"}
        events.append({"type": "response.output_item.added", "output_index": idx,
                       "item": {**item, "arguments": "", "status": "in_progress"}})
        events.append({"type": "response.output_item.done", "output_index": idx, "item": item})
        done.append(item)
    events.append({"type": "response.completed", "response": _response(rid, model, "completed", done, usage=usage)})
    return events


def handle(handler: Any) -> None:
    """Serve one ``POST .../responses`` on a ``lab.server`` request handler."""
    from lab.server import RequestLog

    lab = handler.model
    with _INIT_LOCK:
        rmodel = getattr(lab, "responses", None)
        if rmodel is None:
            rmodel = lab.responses = ResponsesModel(lab)
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length)
    if (handler.headers.get("Content-Encoding") or "").lower() == "zstd":  # pragma: no cover - not sent today
        handler._json(415, {"error": {"message": "zstd request bodies are not supported by the lab"}})
        return
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        handler._json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
        return
    headers = {k.lower(): v for k, v in handler.headers.items()}
    events, log = rmodel.respond(body, headers)
    with lab._lock:
        # a compaction request's body as received, with Codex's own headers (x-codex-*), so a test can
        # compare what the real Codex CLI sent with what sessiontools' `resummarize` sends
        sent = {**body, "_headers": {k: v for k, v in headers.items() if k.startswith("x-codex")}} \
            if log["kind"] == "compaction" else None
        lab.log.append(RequestLog(log["kind"], log.get("prompt"), log.get("step"), log["prompt_tokens"],
                                  log["cached"], log["completion"], log["messages"], body=sent))
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for ev in events:
        data = json.dumps(ev, ensure_ascii=False)
        handler.wfile.write(f"event: {ev['type']}\ndata: {data}\n\n".encode())
    handler.wfile.flush()


_INIT_LOCK = threading.Lock()
