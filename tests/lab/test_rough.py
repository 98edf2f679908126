"""The rough lab's parts (no Node needed): content-dependent tokenizer and hidden overhead."""

from __future__ import annotations

import hashlib
import json
import math
import urllib.request

import pytest

from lab.rough import HiddenOverhead, RoughTokenizer, classify, load_o200k
from lab.server import LabServer, ServerConfig
from lab.tokenizer import PseudoTokenizer
from lab.workload import build_workload


@pytest.fixture(scope="module")
def tok() -> RoughTokenizer:
    return RoughTokenizer()


def o200k(text: str) -> int:
    return len(load_o200k().encode_ordinary(text))


@pytest.mark.parametrize(
    ("text", "expected", "derivation"),
    [
        ("", 0, "empty"),
        ("hello world", 2, "word 1 + word 1"),
        ("Hello, world!", 5, "word 1 + punct 1.5 + word 1 + punct 1.5"),
        ("12345", 5, "digits: one per digit (o200k: '123' '45' = 2)"),
        ("1234567", 7, "digits: one per digit (o200k 3)"),
        ("    ", 1, "space: 1 + 3 // 4"),
        (" " * 9, 3, "space: 1 + 8 // 4"),
        ("foo.bar", 3, "word 1 + code '.bar' 1.25 = 2.25 -> 3"),
        ("你好", 2, "cjk: 1 o200k token * 1.4 -> 2"),
        ("你好，世界。压缩之后", 10, "cjk: 7 o200k tokens * 1.4 = 9.8 -> 10"),
    ],
)
def test_rough_tokenizer_hand_derived(tok: RoughTokenizer, text: str, expected: int, derivation: str) -> None:
    assert tok.count(text) == expected, derivation


def test_o200k_counts_behind_the_hand_derived_values() -> None:
    """The o200k numbers the derivations above rely on (the offline vocabulary is the real one)."""
    assert o200k("hello world") == 2
    assert o200k("12345") == 2
    assert o200k("你好") == 1
    assert o200k("你好，世界。压缩之后") == 7
    assert o200k(".bar") == 1


def test_piece_classes() -> None:
    assert classify("你好") == "cjk"
    assert classify("，世界") == "cjk"
    assert classify("123") == "digits"
    assert classify("\n\n") == "space"
    assert classify('":') == "punct"
    assert classify(".bar") == "code"
    assert classify(" world") == "word"


def test_json_and_code_cost_more_than_o200k(tok: RoughTokenizer) -> None:
    js = '{"a": [1, 2], "b": null}'
    assert (tok.count(js), o200k(js)) == (18, 14)
    code = "self._value = foo.bar(baz)"
    assert (tok.count(code), o200k(code)) == (12, 9)


def test_no_single_ratio_fits_and_o200k_is_close_but_not_exact(tok: RoughTokenizer) -> None:
    wl = build_workload(31, 1, "chinese")
    mixed = build_workload(11, 1)
    prose = mixed.files["docs/architecture.md"]
    chinese = wl.files["notes/note_01.md"]
    data = mixed.files["data/usage.csv"]
    per_chars4 = {name: tok.count(t) / math.ceil(len(t) / 4) for name, t in
                  (("prose", prose), ("chinese", chinese), ("csv", data))}
    # tokens per chars/4 differ by content class: no single chars/4 ratio fits
    assert per_chars4["chinese"] > 3 * per_chars4["prose"]
    assert per_chars4["csv"] > 1.3 * per_chars4["prose"]
    # o200k is close on prose, but not exact
    assert tok.count(prose) != o200k(prose)
    assert 1.0 < tok.count(prose) / o200k(prose) < 1.15
    assert tok.count(chinese) == pytest.approx(1.4 * o200k(chinese), rel=0.02)


def test_rough_counts_are_deterministic_and_cached(tok: RoughTokenizer) -> None:
    text = build_workload(11, 1).files["README.md"]
    a = tok.count(text)
    assert RoughTokenizer().count(text) == a == tok.count(text)
    assert tok.count_segments([text, ""]) == [a + 4, 4]


def test_hidden_overhead_range_buckets_and_rule() -> None:
    ov = HiddenOverhead(300, 1500, bucket=4, seed=7)
    values = [ov.value(n) for n in range(80)]
    assert all(300 <= v <= 1500 for v in values)
    for b in range(20):  # constant within a bucket of 4 agent requests
        assert len(set(values[4 * b:4 * b + 4])) == 1
    assert len(set(values)) >= 10  # it varies
    h = hashlib.sha256(b"7:overhead:2").digest()
    assert ov.value(9) == 300 + int.from_bytes(h[:4], "big") % 1201
    assert HiddenOverhead().value(5) == 0
    assert HiddenOverhead(250, 250).value(99) == 250
    assert HiddenOverhead(300, 1500, seed=8).value(0) != ov.value(0) or \
        HiddenOverhead(300, 1500, seed=8).value(4) != ov.value(4)


def _usage(url: str, body: dict) -> dict:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["usage"]


def test_server_adds_the_hidden_overhead_to_every_request() -> None:
    wl = build_workload(3, 4)
    body = {"model": "lab-model", "stream": False, "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": wl.prompts[1].prompt}]}
    ov = HiddenOverhead(300, 1500, bucket=2, seed=3)
    with LabServer(ServerConfig(workload=wl, window=100000, tokenizer=RoughTokenizer())) as plain, \
            LabServer(ServerConfig(workload=wl, window=100000, tokenizer=RoughTokenizer(), overhead=ov)) as hidden:
        base = [_usage(plain.base_url, body)["prompt_tokens"] for _ in range(5)]
        seen = [_usage(hidden.base_url, body) for _ in range(5)]
        log = list(hidden.model.log)
    assert len(set(base)) == 1
    assert [u["prompt_tokens"] - base[0] for u in seen] == [ov.value(n) for n in range(5)]
    assert [r.hidden for r in log] == [ov.value(n) for n in range(5)]
    # the preamble is not cached: cached tokens never exceed the visible part
    assert all(u["prompt_tokens_details"]["cached_tokens"] <= base[0] for u in seen)


def test_default_lab_tokenizer_is_unchanged() -> None:
    assert ServerConfig(workload=build_workload(3, 1)).tokenizer == PseudoTokenizer(3.2, 1.0)
    assert ServerConfig(workload=build_workload(3, 1)).overhead.value(10) == 0
