"""The Pi reader's selective reading (`read.pi.selective`, `read._native.pi_project_lines` and
`pi_entries`, sessiontools/read/_pi.c; issue 28) against the ordinary reading.

Two oracles. The scanner's: a line it projects is one orjson reads as one JSON object, and the
projection is what the spec takes from orjson's object (`_reference`: the declared fields, with
their types; every check-only field of its kind); every line orjson refuses it leaves to the
ordinary way (None). The reader's: a session read selectively gives inspect's very report
(default path and every leaf), the same diagnostics (`file:line`, kinds, recovered glued lines)
and the same entries (type, id, parent, line, index, role) as the ordinary reading, over every
sample, fixture and shared real file, hand-written odd lines, truncations, mutated bytes and
generated JSON; with the C off a selective reading is the ordinary one."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.analysis.inspect import inspect_source
from sessiontools.read.lines import line_views
from sessiontools.read.parallel import reads_selectively
from sessiontools.read.pi import checks
from sessiontools.read.pi import load as pi_load
from sessiontools.read.pi.entries import Entry
from sessiontools.read.pi.load import read_bytes, read_data
from sessiontools.read.pi.migrate import make_entries
from sessiontools.read.pi.selective import SPEC
from sessiontools.read.sources import FALLBACK, expand_sources, head_of, reader_for
from sessiontools.transcript.pi.inspect import inspect_session
from tests.conftest import BAD, SAMPLES, shared_sessions
from tests.read.test_native_project import _native, _passes

_NO = object()  # the whole line goes the ordinary way
_ABSENT = object()


def _kind_ok(v: Any, kind: Any) -> bool:
    """Whether `v` is of a check-only kind of the spec (_pi.c)."""
    if isinstance(kind, tuple) and kind[0] == "mark":
        return _passes(kind[1], v)
    if v is None:
        return True
    if kind == "str":
        return type(v) is str
    if kind == "object":
        return type(v) is dict
    tag, blocks = kind
    if tag == "content" and type(v) is str:
        return True
    return type(v) is list and all(type(b) is not dict or all(k not in blocks or _kind_ok(x, blocks[k])
                                                               for k, x in b.items()) for b in v)


def _reference(obj: dict[str, Any], spec: dict[str, Any]) -> Any:
    """What the spec takes from a decoded object (the rules of _pi.c), or _NO."""
    out: dict[str, Any] = {}
    for key, v in obj.items():
        mode = spec.get(key, _ABSENT) if key != "*" else _ABSENT
        if mode is _ABSENT:
            if "*" in spec:
                out[key] = v
            continue
        if mode is False:
            return _NO
        if isinstance(mode, dict):
            if type(v) is dict:
                v = _reference(v, mode)
                if v is _NO:
                    return _NO
            elif v is not None:
                return _NO
        elif isinstance(mode, frozenset):
            if type(v) is not str or v not in mode:
                return _NO
        elif isinstance(mode, str) or (isinstance(mode, tuple) and isinstance(mode[0], str)):
            if not _kind_ok(v, mode):
                return _NO
            continue  # (checked, not built)
        elif isinstance(mode, tuple) and not _passes(mode, v):
            return _NO
        out[key] = v
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 == True in Python)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _check_line(line: bytes) -> bool:
    """The scanner's answer for `line` is right; whether it projected it."""
    ((start, stop, got),) = _native().pi_project_lines(line + b"\n", SPEC, 1, 0)
    assert (start, stop) == (0, len(line))
    if got is None:
        return False
    obj = orjson.loads(line)  # (raises if the scanner took a line orjson refuses)
    assert type(obj) is dict
    want = _reference(obj, SPEC)
    assert want is not _NO and _same(got, want), (line[:300], got, want)
    return True


def _report(session: Any) -> list[Any]:
    return [inspect_session(session), inspect_session(session, all_leaves=True),
            [d.to_dict() for d in session.diagnostics],
            [(e.type, e.id, e.parent_id, e.line, e.index, e.role, e.message is None) for e in session.entries],
            session.format_version, session.surrogates, session.header]


