"""The C scanner (`read._native.project_lines`, issue 28) against orjson: a line it projects is one
orjson reads as one JSON object, and the projection is what the spec takes from orjson's object
(`_reference` below); every line orjson refuses, or reads otherwise, it leaves to the ordinary way
(None). Over every line of every sample and bad fixture, mutated lines (truncation at every byte,
bad escapes, lone surrogates, invalid UTF-8, control characters, NaN and huge numbers, deep
nesting, glued objects, odd whitespace, duplicated and escaped keys) and generated JSON. The
readers' own equality (records and diagnostics, the ordinary way against the projection) is in
tests/read/test_codex_selective.py."""

from __future__ import annotations

import json
import shutil
import sysconfig
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read.claude_code.lean import LEAN_SPEC
from sessiontools.read.codex.selective import NATIVE_SPEC
from sessiontools.read.lines import line_views
from sessiontools.read.values import count, optional_text, text
from tests.conftest import BAD, SAMPLES

_NO = object()  # the whole line goes the ordinary way


def _native() -> Any:
    """The extension; a skip only on a machine with no C compiler (where the install cannot build
    it and the readers run their Python paths), a failure anywhere else."""
    try:
        from sessiontools.read import _native as mod
    except ImportError:
        if shutil.which(sysconfig.get_config_var("CC") or "cc") or shutil.which("cc"):
            raise
        pytest.skip("no C compiler: the extension is not built here")
    return mod


def _passes(fast: tuple[Any, ...], v: Any) -> bool:
    t = type(v)
    return t in fast[0] or (t in fast[1] and fast[2] <= v <= fast[3])


#: The first byte of a JSON value of each type (a spec's bytes name the kinds a skipped value may be).
_KIND = {str: b'"', list: b"[", dict: b"{", type(None): b"n", bool: b"tf", int: b"-0123456789", float: b"-0123456789"}


def _reference(obj: Any, spec: dict[str, Any]) -> Any:
    """What the spec takes from a decoded object (the rules of sessiontools/read/_project.c), or _NO."""
    out: dict[str, Any] = {}
    for key, v in obj.items():
        if key not in spec:
            continue
        mode = spec[key]
        if mode is False:
            return _NO
        if isinstance(mode, bytes):  # validated, not built: of one of these kinds (b"": any)
            if mode and not set(_KIND[type(v)]) & set(mode):
                return _NO
            continue
        if isinstance(mode, list):  # a list's objects projected, anything else built whole
            if type(v) is list:
                v = [_reference(e, mode[0]) if type(e) is dict else e for e in v]
                if any(e is _NO for e in v):
                    return _NO
        elif isinstance(mode, dict):
            if type(v) is dict:
                v = _reference(v, mode)
                if v is _NO:
                    return _NO
            elif v is not None:
                return _NO
        elif isinstance(mode, frozenset):
            if type(v) is not str or v not in mode:
                return _NO
        elif isinstance(mode, tuple) and not _passes(mode, v):
            return _NO
        out[key] = v
    return out


#: A spec of every kind of field, over the keys the mutations use.
SPEC: dict[str, Any] = {
    "type": frozenset({"a", "event_msg", "user", "assistant", "message"}), "s": None, "t": text.fast,
    "o": optional_text.fast, "c": count.fast, "bail": False, "n": None, "timestamp": None,
    "payload": {"type": None, "x": None, "usage": {"input_tokens": count.fast}}, "message": {"role": None, "id": None},
}
#: A spec that skips fields of given kinds (bytes) and projects the objects of a list (`[spec]`), like
#: the Claude Code reader's (`read.claude_code.lean.LEAN_SPEC`).
REST: dict[str, Any] = {
    "x": b'"[', "n": b"", "bail": False, "t": text.fast, "k": None, "s": None, "payload": {"usage": b"{", "k": None},
    "message": {"role": None, "content": [{"text": b'"', "id": None, "k": None, "x": [{"s": b"n", "k": None}]}]},
}
SPECS = (SPEC, NATIVE_SPEC, REST, LEAN_SPEC)


