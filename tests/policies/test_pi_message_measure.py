"""`read._native.pi_message_measure` (_pi_measure.c, what `EntrySums` measures each message with) is
`serialized_length` of every message it takes, says "may have file operations" of every message
`own_file_ops` finds some in, and leaves the odd shapes to Python (None): checked on every message
we have, on edge cases of the tool-result cut, and on generated shapes of every kind."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.policies.pi import sums
from sessiontools.policies.pi.serialize import (
    TOOL_RESULT_MAX_CHARS,
    convert_to_llm,
    own_file_ops,
    serialize_conversation,
    serialized_length,
)
from sessiontools.policies.pi.sums import EntrySums
from sessiontools.read import load_session
from tests.conftest import SAMPLES, shared_sessions

measure = sums.c_measure
needs_c = pytest.mark.skipif(measure is None, reason="the C extension is not built")
VERSIONS = ["0", "1"]


class _Str(str):
    pass


class _Dict(dict):
    pass


class _List(list):
    pass


def _check(m: Any, v: str) -> bool:
    """Whether the C took `m`; where it did, its answer is Python's."""
    got = measure(m, v)
    if got is None:
        return False
    k, found = got
    assert type(k) is int, (m, v, got)
    assert k == serialized_length(m, v) == len(serialize_conversation(convert_to_llm([m], v), v)), (m, v, got)
    want = own_file_ops(m, v)
    if want is None:
        assert found is None, (m, v, got)
    else:  # the same paths in the same order, each of the exact types `own_file_ops` keeps
        assert type(found) is tuple and [type(d) for d in found] == [dict] * 3, (m, v, got)
        assert [list(d.items()) for d in found] == [list(d.items()) for d in (want.read, want.written, want.edited)]
        assert all(type(p) is str for d in found for p in d), (m, v, got)
    return True


def _files() -> list:
    return [*sorted(SAMPLES.glob("*.jsonl")), *shared_sessions()]


@needs_c
@pytest.mark.parametrize("version", VERSIONS)
def test_every_real_message(version: str) -> None:
    took = total = with_ops = 0
    for f in _files():
        for e in load_session(f).entries:
            if e.message is None:
                continue
            total += 1
            if _check(e.message, version):
                took += 1
                with_ops += measure(e.message, version)[1] is not None
    assert total > 1000
    assert took >= 0.97 * total  # the fast path is the common path (system, bashExecution: Python's)
    assert with_ops >= 100


def _deep(n: int) -> Any:
    v: Any = "leaf"
    for k in range(n):
        v = [v] if k % 2 else {"k": v}
    return v


def _long(prefix: int, tail: str) -> str:
    return "a" * prefix + tail


