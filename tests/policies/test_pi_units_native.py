"""The C measures of a Pi message (`read._native.pi_units`, `pi_json`, read/_pi_units.c) are the Python
rules' (`tokens.units.units_of` as `PathMeasures` measures it, `jsvalues.json_stringify`) wherever the C
answers, on every message of the samples and the real sessions and on generated odd shapes; and it
answers the plain ones (a C that gave up on everything would pass the equality checks alone)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sessiontools.jsvalues import json_stringify
from sessiontools.policies.pi import measures
from sessiontools.policies.pi.measures import PathMeasures
from sessiontools.tokens.chars4 import ALL, TEXT_ONLY
from tests.conftest import SAMPLES, shared_sessions

native = pytest.importorskip("sessiontools.read._native")
if not hasattr(native, "pi_units"):
    pytest.skip("the C extension predates pi_units", allow_module_level=True)


class _Msg:
    """What PathMeasures reads of a transcript message: its index and Pi's message object."""

    def __init__(self, index: int, raw: Any) -> None:
        self.index, self.raw = index, raw


def _python(messages: tuple[Any, ...], rules: Any, monkeypatch: pytest.MonkeyPatch) -> PathMeasures:
    with monkeypatch.context() as m:
        m.setattr(measures, "_c_units", None)
        return PathMeasures(messages, rules)


def _same(raws: list[Any], monkeypatch: pytest.MonkeyPatch) -> int:
    """Both rules measure `raws` alike; how many the C answered."""
    messages = tuple(_Msg(i, r) for i, r in enumerate(raws))
    answered = 0
    for rules in (ALL, TEXT_ONLY):
        c, py = PathMeasures(messages, rules), _python(messages, rules, monkeypatch)
        for i, raw in enumerate(raws):
            got = (c.texts[i], c.images[i], c.chars[i], c.bytes[i])
            assert got == (py.texts[i], py.images[i], py.chars[i], py.bytes[i]), (rules, raw)
        answered += sum(native.pi_units(r, rules.images, rules.system) is not None for r in raws)
    return answered


def _raws(path: Any) -> list[Any]:
    from sessiontools.read.sources import load_source
    from sessiontools.transcript.load import transcript_of

    t = transcript_of(load_source(path), all_leaves=True)
    return [m.raw for p in t.paths for m in p.messages]


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.jsonl")))
def test_every_sample_message_measures_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raws = _raws(SAMPLES / name)
    assert _same(raws, monkeypatch) >= len(raws)  # of 2 x len: most are plain


def test_every_real_session_message_measures_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    files = shared_sessions()
    if not files:
        pytest.skip("../shared/sessions/pi is absent")
    raws = [r for f in files for r in _raws(f)]
    assert _same(raws, monkeypatch) >= len(raws)


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


_TEXTS = ["", "plain", "ünïcödé", "emoji 😀 two units", "lone \ud800 surrogate", "quote \" back \\ slash",
          "ctl \x00\x01\x1f\b\f\n\r\t", "\u2028 kept", "x" * 2500, _Str("sub")]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["str", "int", "big", "float", "bool", "none", "list", "dict", "tuple", "odd"]
    k = rng.choice(kinds if depth < 4 else kinds[:6])
    if k == "str":
        return rng.choice(_TEXTS)
    if k == "int":
        return rng.choice([0, -1, 7, 2**53 - 1, -(2**53) + 1])
    if k == "big":
        return rng.choice([2**53, -(2**53), 10**30])
    if k == "float":
        return rng.choice([1.5, -0.0, 1e21, 1e-7, float("nan"), 3.0])
    if k == "bool":
        return rng.choice([True, False])
    if k == "none":
        return None
    if k == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if k == "tuple":
        return tuple(_value(rng, depth + 1) for _ in range(rng.randint(0, 2)))
    if k == "odd":
        return rng.choice([_Str("s"), _Dict(a=1), _List([1]), object(), b"bytes"])
    keys = ["path", "a b", "é", "0", "10", "1x", "", "\ud800", "q\"k", _Str("sk")]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _block(rng: random.Random) -> Any:
    t = rng.choice(["text", "thinking", "toolCall", "image", "other", None, _Str("text"), 3])
    b: dict[str, Any] = {} if t is None else {"type": t}
    for key in rng.sample(["text", "thinking", "name", "arguments"], rng.randint(0, 4)):
        b[key] = _value(rng) if key == "arguments" or rng.random() < 0.2 else rng.choice(_TEXTS)
    r = rng.random()
    return _Dict(b) if r < 0.05 else rng.choice([1, "s", None]) if r < 0.1 else b


def _message(rng: random.Random) -> Any:
    role = rng.choice(["user", "assistant", "toolResult", "custom", "bashExecution", "branchSummary",
                       "compactionSummary", "system", "weird", None, 5, _Str("user")])
    m: dict[str, Any] = {} if role is None else {"role": role}
    r = rng.random()
    if r < 0.6:
        m["content"] = [_block(rng) for _ in range(rng.randint(0, 4))]
    elif r < 0.75:
        m["content"] = rng.choice(_TEXTS)
    elif r < 0.8:
        m["content"] = _List([_block(rng)])
    elif r < 0.85:
        m["content"] = rng.choice([None, 3, {"type": "text"}])
    for key in ("command", "output", "summary"):
        if rng.random() < 0.3:
            m[key] = rng.choice(_TEXTS + [None, 4])
    if rng.random() < 0.1:
        m["sections"] = {"a": "section"}
        m["toolsAdded"] = [{"name": "t"}]
    return _Dict(m) if rng.random() < 0.03 else m


def test_generated_odd_messages_measure_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(17)
    raws = [_message(rng) for _ in range(4000)]
    answered = _same(raws, monkeypatch)
    assert 0.3 * len(raws) < answered < 2 * len(raws)  # it answers many and leaves some to Python


def test_pi_json_is_json_stringify_where_it_answers() -> None:
    rng = random.Random(5)
    answered = 0
    for _ in range(20000):
        v = _value(rng)
        got = native.pi_json(v)
        if got is not None:
            answered += 1
            assert got == json_stringify(v), v
    assert answered > 5000
    assert native.pi_json({"path": "a\nb", "n": [1, True, None, {"k": "é"}]}) == '{"path":"a\\nb","n":[1,true,null,{"k":"é"}]}'
    deep: list[Any] = []
    for _ in range(70):
        deep = [deep]
    for left in ({"1": 2}, 1.5, 2**53, "\udc00", (1,), _Str("s"), deep, {3: "int key"}):
        assert native.pi_json(left) is None, left