def _check(line: bytes, spec: dict[str, Any] = SPEC) -> bool:
    """The C scanner's answer for `line` is right; whether it projected it."""
    ((start, stop, got),) = _native().project_lines(line + b"\n", spec, 1, 0)
    assert (start, stop) == (0, len(line))
    if got is None:
        return False
    obj = orjson.loads(line)  # (raises if the scanner took a line orjson refuses)
    assert type(obj) is dict
    want = _reference(obj, spec)
    assert want is not _NO and got == want
    assert [type(v) for v in got.values()] == [type(v) for v in want.values()]  # (1 == 1.0 == True)
    return True


def _all_lines() -> list[bytes]:
    files = sorted(SAMPLES.rglob("*.jsonl")) + sorted(BAD.rglob("*.jsonl"))
    return [bytes(raw) for f in files for _, raw, _ in line_views(f.read_bytes())]


def test_every_sample_and_bad_fixture_line() -> None:
    lines = _all_lines()
    taken = sum(_check(line) for line in lines)
    codex = sum(_check(line, NATIVE_SPEC) for line in lines)
    rest = sum(_check(line, REST) for line in lines)
    claude = sum(_check(line, LEAN_SPEC) for line in lines)
    assert len(lines) > 1000 and taken > len(lines) // 2 and codex > 300  # (the path is taken)
    assert rest > len(lines) // 2 and claude > len(lines) // 2


def test_lines_cut_and_numbered_as_line_views() -> None:
    for data in (b"", b"\n", b"a", b"a\n", b"\n\n{}\n", b"{}\r\n{}", b'{"s":1}\n\n{"s":2}\n\n'):
        got = [(start, stop) for start, stop, _ in _native().project_lines(data, SPEC, 1, 0)]
        want = [(after - 1 - len(raw), after - 1) for _, raw, after in line_views(data)]
        assert got == want
    rows = _native().project_lines(b'{"s":1}\n{"s":2}\n{"s":"long enough"}\n', SPEC, 2, 10)
    assert [r[2] for r in rows] == [None, {"s": 2}, None]  # before `first`, over `limit`