EDGE: list[Any] = [
    *({"role": "toolResult", "content": [{"type": "text", "text": _long(n, t)}]}
      for n in (TOOL_RESULT_MAX_CHARS - 2, TOOL_RESULT_MAX_CHARS - 1, TOOL_RESULT_MAX_CHARS, TOOL_RESULT_MAX_CHARS + 1)
      for t in ("😀", "😀b", "é", "é" * 5, "\ud83d", "\ude00", "\ud83d\ude00", "x😀" * 3, "")),
    {"role": "toolResult", "content": [{"type": "text", "text": "😀" * 1500}, {"type": "text", "text": "é" * 10}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "a" * 1999}, {"type": "image"},
                                       {"type": "text", "text": "😀z"}]},
    {"role": "toolResult", "content": [{"type": "text", "text": "a" * 1999 + "\ud83d"}, {"type": "text", "text": "\ude00"}]},
    {"role": "toolResult", "content": "😀" * 1001},
    {"role": "toolResult", "content": "a" * 10**5},
    {"role": "toolResult", "content": [{"type": "text", "text": "ü" * 2001}], "nestedCalls": {"calls": []}},
    {"role": "toolResult", "content": [], "nestedCalls": {"calls": [{"name": "read", "arguments": {"path": "p"}}]}},
    {"role": "toolResult", "content": [{"type": "text", "text": "x"}], "nestedCalls": None},
    {"role": "user", "content": [{"type": "text", "text": "\ud800" * 3000}]},
    {"role": "user", "content": [{"type": "text"}, {"type": "text", "text": None}, {"type": None}, 5, None, []]},
    {"role": "user", "content": [{"type": "text", "text": 3}]},
    {"role": "user", "content": [{"type": "text", "text": True}]},
    {"role": "user", "content": [{"type": _Str("text"), "text": "a"}]},
    {"role": "user", "content": [_Dict(type="text", text="a")]},
    {"role": "user", "content": _List([{"type": "text", "text": "a"}])},
    {"role": "user", "content": _Str("a")},
    {"role": "user", "content": {"type": "text", "text": "a"}},
    {"role": "user"},
    {"role": _Str("user"), "content": "a"},
    {"role": None, "content": "a"},
    {"content": "a"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "thinking"},
                                      {"type": "text", "text": "é😀"}, {"type": "text"}]},
    {"role": "assistant", "content": [{"type": "toolCall"}, {"type": "toolCall", "name": None},
                                      {"type": "toolCall", "name": 3}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "bash", "arguments": {
        "command": 'echo "hi"\n\t\x01\x7f\u2028\ud800😀', "n": 2**53 - 1, "m": -(2**53) + 1, "big": 2**53,
        "f": 1.5, "none": None, "yes": True, "no": False, "list": [1, None, "a", [], {}],
        "obj": {"1": "x", "a": {"b": [True]}}}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "bash", "arguments": {
        "command": "ls", "n": 2**53 - 1, "m": -(2**53) + 1, "none": None, "yes": True, "no": False,
        "list": [1, None, "a", [], {}], "obj": {"1": "x", "a": {"b": [True, 'q"\\']}}}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {
        "ints": [0, 7, -5, -42, 10, 99, -100, 123456, -(2**31), 2**32]}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "edit", "arguments": {
        "path": "f.py", "edits": [{"oldText": "a\nb", "newText": "c"}]}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": []}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "write", "arguments": "x"}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": ""}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {3: "x"}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": _Dict(path="x")}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": _Str("read"), "arguments": {"path": "x"}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {"a": _Str("b")}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {"a": (1, 2)}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {"a": {"b": {3: 1}}}}]},
    *({"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {"a": _deep(n)}}]}
      for n in (0, 1, 30, 31, 32, 33, 100)),
    {"role": "assistant", "content": [{"type": "text", "text": 3}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": 3}]},
    {"role": "assistant", "content": "text"},
    {"role": "assistant", "content": None},
    {"role": "assistant", "content": [None, "x", 3, {"type": 3}, {"no": "type"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "a"}, object()]},
    {"role": "assistant", "content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "a"}}, {"type": "toolCall", "name": "edit", "arguments": {"path": "b"}},
        {"type": "toolCall", "name": "read", "arguments": {"path": "c"}}, {"type": "toolCall", "name": "read", "arguments": {"path": "a"}},
        {"type": "toolCall", "name": "write", "arguments": {"path": "b"}}, _Dict(type="toolCall", name="read", arguments={"path": "d"}),
        {"type": "toolCall", "name": "read", "arguments": {"path": 3}}, {"type": "toolCall", "name": "read", "arguments": {"path": None}},
        {"type": "toolCall", "name": "read"}, {"type": "toolCall", "arguments": {"path": "e"}},
        {"type": "toolCall", "name": "read", "arguments": {"path": "é😀"}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": _Str("x")}}]},
    {"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {"path": _Str("")}}]},
    {"role": "assistant", "content": _List([{"type": "toolCall", "name": "read", "arguments": {"path": "x"}}])},
    *({"role": "toolResult", "content": [{"type": "text", "text": "r"}], "nestedCalls": nested} for nested in (
        {"calls": [{"name": "read", "arguments": {"path": "a"}}, {"name": "edit", "arguments": {"path": "a"}},
                   {"name": "write", "arguments": {"path": "b"}}, {"name": "read", "arguments": {"path": "a"}},
                   {"name": "read"}, {"arguments": {"path": "z"}}, "x", None, 3, {"name": None, "arguments": {"path": "y"}},
                   {"name": 3, "arguments": {"path": "y"}}, {"name": "read", "arguments": []}]},
        {"calls": [_Dict(name="read", arguments={"path": "a"})]}, {"calls": [{"name": _Str("read"), "arguments": {"path": "a"}}]},
        {"calls": [{"name": "read", "arguments": _Dict(path="a")}]}, {"calls": ()}, {"calls": "read"}, {"calls": None},
        {"calls": []}, {"calls": 0}, {"calls": 3}, {"calls": {"a": 1}}, {"calls": {}}, {}, [], "x", 3,
        _Dict(calls=[{"name": "read", "arguments": {"path": "a"}}]), {"calls": [object()]})),
    {"role": "system", "content": "sys"},
    {"role": "bashExecution", "command": "ls", "output": "a"},
    _Dict(role="user", content="a"),
    "not a dict",
    None,
    [{"role": "user", "content": "a"}],
]


@needs_c
@pytest.mark.parametrize("version", VERSIONS)
def test_edge_shapes(version: str) -> None:
    took = sum(_check(m, version) for m in EDGE if isinstance(m, dict))
    assert took >= 60
    for m in ("not a dict", None, [], _Dict(role="user", content="a")):
        assert measure(m, version) is None
    for v in ("2", "", "00", None, 0, _Str("0")):
        assert measure({"role": "user", "content": "a"}, v) is None


# Generated shapes: every kind of value where each field is read, odd ones included.
_chars = st.one_of(st.characters(), st.sampled_from(
    ["\ud83d", "\ude00", "😀", "é", "中", '"', "\\", "\n", "\t", "\x01", "\x1f", "\u2028", "\x7f", "a"]))
_text = st.one_of(
    st.text(_chars, max_size=12),
    st.builds(lambda n, t: "a" * n + t, st.integers(TOOL_RESULT_MAX_CHARS - 4, TOOL_RESULT_MAX_CHARS + 2),
              st.text(_chars, max_size=6)),
    st.builds(lambda t, n: t * n, st.text(_chars, min_size=1, max_size=3), st.integers(600, 2100)),
)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.integers(-(2**60), 2**60),
                    st.sampled_from([2**53 - 1, 2**53, -(2**53) + 1, -(2**53)]), st.floats(allow_nan=True),
                    _text, st.builds(_Str, _text))
_json = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(_chars, max_size=4), inner, max_size=4),
    st.builds(_List, st.lists(inner, max_size=2)), st.builds(_Dict, st.dictionaries(st.text(max_size=2), inner, max_size=2)),
    st.tuples(inner)), max_leaves=12)
_plain_json = st.recursive(  # only what the C measures itself
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.integers(-(2**53) + 1, 2**53 - 1), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(_chars, max_size=4), inner, max_size=4)),
    max_leaves=12)