def _check_file(data: bytes, path: str = "<memory>") -> None:
    """A selective reading of `data` reports what the ordinary one does."""
    full, sel = read_data(data, path), read_data(data, path, selective=True)
    assert (sel.selective or not sel.entries) and not full.selective
    assert _report(sel) == _report(full)


def _pi_files() -> list[Path]:
    files = [*expand_sources([SAMPLES, BAD, SAMPLES.parent / "tests" / "fixtures"]), *shared_sessions()]
    return sorted({Path(f) for f in files if reader_for(head_of(f)) is FALLBACK})


def test_every_sample_fixture_and_shared_file() -> None:
    files = _pi_files()
    assert len(files) > 40
    for f in files:
        _check_file(f.read_bytes(), str(f))


def test_every_line_projected_as_orjson_reads_it() -> None:
    lines = [bytes(raw) for f in _pi_files() for _, raw, _ in line_views(f.read_bytes())]
    taken = sum(_check_line(line) for line in lines)
    assert len(lines) > 1000 and taken > len(lines) // 2  # (the path is taken)


def test_projections_pass_the_checks_as_they_are() -> None:
    """What `check_objects(..., only=...)` relies on: no projected entry has anything to drop."""
    for f in _pi_files():
        for _, _, fields in _native().pi_project_lines(f.read_bytes(), SPEC, 2, 0):
            if fields is not None:
                assert checks.check_entry(fields) == []


def test_entries_made_in_c_are_make_entries() -> None:
    objs: list[dict[str, Any]] = [
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}},
        {"type": "message", "id": 5, "parentId": ["x"], "message": {"role": 7}}, {"type": "message", "message": "x"},
        {"type": 3}, {}, {"type": "label", "id": "b", "parentId": "a", "message": {"role": "user"}},
        {"type": "message", "message": {}}, {"type": "compaction", "id": "", "parentId": ""},
    ]
    lines = [2, 3, 3, 9, 10, 11, 12, 20]
    got, want = _native().pi_entries(Entry, objs, lines), make_entries(objs, lines)
    assert type(got) is tuple and len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert type(g) is Entry
        for slot in Entry.__slots__:
            assert getattr(g, slot) == getattr(w, slot) and type(getattr(g, slot)) is type(getattr(w, slot)), slot
        assert g.data is w.data and g.message is w.message
    with pytest.raises(TypeError):
        _native().pi_entries(Entry, objs, lines[:-1])
    with pytest.raises(TypeError):
        _native().pi_entries(Entry, [1], [2])


def test_an_ordinary_reading_makes_its_entries_in_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only a selective reading: every reading's entries are `pi_entries`' (where the C is
    built), the same as `make_entries`' (the reading without the C), over every Pi sample."""
    _native()
    made = []
    def spy(cls: type, objects: list[Any], lines: list[int]) -> tuple[Entry, ...]:
        made.append(len(objects))
        return _native().pi_entries(cls, objects, lines)
    for f in sorted(SAMPLES.glob("*.jsonl")):
        data = f.read_bytes()
        monkeypatch.setattr(pi_load, "pi_entries", spy)
        got = read_data(data, str(f)).entries
        assert made and made[-1] == len(got), f
        monkeypatch.setattr(pi_load, "pi_entries", None)
        want = read_data(data, str(f)).entries
        assert len(got) == len(want) > 0
        for g, w in zip(got, want, strict=True):
            for slot in Entry.__slots__:
                assert getattr(g, slot) == getattr(w, slot), (f, slot)


_HEAD = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}\n'
_OK = (b'{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user",'
       b'"content":[{"type":"text","text":"\xe4\xbd\xa0\xe5\xa5\xbd \\n\\"hi\\""}],"timestamp":1767225601000}}\n')
_REPLY = (b'{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant",'
          b'"content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","id":"c1","name":"bash","arguments":'
          b'{"command":"ls"}}],"provider":"p","model":"m","api":"a","stopReason":"toolUse","usage":{"input":10,'
          b'"output":5,"cacheRead":100,"cacheWrite":0,"totalTokens":115,"cost":{"input":0.1,"output":0.2,'
          b'"cacheRead":0,"cacheWrite":0,"total":0.3}},"timestamp":1767225602000}}\n')