@pytest.mark.parametrize("line", [
    b'{"s":"\\ud800"}', b'{"s":"\\udc00"}', b'{"s":"\\ud800\\u0041"}', b'{"s":"\\ud83d\\ude00"}', b'{"s":"\\x"}',
    b'{"s":"\\u12"}', b'{"s":"\\u00e9\\n\\t\\/\\"\\\\\\b\\f\\r"}', b'{"s":"\\u0000"}', b'{"s":"\x01"}', b'{"s":"\x7f"}',
    b'{"s":"\xff"}', b'{"s":"\xc0\x80"}', b'{"s":"\xed\xa0\x80"}', b'{"s":"\xf4\x90\x80\x80"}', b'{"s":"\xe2\x82"}',
    "{\"s\":\"\u00e9\u4e2d\U0001f600\"}".encode(), b'{"x":"\xff"}', b'{"x":"\\ud800"}',
    # three-byte characters at the edges of the scanner's fast path (E1-EC, EE-EF) and of its checks
    b'{"s":"\xe0\xa0\x80\xe0\x9f\xbf"}', b'{"s":"\xe0\xa0\x80"}', b'{"s":"\xed\x9f\xbf"}', b'{"s":"\xed\xa0\x80"}',
    b'{"s":"\xe1\x80\x80\xec\xbf\xbf\xee\x80\x80\xef\xbf\xbf"}', b'{"x":"\xe4\xb8\xad\xe4\xb8"}', b'{"x":"\xe4\xb8\xad\xe4"}',
    b'{"x":"\xe4\xb8\xad\xe4\xb8\x41"}', b'{"x":"\xe4\x41\xad"}', b'{"x":"\xe4\xb8\xad\xf0\x9f\x98\x80\xc3\xa9\xe4\xb8\xad"}',
    b'{"x":"\xe4\xb8\xad\xc0\xaf"}', b'{"x":"\xe4\xb8\xad\xe4\xb8\xad\xff"}', b'{"x":"\xef\xbf\xbf\xf4\x8f\xbf\xbf\xe4\xb8\xad"}',
    b'{"x":"\xe4\xb8\xad', b'{"x":"\xe4\xb8', b'{"x":"\xe4\xb8\xad\xe4\xb8\xad"', b'{"x":"\xe4\xb8\xad\x80"}',
    b'{"s":NaN}', b'{"s":Infinity}', b'{"s":-Infinity}', b'{"s":1e400}', b'{"x":1e400}', b'{"s":-1e400}',
    b'{"s":18446744073709551616}', b'{"x":18446744073709551616}', b'{"s":123456789012345678}',
    b'{"s":1234567890123456789}', b'{"s":-0}', b'{"s":-0.0}', b'{"s":1E5}', b'{"s":1e+05}', b'{"s":0.1e-2}',
    b'{"s":01}', b'{"s":1.}', b'{"s":.5}', b'{"s":-}', b'{"s":+1}', b'{"s":1e}', b'{"s":0.1234567890123456789}',
    b'{"s":2.2250738585072014e-308}', b'{"s":5e-324}', b'{"s":1.7976931348623157e308}',
    b'{"s":true,"n":false,"t":null}', b'{"s":tru}', b'{"s":nul}', b'{"s":1,}', b'{"s":1,,"n":2}', b'{,}',
    b'{"s" 1}', b'{"s":1 "n":2}', b'{s:1}', b"{'s':1}", b'{"s":[1,2,]}', b'{"s":[,]}', b'{"s":[1 2]}',
    b'{"s":1}{"s":2}', b'{"s":1} {"s":2}', b'{"s":1}x', b'{"s":1}\x0c', b'\x0c{"s":1}', b'\xef\xbb\xbf{"s":1}',
    b' \t{"s":1}\r', b'{ "s" : 1 , "n" : [ 1 , { } ] }', b'[{"s":1}]', b'"s"', b"1", b"", b" ", b"{", b"}",
    b'{"s":1,"s":2}', b'{"x":1,"x":2,"s":3}', b'{"\\u0073":1}', b'{"payload":{"\\u0074ype":1}}', b'{"\\u00e9":1}',
    b'{"bail":1}', b'{"s":1,"bail":null}', b'{"type":"a"}', b'{"type":"b"}', b'{"type":1}', b'{"t":1}',
    b'{"t":"x","o":null,"c":5}', b'{"o":5}', b'{"c":-1}', b'{"c":1.0}', b'{"c":true}', b'{"c":100000001}',
    b'{"payload":5}', b'{"payload":null}', b'{"payload":[]}', b'{"payload":{"usage":{"input_tokens":"1"}}}',
    b'{"payload":{"usage":{"input_tokens":1,"other":[{"deep":{}}]},"x":{"a":[1,"2",null]}}}',
    b'{"x":' + b"[" * 63 + b"]" * 63 + b"}", b'{"x":' + b"[" * 64 + b"]" * 64 + b"}",
    b'{"x":' + b"[" * 3000 + b"]" * 3000 + b"}", b'{"s":' + b"[" * 70 + b"]" * 70 + b"}",
    b'{"message":{"role":"user","id":"\\u00e9","content":[{"type":"text","text":"\\ud800"}]}}',
    b'{"x":"a","n":{"deep":[1,{"a":null}]},"k":1}', b'{"x":[1],"n":1e400}', b'{"x":5}', b'{"x":null}',
    b'{"x":{}}', b'{"x":"\\ud800"}', b'{"x":"a","x":"b"}', b'{"x":"a","x":1}', b'{"k":1,"k":2}',
    b'{"\\u0078":1}', b'{"payload":{"usage":{"a":1},"k":[]}}', b'{"payload":{"usage":[]}}',
    b'{"message":{"content":"a string"}}', b'{"message":{"content":[1,"s",null,{"text":"t","k":2}]}}',
    b'{"message":{"content":[{"text":5}]}}', b'{"message":{"content":[{"id":1,"x":[{"s":null},{"s":1}]}]}}',
    b'{"message":{"content":[{"x":[{"s":null},2]}]}}', b'{"message":{"content":[]}}',
    b'{"message":{"content":{"text":"t"}}}', b'{"message":{"content":[' + b"[" * 70 + b"]" * 70 + b"]}}",
    b'{"message":{"content":[{"text":"a","text":"b"}]}}', b'{"message":{"content":[{"\\u0074ext":"a"}]}}',
    b'{"message":{"content":[{"text":"a"},]}}', b'{"message":{"content":[{"text":"a"} {"text":"b"}]}}',
])
def test_odd_json(line: bytes) -> None:
    for spec in SPECS:
        _check(line, spec)


