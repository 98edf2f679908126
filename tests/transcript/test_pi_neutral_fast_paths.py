"""The neutral Pi transcript's fast paths give what the rules they shortcut give: a usage's counts and
costs (`usage_record`: `integer` and `real` of each field), the prompt tokens (`prompt_tokens`: `number` of
each class), and a 0.x message entry's messages (`_PathBuilder`: `own_messages` of each entry)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.read import session_from_records
from sessiontools.read.pi import Session, read_bytes
from sessiontools.read.values import integer, number, real
from sessiontools.transcript.model import Cost, Role, Usage
from sessiontools.transcript.pi import SessionTree, neutral
from sessiontools.transcript.pi.neutral import ROLES, own_messages, path_transcript
from sessiontools.transcript.pi.usage import prompt_tokens
from sessiontools.transcript.pi.usage_record import usage_record
from tests.parity.strategies import session_files


def bench_session() -> Session:
    """A session of the bench corpus's generator (`bench.corpus`: ~300 requests of plain JSON usage)."""
    from bench.corpus import session

    return read_bytes(session(random.Random(49), 49, 2_000_000))

#: JSON numbers and what is not one (a bool, a string, null, NaN, infinity, a float past an int's range).
ODD = [0, 7, 2.5, -3, True, False, None, "12", float("nan"), float("inf"), 1e300, [1]]


def test_usage_is_integer_and_real_of_each_field() -> None:
    checked = 0
    for a, b in itertools.product(ODD, repeat=2):
        for shape in range(4):
            counts = [(a, b, 5, 9), (5, a, b, 9), (5, 9, a, b), (a, a, a, a)][shape]
            costs = [(a, b, 0.5, 1, 2), (0.5, a, b, 1, 2), (1, 2, 3, a, b), (a, a, a, a, a)][shape]
            raw = dict(zip(("input", "cacheRead", "cacheWrite", "output"), counts, strict=True))
            raw["cost"] = dict(zip(("input", "cacheRead", "cacheWrite", "output", "total"), costs, strict=True))
            want = Usage(*map(integer, counts), Cost(*map(real, costs)))
            got = usage_record(raw)
            # (NaN != NaN: compare the text of each value, types included)
            assert repr(got) == repr(want), raw
            assert [type(x) for x in (got.input, got.cache_read, got.cache_write, got.output)] == [int] * 4
            checked += 1
    assert usage_record({"input": 3}) == Usage(3, 0, 0, 0, None)
    assert checked == len(ODD) ** 2 * 4


def test_prompt_tokens_is_the_sum_of_numbers() -> None:
    for a, b in itertools.product([x for x in ODD if not isinstance(x, float) or x == x and x < 1e300], repeat=2):
        for u in ({"input": a, "cacheRead": b, "cacheWrite": 4}, {"input": 4, "cacheRead": a, "cacheWrite": b},
                  {"cacheRead": a}):
            want = int(number(u.get("input")) + number(u.get("cacheRead")) + number(u.get("cacheWrite")))
            got = prompt_tokens(u)
            assert got == want and type(got) is int, u


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(session_files(), st.sampled_from(["0", "1"]))
def test_messages_are_each_entrys_own_messages(records, version) -> None:  # type: ignore[no-untyped-def]
    for p in SessionTree(session_from_records(records)).all_paths():
        want = []
        for pos, e in enumerate(p.entries):
            ts = e.timestamp if isinstance(e.timestamp, str) else None
            for m in own_messages(e, version):
                role = ROLES.get(m.get("role"), Role.OTHER) if isinstance(m, dict) else Role.OTHER
                want.append((e.id, e.line, role, ts, pos, m))
        t = path_transcript(p, version)
        got = [(m.id, m.line, m.role, m.timestamp, t.native.of_message[k], m.raw) for k, m in enumerate(t.messages)]
        assert [m.index for m in t.messages] == list(range(len(want)))
        assert got == want
        if version == "0":  # the raw message is the entry's own object, not a copy
            assert all(g[5] is w[5] for g, w in zip(got, want, strict=True) if isinstance(w[5], dict)
                       and p.entries[g[4]].type == "message")


def test_a_timestamp_that_is_no_string_is_none() -> None:
    records = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"},
               {"type": "message", "id": "a", "parentId": None, "timestamp": 1735689600000,
                "message": {"role": "user", "content": "hi"}},
               {"type": "message", "id": "b", "parentId": "a", "timestamp": "2025-01-01T00:00:01Z",
                "message": {"role": "assistant", "content": [], "usage": {"input": 5}}}]
    for version in ("0", "1"):
        t = path_transcript(SessionTree(session_from_records(records)).path(), version)
        assert [m.timestamp for m in t.messages] == [None, "2025-01-01T00:00:01Z"]


class _Dict(dict):  # type: ignore[type-arg]
    """A dict subclass: left to `usage_record` by the C."""


def _usages() -> list[Any]:
    out: list[Any] = []
    for a, b in itertools.product([*ODD, 10**30], repeat=2):
        counts = {"input": a, "cacheRead": 3, "cacheWrite": b, "output": 9}
        cost = {"input": b, "cacheRead": 0.25, "cacheWrite": a, "output": 1, "total": 2.5}
        out += [counts, {**counts, "cost": cost}, {**counts, "cost": None}, {**counts, "cost": [1]}]
    plain = {"input": 5, "cacheRead": 3, "cacheWrite": 0, "output": 9}
    full = {"input": 0.5, "cacheRead": 0, "cacheWrite": 1, "output": 2, "total": 3.5}
    out += [_Dict(plain), {**plain, "cost": _Dict(full)}, {"input": 5}, {**plain, "cost": {"input": 1}},
            {**plain, "cost": {**full, "total": 10**400}}, {**plain, "cost": full}]
    return out


def test_the_c_usage_is_usage() -> None:
    """`read._native.pi_usage` gives `usage_record` of every usage it takes, and takes the plain ones."""
    if neutral.c_usage_record is None:
        pytest.skip("the C extension is not built")
    took = 0
    for raw in _usages():
        got = neutral.c_usage_record(Usage, Cost, raw)
        if got is None:
            continue
        took += 1
        want = usage_record(raw)
        assert repr(got) == repr(want) and hash(got) == hash(want), raw
        assert [type(getattr(got, f)) for f in got.__slots__] == [type(getattr(want, f)) for f in want.__slots__]
        if want.cost is not None:
            assert [type(getattr(got.cost, f)) for f in got.cost.__slots__] == [float] * 5
    assert took >= 30
    assert neutral.c_usage_record(Usage, Cost, {"input": 5, "cacheRead": 3, "cacheWrite": 0, "output": 9}) is not None


def test_requests_with_and_without_the_c() -> None:
    """A bench session's requests are the same with the C usage and without it (`usage_record` alone)."""
    if neutral.c_usage_record is None:
        pytest.skip("the C extension is not built")
    p = SessionTree(bench_session()).path()
    with_c = path_transcript(p, "0").requests
    c_usage, neutral.c_usage_record = neutral.c_usage_record, None
    try:
        without = path_transcript(p, "0").requests
    finally:
        neutral.c_usage_record = c_usage
    assert with_c == without and len(with_c) > 200
    assert all(neutral.c_usage_record(Usage, Cost, e.message["usage"]) is not None
               for e in p.entries if e.role == "assistant" and e.message.get("stopReason") == "stop")
