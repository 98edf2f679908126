"""Send summarisation requests to a model server (standard library HTTP only).

Two wire formats:

* `openai-completions`: `POST {url}/chat/completions` with `model`, the system and user messages
  and `max_tokens` (or `max_completion_tokens`), streaming (`stream: true`, usage asked with
  `stream_options.include_usage`) or not. Ollama, llama.cpp's server, vLLM, LM Studio and OpenAI
  speak it. The key, if any, goes in `Authorization: Bearer`.
* `anthropic-messages`: `POST {url}/v1/messages` with `system`, one user message and `max_tokens`
  (not streamed); the key in `x-api-key`.
* A `replay.summarizer.ResponsesRequest` (an agent's own Responses call, such as Codex's compaction)
  is a Responses call whatever `--api` says, as the agent makes it: `POST {url}/responses` with its
  body (its `model` replaced by the configured one) and headers, streamed (server-sent events: `response.output_item.done`,
  `response.completed` with the usage, `response.failed`); the key in `Authorization: Bearer`.

Every call: a timeout, retries with exponential back-off on connection errors, timeouts, HTTP 429
and 5xx (a `Retry-After` header is honoured, up to a minute), at most `concurrency` requests in
flight across threads, and the answer cached under a hash of the exact request (`cache`), so a
re-run sends nothing. Nothing here reads the environment: the CLI passes the key in.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sessiontools.endpoint.cache import ResponseCache, request_key
from sessiontools.read.values import integer, number_text
from sessiontools.replay.registry import reply_text
from sessiontools.replay.summarizer import Answer, ResponsesRequest, SummarizerError

#: What an agent keeps of a reply's content (`Summarizer.reply_text`).
ReplyText = Callable[[list[Any]], str]

ANTHROPIC_VERSION = "2023-06-01"
MAX_RETRY_AFTER_S = 60.0


class Api(StrEnum):
    OPENAI = "openai-completions"
    ANTHROPIC = "anthropic-messages"


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    url: str
    model: str  # the model id the server knows (the ID of --model PROVIDER/ID)
    api: Api = Api.OPENAI
    api_key: str | None = None
    stream: bool = False
    max_tokens_field: str = "max_tokens"  # or "max_completion_tokens" (OpenAI's newer models)
    timeout_s: float = 300.0
    retries: int = 3
    backoff_s: float = 1.0
    concurrency: int = 4


def target_url(url: str, api: Api) -> str:
    """The full request URL from a base URL (`http://localhost:11434/v1`) or a full one."""
    u = url.rstrip("/")
    if api == Api.OPENAI:
        return u if u.endswith("/chat/completions") else u + "/chat/completions"
    if u.endswith("/messages"):
        return u
    return u + "/messages" if u.endswith("/v1") else u + "/v1/messages"


class _Retry(Exception):
    def __init__(self, why: str, after: float | None = None) -> None:
        super().__init__(why)
        self.after = after


class Endpoint:
    """A callable `request -> Answer` (`replay.summarizer.Summarize`), thread-safe."""

    def __init__(self, config: EndpointConfig, cache: ResponseCache | None = None, *, refresh: bool = False,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.cache = cache
        self.refresh = refresh  # --no-cache: send every request, and store the fresh answers
        self.url = target_url(config.url, config.api)
        self.responses_url = responses_url(config.url)
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(max(1, config.concurrency))
        self._lock = threading.Lock()
        self.sent = 0  # HTTP requests made (retries included)
        self.hits = 0  # answers taken from the cache (or from the same request in flight)
        self._inflight: dict[str, threading.Event] = {}
        self._memo: dict[str, dict[str, Any]] = {}  # this run's answers (a re-asked request is never re-sent)

    def body(self, req: Any) -> dict[str, Any]:
        """The wire body of `req`: a `ResponsesRequest`'s own, else a chat request (`system`, `user`,
        `max_tokens`) in `--api`'s format."""
        c = self.config
        if isinstance(req, ResponsesRequest):
            return {**req.body, "model": c.model}
        if c.api == Api.ANTHROPIC:
            return {"model": c.model, "max_tokens": req.max_tokens, "system": req.system,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": req.user}]}]}
        body: dict[str, Any] = {
            "model": c.model,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
            c.max_tokens_field: req.max_tokens,
            "stream": c.stream,
        }
        if c.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def _cached(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        if self.cache is None or self.refresh:
            return None
        return self.cache.get(key)

    def __call__(self, req: Any) -> Answer:
        """The answer to `req`: from the cache, else sent. The same request asked twice at once (two
        settings of a grid share their first compactions) is sent once; the other waits for it."""
        body = self.body(req)
        responses = isinstance(req, ResponsesRequest)
        url = self.responses_url if responses else self.url
        headers = dict(req.headers) if responses else {}
        key = request_key(url, "responses" if responses else self.config.api.value, body)
        while True:
            hit = self._cached(key)
            if hit is not None:
                with self._lock:
                    self.hits += 1
                return Answer(hit["text"], hit.get("input_tokens"), hit.get("output_tokens"),
                              float(hit.get("latency_s") or 0.0), True, hit.get("stop_reason"))
            with self._lock:
                busy = self._inflight.get(key)
                if busy is None:
                    self._inflight[key] = threading.Event()
                    break
            busy.wait()  # then its answer is cached (or it failed, and this one tries itself)
        try:
            with self._slots:
                ans = self._send(body, reply_text(req), url, headers)
            value = {"text": ans.text, "input_tokens": ans.input_tokens, "output_tokens": ans.output_tokens,
                     "latency_s": round(ans.latency_s, 3), "stop_reason": ans.stop_reason}
            if self.cache is not None:
                self.cache.put(key, value)
            with self._lock:
                self._memo[key] = value
            return ans
        finally:
            with self._lock:
                ev = self._inflight.pop(key)
            ev.set()

    # -- HTTP -------------------------------------------------------------------------------------
    def _headers(self, responses: bool = False) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        key = self.config.api_key
        if self.config.api == Api.ANTHROPIC and not responses:
            h["anthropic-version"] = ANTHROPIC_VERSION
            if key:
                h["x-api-key"] = key
        elif key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _send(self, body: dict[str, Any], keep: ReplyText, url: str | None = None,
              headers: dict[str, str] | None = None) -> Answer:
        """`body` sent (with retries); `keep`: what the request's agent keeps of the reply."""
        c = self.config
        url = url or self.url
        data = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
        last, last_after = "", None
        for attempt in range(c.retries + 1):
            if attempt:
                self._sleep(self._delay(attempt, last_after))
            with self._lock:
                self.sent += 1
            t0 = time.monotonic()
            try:
                return self._once(data, body.get("stream") is True, t0, url, headers or {}, keep)
            except _Retry as exc:
                last, last_after = str(exc), exc.after
        raise SummarizerError(f"{url}: {last} (after {c.retries + 1} attempts)")

    def _delay(self, attempt: int, after: float | None) -> float:
        if after is not None:
            return min(MAX_RETRY_AFTER_S, max(0.0, after))
        return self.config.backoff_s * 2 ** (attempt - 1)

    def _once(self, data: bytes, stream: bool, t0: float, url: str, extra: dict[str, str],
              keep: ReplyText) -> Answer:
        responses = url == self.responses_url and url != self.url
        req = urllib.request.Request(url, data=data, headers={**self._headers(responses), **extra}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
                if responses:
                    return _parse_responses(resp, t0, url, keep)
                if stream and "text/event-stream" in (resp.headers.get("Content-Type") or ""):
                    return self._parse_stream(resp, t0)
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            if exc.code == 429 or exc.code >= 500:
                raise _Retry(f"HTTP {exc.code}: {detail}", number_text(exc.headers.get("Retry-After"), float)) from None
            raise SummarizerError(f"{url}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Retry(f"{type(exc).__name__}: {reason}") from None
        try:
            obj = json.loads(raw)
        except ValueError:
            raise _Retry(f"the reply is not JSON: {raw[:120]!r}") from None
        return self._parse(obj, time.monotonic() - t0, keep)

    def _parse(self, obj: Any, latency: float, keep: ReplyText) -> Answer:
        if not isinstance(obj, dict):
            raise _Retry("the reply is not a JSON object")
        if self.config.api == Api.ANTHROPIC:
            blocks = obj.get("content")
            if not isinstance(blocks, list):
                raise SummarizerError(f"{self.url}: the reply has no content blocks")
            u = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
            inp = integer(u.get("input_tokens"), None)
            if inp is not None:
                inp += integer(u.get("cache_read_input_tokens")) + integer(u.get("cache_creation_input_tokens"))
            return Answer(keep(blocks), inp, integer(u.get("output_tokens"), None), latency, False, obj.get("stop_reason"))
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise SummarizerError(f"{self.url}: the reply has no choices")
        msg = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
        content = msg.get("content")
        text = content if isinstance(content, str) else keep(content) if isinstance(content, list) else ""
        u = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        return Answer(text, integer(u.get("prompt_tokens"), None), integer(u.get("completion_tokens"), None), latency, False,
                      choices[0].get("finish_reason"))

    def _parse_stream(self, resp: Any, t0: float) -> Answer:
        parts: list[str] = []
        finish = None
        usage: dict[str, Any] = {}
        try:
            for raw in resp:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    ev = json.loads(payload)
                except ValueError:
                    continue
                if not isinstance(ev, dict):
                    continue
                if isinstance(ev.get("usage"), dict):
                    usage = ev["usage"]
                for ch in ev.get("choices") or []:
                    if not isinstance(ch, dict):
                        continue
                    delta = ch.get("delta") if isinstance(ch.get("delta"), dict) else {}
                    if isinstance(delta.get("content"), str):
                        parts.append(delta["content"])
                    finish = ch.get("finish_reason") or finish
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise _Retry(f"the stream broke off: {type(exc).__name__}") from None
        return Answer("".join(parts), integer(usage.get("prompt_tokens"), None), integer(usage.get("completion_tokens"), None),
                      time.monotonic() - t0, False, finish)


def responses_url(url: str) -> str:
    """The Responses endpoint from a base URL (`http://127.0.0.1:11434/v1`) or a full one."""
    u = url.rstrip("/")
    for tail in ("/chat/completions", "/messages"):
        if u.endswith(tail):
            u = u[: -len(tail)]
    return u if u.endswith("/responses") else u + "/responses"


def _parse_responses(resp: Any, t0: float, url: str, keep: ReplyText) -> Answer:
    """A streamed Responses answer: the output items, the usage; a failed response is refused."""
    items: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    try:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            try:
                ev = json.loads(line[5:].strip())
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type")
            if kind == "response.output_item.done" and isinstance(ev.get("item"), dict):
                items.append(ev["item"])
            elif kind == "response.completed" and isinstance(ev.get("response"), dict):
                final = ev["response"]
            elif kind == "response.failed":
                err = (ev.get("response") or {}).get("error") or {}
                raise SummarizerError(f"{url}: the response failed: {err.get('code')}: {err.get('message')}")
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise _Retry(f"the stream broke off: {type(exc).__name__}") from None
    if final is None:
        raise _Retry("the stream closed before response.completed")
    output = final.get("output") if isinstance(final.get("output"), list) and final.get("output") else items
    u = final.get("usage") if isinstance(final.get("usage"), dict) else {}
    return Answer(keep([it for it in output if isinstance(it, dict)]), integer(u.get("input_tokens"), None),
                  integer(u.get("output_tokens"), None), time.monotonic() - t0, False, final.get("status"))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read()[:2000]
        obj = json.loads(raw)
        err = obj.get("error") if isinstance(obj, dict) else None
        msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
        return str(msg or raw[:200].decode("utf-8", "replace"))
    except (ValueError, OSError, AttributeError):
        return str(exc.reason)


__all__ = ["Api", "Endpoint", "EndpointConfig", "responses_url", "target_url"]