def test_every_truncation_and_mutation_of_real_lines() -> None:
    lines = [line for line in _all_lines() if line.startswith(b"{")][::7][:300]
    odd = (b"\\ud800", b"\xff", b"\x00", b"\\", b'"', b"1e400", b"NaN", b"}{", b",", b"\xe4\xb8")
    for line in lines[:60]:
        for cut in range(0, len(line), max(1, len(line) // 97)):
            for spec in SPECS:
                _check(line[:cut], spec)
    for k, line in enumerate(lines):
        for j, o in enumerate(odd):
            at = (k * 31 + j * 17) % max(1, len(line))
            for spec in SPECS:
                _check(line[:at] + o + line[at:], spec)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from("\"\\\x00\x1f\u00e9\u4e2d\U0001f600"))
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | _TEXT,
                     lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.sampled_from(["s", "t", "o", "c", "n", "x", "type", "payload", "usage",
                                                        "input_tokens", "bail", "content", "text", "id"]) | _TEXT,
                                       kids, max_size=5),
                     max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SPEC)) | _TEXT, _JSON, max_size=6), st.booleans())
def test_generated_json(obj: dict[str, Any], ascii_only: bool) -> None:
    line = json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":")).encode("utf-8", "surrogatepass")
    spaced = json.dumps(obj, ensure_ascii=True, indent=None).encode()  # (with spaces)
    for spec in (SPEC, REST):
        _check(line, spec)
        _check(spaced, spec)


def test_three_byte_characters_validated_as_orjson_does() -> None:
    """The scanner's fast path for three-byte characters (E1-EC, EE-EF led) and the checks around
    it: a string of valid UTF-8 is taken, any other refused, at every cut of a run of them."""
    run = "中\u0800\ud7ff\ue000\uffff中é\U0001f600中".encode()
    bad = (b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xe4\xb8", b"\xe4\x41\xad", b"\xc0\xaf", b"\x80", b"\xff")
    lines = [b'{"x":"' + run[:i] + b'"}' for i in range(len(run) + 1)]
    lines += [b'{"x":"' + run[:i] + x + run[i:] + b'"}' for x in bad for i in range(0, len(run) + 1, 2)]
    _agree_with_orjson(lines)


def _agree_with_orjson(lines: list[bytes]) -> int:
    """Each line is taken by the scanner exactly when orjson takes it; how many were taken."""
    taken = 0
    for line in lines:
        try:
            orjson.loads(line)
            valid = True
        except orjson.JSONDecodeError:
            valid = False
        assert _check(line) is valid, line
        taken += valid
    return taken


def test_runs_of_three_byte_characters_validated_five_at_a_time() -> None:
    """The five-at-a-time test of a run of three-byte characters (`cjk5`, 16 bytes read): every
    bad sequence, every lead it must not take (E0, ED) and every ASCII byte, at every offset of a
    long run, and every cut of it, is refused or taken as orjson does."""
    run = ("中文字符测试" * 4 + "，。").encode()
    odd = (b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xe4\xb8", b"\xe4\x41\xad", b"\x80", b"\xff", b"\xe0\xa0\x80",
           b"\xed\x9f\xbf", b"\xf0\x9f\x98\x80", b"\xc3\xa9", b"a", b'\\"', b"\x1f")
    lines = [b'{"x":"' + run[:i] + b'"}' for i in range(len(run) + 1)]
    lines += [b'{"x":"' + run[:i] + x + run[i:] + b'"}' for x in odd for i in range(len(run) + 1)]
    lines += [b'{"x":"' + run[:i] + run[i + 1:] + b'"}' for i in range(len(run))]  # (a byte dropped)
    taken = _agree_with_orjson(lines)
    assert 0 < taken < len(lines)