_kind = st.sampled_from(["text", "thinking", "toolCall", "image", "", None, 3, _Str("text"), _Str("toolCall")])
_plain_kind = st.sampled_from(["text", "thinking", "toolCall", "toolCall", "image"])
_name = st.one_of(st.sampled_from(["read", "write", "edit", "bash", "", "é"]), st.builds(_Str, st.just("read")),
                  st.none(), st.integers())
_plain_name = st.sampled_from(["read", "write", "edit", "bash", "", "é😀"])
_args = st.one_of(
    st.dictionaries(st.sampled_from(["path", "command", "oldText", "1", "é", ""]), _json, max_size=4),
    st.dictionaries(st.integers(), _json, max_size=2), _json)
_plain_dict = st.dictionaries(st.one_of(st.sampled_from(["path", "command", "oldText", "1", "é", ""]),
                                        st.text(_chars, max_size=3)), _plain_json, min_size=1, max_size=4)
_plain_args = st.one_of(_plain_dict, _plain_dict, _plain_dict, st.just({}), st.none(), st.lists(_plain_json, max_size=2),
                        _text)


@st.composite
def _block(draw: Any, odd: bool) -> Any:
    b: dict[Any, Any] = {}
    kind = draw(_kind if odd else _plain_kind)
    if not odd or draw(st.booleans()):
        b["type"] = kind
    for key, value in (("text", _json if odd and draw(st.integers(0, 5)) == 0 else st.one_of(st.none(), _text)),
                       ("thinking", _json if odd and draw(st.integers(0, 5)) == 0 else st.one_of(st.none(), _text)),
                       ("name", _name if odd else _plain_name), ("arguments", _args if odd else _plain_args)):
        if draw(st.integers(0, 3)):
            b[key] = draw(value)
    return _Dict(b) if odd and draw(st.integers(0, 15)) == 0 else b


@st.composite
def _message(draw: Any) -> Any:
    odd = draw(st.integers(0, 2)) == 0  # a third of the messages in odd shapes, the rest in plain ones
    roles = ["user", "toolResult", "assistant", "assistant"] + (["system", "custom", ""] if odd else [])
    m: dict[str, Any] = {"role": draw(st.sampled_from(roles))}
    if draw(st.integers(0, 7)):
        blocks = st.lists(st.one_of(_block(odd), _scalar) if odd else _block(odd), min_size=int(not odd), max_size=5)
        m["content"] = draw(st.one_of(blocks, _text, _json, st.builds(_List, st.lists(_block(odd), max_size=2)))
                            if odd else st.one_of(blocks, blocks, _text))
    if draw(st.integers(0, 3)) == 0:
        m["nestedCalls"] = draw(st.one_of(st.none(), _json, st.fixed_dictionaries({"calls": st.lists(
            st.fixed_dictionaries({"name": _name, "arguments": _args}), max_size=2)})))
    return m