#: Odd entry lines (each read after a header and two ordinary lines): every field kind off its mark,
#: null where a value stands, duplicated and escaped keys, bad strings, glued objects, deep nesting.
ODD = [
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[{"type":"text","text":5}]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[{"type":"text","text":null}]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[5,"a",[{"text":1}],null]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":5}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":{"text":"a"}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":null}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"system","toolsAdded":5}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"system","toolsAdded":[{"name":3}],"toolsRemoved":null}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"system","toolsAdded":null,"sections":[]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":"x"}',
    b'{"type":"message","id":"x","parentId":"m2","message":null}',
    b'{"type":"message","id":"x","parentId":"m2","message":[]}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":[]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"other":1}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":-1,"output":1}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":1.5,"output":1.0}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":1,"cost":{"total":"1"}}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":1,"cost":{"total":1e400}}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":1,"input":2}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","usage":{"input":1,"x":[1,{"y":2}]}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","stopReason":"error",'
    b'"errorMessage":"prompt is too long: 300000 tokens","usage":{"input":0,"output":0}}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","model":5,"provider":null}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"assistant","model":"delivery-mirror"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"hookMessage"}}',
    b'{"type":"message","id":"x","id":"y","parentId":"m2","message":{"role":"user"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","role":"assistant"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[{"text":"a","text":5}]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[{"text":5,"text":"a"}]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"a","content":5}}',
    b'{"type":"message","\\u0069d":"x","parentId":"m2","message":{"role":"user"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"r\\u006fle":"user"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[{"t\\u0065xt":5}]}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\\ud800 lone"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\\ud83d\\ude00 pair"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\xff bad utf-8"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\xed\xa0\x80 surrogate"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\xe4\xbd cut"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"ctrl \x01"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":"\\x"}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","content":[' + b"[" * 70 + b"]" * 70 + b"]}}",
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","details":' + b"[" * 62 + b"]" * 62 + b"}}",
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","n":123456789012345678901}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user","n":1e999,"m":-0.0,"k":1E+2}}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user"}}{"type":"label","id":"l","targetId":"x","label":"L"}',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user"}} trailing',
    b'{"type":"message","id":"x","parentId":"m2","message":{"role":"user"}',
    b'{"type":"session","version":3,"id":"s2"}',
    b'[1,2]', b'"text"', b'', b'   ', b'\xef\xbb\xbf{"type":"label"}', b'{"type":"message","id":"x"}\r',
    b'{"type":"compaction","id":"c","parentId":"m2","summary":5,"firstKeptEntryId":"m1","tokensBefore":1000}',
    b'{"type":"compaction","id":"c","parentId":"m2","summary":"s","firstKeptEntryId":7,"tokensBefore":-3}',
    b'{"type":"compaction","id":"c","parentId":"m2","summary":"s","firstKeptEntryId":"m1","tokensBefore":10.0,'
    b'"details":5,"fromHook":true}',
    b'{"type":"compaction","id":"c","parentId":"m2","summary":"s","firstKeptEntryId":"m1","tokensBefore":10,'
    b'"usage":{"input":1,"output":2},"systemMessage":{"role":"system","content":[{"type":"text","text":"x"}]}}',
    b'{"type":"compaction","id":"c","parentId":"m2","summary":"s","tokensBefore":10,"usage":5}',
    b'{"type":"branch_summary","id":"b","parentId":"m1","summary":"s","fromId":5,"details":{"a":[1]}}',
    b'{"type":"model_change","id":"mc","parentId":"m2","provider":1,"modelId":"m"}',
    b'{"type":"thinking_level_change","id":"t","parentId":"m2","thinkingLevel":["high"]}',
    b'{"type":"custom_message","id":"cm","parentId":"m2","customType":"x","content":[{"type":"text","text":1}]}',
    b'{"type":"custom_message","id":"cm","parentId":"m2","customType":"x","content":"plain"}',
    b'{"type":"label","id":"l","parentId":"m2","targetId":"m1","label":5}',
    b'{"type":"label","id":"l","parentId":"m2","targetId":"m1","label":""}',
    b'{"type":"session_info","id":"si","parentId":"m2","name":"  my name  "}',
    b'{"type":"session_info","id":"si","parentId":"m2","name":{"a":1}}',
    b'{"type":"context_edit","id":"ce","parentId":"m2","targetId":"m1","replacement":{"content":5}}',
    b'{"type":"context_edit","id":"ce","parentId":"m2","targetId":"m1","replacement":{"content":[{"text":5}]}}',
    b'{"type":"context_edit","id":"ce","parentId":"m2","targetId":"m1","replacement":7}',
    b'{"type":"message","id":"x","parentId":"m2","timestamp":-1,"message":{"role":"user","timestamp":"x"}}',
    b'{"type":"message","id":"x","parentId":"m2","timestamp":1e20,"message":{"role":"user","timestamp":1e20}}',
    b'{"type":"message","id":"x","parentId":"m2","timestamp":null,"message":{"role":"user","timestamp":null}}',
    b'{"type":"unknown_kind","id":"u","parentId":"m2","payload":{"a":"\\u00e9"}}',
    b'{"type":5,"id":"u","parentId":"m2"}', b'{"id":"u","parentId":"nowhere"}', b'{"type":"message","id":"m1","parentId":"m2"}',
    b'{"type":"message","id":"x","parentId":"x","message":{"role":"user"}}',
    b'{"type":"message","id":"x","parentId":"m2","*":1,"message":{"role":"assistant","usage":{"*":1,"input":2}}}',
]


