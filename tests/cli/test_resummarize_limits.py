"""The endpoint client's limits: at most --concurrency requests in flight, and the key from the
environment in the header the wire format asks for (never in the cache key)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sessiontools.endpoint.cache import request_key
from sessiontools.endpoint.client import Api, Endpoint, EndpointConfig, target_url
from sessiontools.policies.pi.summarize import RequestKind, SummaryRequest


class _Slow(BaseHTTPRequestHandler):
    lock = threading.Lock()
    now = 0
    peak = 0
    headers_seen: list[dict[str, str]] = []

    def log_message(self, *a) -> None:  # type: ignore[no-untyped-def]
        pass

    def do_POST(self) -> None:  # noqa: N802
        cls = type(self)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with cls.lock:
            cls.now += 1
            cls.peak = max(cls.peak, cls.now)
            cls.headers_seen.append(dict(self.headers))
        time.sleep(0.05)
        with cls.lock:
            cls.now -= 1
        text = "summary of " + body["messages"][-1]["content"][:20] if "messages" in body else "?"
        out = json.dumps({"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 5, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture
def slow():  # type: ignore[no-untyped-def]
    handler = type("H", (_Slow,), {"lock": threading.Lock(), "now": 0, "peak": 0, "headers_seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield handler, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def _req(n: int) -> SummaryRequest:
    return SummaryRequest(RequestKind.INITIAL, "system", f"user text {n}", 100)


def test_at_most_concurrency_requests_in_flight(slow) -> None:  # type: ignore[no-untyped-def]
    handler, url = slow
    ep = Endpoint(EndpointConfig(url, "m", concurrency=2))
    threads = [threading.Thread(target=ep, args=(_req(n),)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ep.sent == 8 and handler.peak == 2


def test_the_same_request_at_once_is_sent_once(slow) -> None:  # type: ignore[no-untyped-def]
    handler, url = slow
    ep = Endpoint(EndpointConfig(url, "m", concurrency=4))
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(ep(_req(0)))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ep.sent == 1 and ep.hits == 3 and len({a.text for a in answers}) == 1


def test_key_goes_in_the_header_not_the_cache_key(slow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handler, url = slow
    ep = Endpoint(EndpointConfig(url, "m", api_key="sk-test-123"))
    ep(_req(1))
    assert handler.headers_seen[-1]["Authorization"] == "Bearer sk-test-123"
    body = ep.body(_req(1))
    assert "sk-test-123" not in json.dumps(body)
    assert request_key(ep.url, "openai-completions", body) == request_key(
        Endpoint(EndpointConfig(url, "m", api_key="other")).url, "openai-completions", body)


def test_target_urls() -> None:
    assert target_url("http://127.0.0.1:11434/v1", Api.OPENAI) == "http://127.0.0.1:11434/v1/chat/completions"
    assert target_url("http://h/v1/chat/completions", Api.OPENAI) == "http://h/v1/chat/completions"
    assert target_url("https://api.anthropic.com", Api.ANTHROPIC) == "https://api.anthropic.com/v1/messages"
    assert target_url("http://h/v1/", Api.ANTHROPIC) == "http://h/v1/messages"