@needs_c
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_message(), st.sampled_from(VERSIONS))
def test_generated_shapes(m: Any, version: str) -> None:
    _check(m, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_entry_sums_with_and_without_the_c(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`EntrySums` of every sample path: the same sums and file operations with the C and without."""
    def made(entries: Any) -> tuple:
        s = EntrySums(entries, version)
        s._extend(len(entries))
        ops = [(list(o.read), list(o.written), list(o.edited)) for o in s.ops]
        return s.chars, s.parts, s.msgs, s.odd, s.ops_at, ops

    for f in _files():
        entries = load_session(f).entries
        with_c = made(entries)
        monkeypatch.setattr(sums, "c_measure", None)
        without = made(entries)
        monkeypatch.setattr(sums, "c_measure", measure)
        assert with_c == without, f


_PIECES = ["a", "é", "中", "😀", "\ud83d", "\ude00", '"', "\\", "\n", "\t", "\x01", "\x1f", "\u2028", "\x7f", " "]


def _rand_text(rng: random.Random) -> str:
    pieces = rng.choices(_PIECES, weights=[40, 3, 3, 3, 1, 1, 2, 2, 3, 1, 1, 1, 1, 1, 5], k=rng.randrange(0, 12))
    if rng.random() < 0.15:  # around the tool result cut
        pieces.insert(rng.randrange(len(pieces) + 1), "a" * rng.randrange(TOOL_RESULT_MAX_CHARS - 12, TOOL_RESULT_MAX_CHARS + 3))
    return "".join(pieces)


def _rand_json(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.5:
        return rng.choice([None, True, False, rng.randrange(-1000, 1000), rng.randrange(-(2**53) + 1, 2**53),
                           _rand_text(rng), _rand_text(rng)])
    if r < 0.75:
        return [_rand_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_rand_text(rng)[:4]: _rand_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def _rand_message(rng: random.Random) -> dict[str, Any]:
    role = rng.choice(["user", "toolResult", "assistant", "assistant"])
    blocks: list[Any] = []
    for _ in range(rng.randrange(5)):
        kind = rng.choice(["text", "thinking", "toolCall", "toolCall", "image"])
        b: dict[str, Any] = {"type": kind}
        if rng.random() < 0.9:
            b["text" if kind != "thinking" else "thinking"] = _rand_text(rng) if rng.random() < 0.9 else None
        if kind == "toolCall":
            if rng.random() < 0.9:
                b["name"] = rng.choice(["read", "write", "edit", "bash", "", "é😀"])
            if rng.random() < 0.3:
                b["arguments"] = {"path": rng.choice(["p", "q", "é😀", "", None, 3]), "content": _rand_text(rng)}
            elif rng.random() < 0.9:
                b["arguments"] = ({rng.choice(["path", "command", "1", _rand_text(rng)[:3]]): _rand_json(rng)
                                   for _ in range(rng.randrange(5))} if rng.random() < 0.85 else _rand_json(rng))
        blocks.append(b)
    m: dict[str, Any] = {"role": role, "content": blocks if rng.random() < 0.85 else _rand_text(rng)}
    if rng.random() < 0.2:
        m["nestedCalls"] = rng.choice([None, [], {"calls": None}, {"calls": [
            {"name": rng.choice(["read", "write", "edit", "bash"]), "arguments": {"path": rng.choice(["p", "q", "", 3])}}
            for _ in range(rng.randrange(4))]}])
    return m


@needs_c
@pytest.mark.parametrize("version", VERSIONS)
def test_random_plain_shapes(version: str) -> None:
    """Seeded plain shapes (the ones the C measures itself, tool-call arguments of every JSON kind):
    nearly all taken, each equal to Python's."""
    rng = random.Random(17)
    took = args = ops = 0
    for _ in range(4000):
        m = _rand_message(rng)
        if _check(m, version):
            took += 1
            ops += measure(m, version)[1] is not None
            args += any(b.get("type") == "toolCall" and isinstance(b.get("arguments"), dict) and b["arguments"]
                        for b in m["content"]) if isinstance(m["content"], list) else 0
    assert took >= 3000 and args >= 1000, (took, args)
    assert ops >= 100, ops


@pytest.mark.parametrize("version", VERSIONS)
def test_message_length_with_and_without_the_c(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sums.message_length` (the compactor's memo of lengths) is `serialized_length`, C or not."""
    def measurable(m: Any) -> bool:  # (int keys deep in arguments, which JSON never gives, raise in Python)
        try:
            serialized_length(m, version)
        except TypeError:
            return False
        return True

    msgs = [m for m in EDGE if isinstance(m, dict) and measurable(m)]
    msgs += [e.message for f in _files()[:4] for e in load_session(f).entries if e.message is not None]
    for m in msgs:
        assert sums.message_length(m, version) == serialized_length(m, version), m
    monkeypatch.setattr(sums, "c_measure", None)
    for m in msgs:
        assert sums.message_length(m, version) == serialized_length(m, version), m