@pytest.mark.parametrize("line", ODD)
def test_odd_lines(line: bytes) -> None:
    _check_line(line)
    for data in (_HEAD + _OK + _REPLY + line + b"\n", _HEAD + _OK + line + b"\n" + _REPLY, line + b"\n" + _OK,
                 _HEAD + _OK + _REPLY + line):  # (last, without a newline: a truncated last line)
        _check_file(data)


def test_versions_and_headers() -> None:
    v1 = (b'{"type":"session","id":"s","timestamp":"t"}\n{"type":"message","message":{"role":"user","content":"a"}}\n'
          b'{"type":"compaction","summary":"s","firstKeptEntryIndex":1,"tokensBefore":5}\n'
          b'{"type":"compaction","summary":"s","firstKeptEntryIndex":9,"tokensBefore":5}\n')
    v2 = (b'{"type":"session","version":2,"id":"s"}\n{"type":"message","id":"a","parentId":null,'
          b'"message":{"role":"hookMessage","content":"x"}}\n')
    headless = b'{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}\n' + _OK
    for data in (v1, v2, headless, b"", b"\n\n", b"not json\n" + _OK, _HEAD, _HEAD + _HEAD + _OK, b"\x00" + _OK):
        _check_file(data)


def test_every_truncation_and_mutated_byte() -> None:
    files = [f for f in _pi_files() if f.stat().st_size < 400_000][:12]
    rng = random.Random(28)
    odd = (b"\\ud800", b"\xff", b"\x00", b"\\", b'"', b"1e400", b"}{", b",", b"\xe4\xb8", b"\n", b"null", b"[")
    for f in files:
        data = f.read_bytes()
        for cut in sorted(rng.sample(range(len(data)), min(25, len(data)))):
            _check_file(data[:cut])
        for _ in range(25):
            at = rng.randrange(len(data))
            _check_file(data[:at] + rng.choice(odd) + data[at + rng.randrange(3):])


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from("\"\\\x00\x1f\u00e9\u4e2d\U0001f600"))
_KEYS = sorted({*SPEC, *SPEC["message"], *SPEC["usage"], "text", "thinking", "cost", "total", "x"} - {"*"})
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | _TEXT,
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(_KEYS) | _TEXT, kids,
                                                                               max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=8), st.sampled_from(["message", "compaction", "label"]),
       st.booleans())
def test_generated_entries(obj: dict[str, Any], kind: str, ascii_only: bool) -> None:
    obj = {"type": kind, "id": "g", "parentId": "m2", **obj}
    line = json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":")).encode("utf-8", "surrogatepass")
    _check_line(line)
    _check_file(_HEAD + _OK + _REPLY + line + b"\n")


def test_without_the_c_a_selective_reading_is_the_ordinary_one(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _HEAD + _OK + _REPLY + ODD[0] + b"\n"
    monkeypatch.setattr(pi_load, "pi_project_lines", None)
    monkeypatch.setattr(pi_load, "pi_entries", None)
    sel, full = read_bytes(data), read_data(data, "<memory>", selective=True)
    assert _report(sel) == _report(full)
    assert full.entries[0].message is not None and "content" in full.entries[0].message  # (read whole)


def test_inspect_reads_selectively_and_replay_does_not() -> None:
    from functools import partial

    assert reads_selectively(inspect_source) and reads_selectively(partial(inspect_source, leaf=None))
    assert not reads_selectively(inspect_session) and not reads_selectively(lambda s: s)
    sel = read_data(_HEAD + _OK + _REPLY, "<memory>", selective=True)
    assert sel.entries[1].message is not None and "content" not in sel.entries[1].message  # (no content built)
    assert sel.entries[1].message["usage"]["cost"]["total"] == 0.3



def test_runs_of_three_byte_characters() -> None:
    """The scanner's skip over runs of three-byte characters (_pi.c `three_byte_chars`, five at a
    step): every alignment of a run, bounded leads (E0, ED) on both sides of their bounds, and every
    byte of the run replaced by one that breaks it (a truncation, an overlong or surrogate form, an
    ASCII byte, a lead of two or four bytes); a line taken is one orjson reads, with the same value."""
    run = "中文字符测试ࠀ\u0fff퀀\ud7ff\uffff日本語のテキスト한국어".encode()
    assert len(run) % 3 == 0 and all(0xE0 <= run[i] <= 0xEF for i in range(0, len(run), 3))
    odd = (b"\x80", b"\xbf", b"\xe0\x80", b"\xed\xa0", b"\xe4", b"a", b"\xc3", b"\xf0\x9f\x98\x80", b"\xe0\xa0",
           b"\xed\x9f", b'"', b"\\n", b"\x1f")
    taken = 0
    for lead in range(17):
        for text in (run, b"\xc3\xa9" + run + b"\xf0\x9f\x98\x80" + run):
            body = b"x" * lead + text
            variants = [body] + [body[:at] + bad + body[at + 1:] for at in range(lead, len(body)) for bad in odd]
            for s in variants:
                line = (b'{"type":"message","id":"g","parentId":"m2","message":{"role":"user","content":"' + s
                        + b'"},"summary":"' + s + b'"}')
                taken += _check_line(line)
            assert _check_line(b'{"type":"message","id":"g","message":{"content":"' + body + b'"}}')
    assert taken > 1000


def test_fast_marks_at_their_bounds() -> None:
    """The scanner's compiled fast marks (_pi.c `pi_fast_ok`) against the marks themselves: every
    numeric field a mark bounds, at, inside and past its bounds, as ints, floats, big ints (beyond
    2**53, where a double rounds), booleans and the other JSON kinds."""
    values = [b"0", b"-0", b"-1", b"1", b"0.0", b"-0.0", b"0.5", b"1e2", b"100000000", b"100000001", b"100000000.0",
              b"1000000", b"1000000.0", b"1000000.5", b"1000000000000", b"1000000000001", b"253402300799999",
              b"253402300800000", b"2.53402300799999e14", b"9007199254740993", b"9223372036854775807",
              b"123456789012345678", b"true", b"false", b"null", b'"7"', b"[]", b"{}", b"1e99", b"-1e99"]
    taken = 0
    for v in values:
        for line in (b'{"type":"message","id":"g","message":{"role":"assistant","timestamp":' + v + b',"usage":{"input":'
                     + v + b',"totalTokens":' + v + b',"cost":{"total":' + v + b',"input":' + v + b"}}}}",
                     b'{"type":"compaction","id":"c","tokensBefore":' + v + b',"summary":"s"}',
                     b'{"type":"message","id":"g","message":{"role":"assistant","tokensBefore":' + v + b"}}",
                     b'{"type":"message","id":"g","message":{"usage":{"cacheRead":' + v + b"}}}"):
            took = _check_line(line)
            if not (v.isdigit() and len(v) > 18):  # (an int of more than 18 digits: the C is never sure)
                assert took == (_reference(orjson.loads(line), SPEC) is not _NO), line  # (no mark refused more)
            taken += took
    assert taken > 20
