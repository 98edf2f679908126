"""The neutral Pi transcript's fast paths give what the rules they shortcut give: a usage's counts and
costs (`usage_record`: `integer` and `real` of each field), the prompt tokens (`prompt_tokens`: `number` of
each class), and a 0.x message entry's messages (`_PathBuilder`: `own_messages` of each entry)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontools.read import session_from_records
from sessiontools.read.values import integer, number, real
from sessiontools.transcript.model import Cost, Role, Usage
from sessiontools.transcript.pi import SessionTree
from sessiontools.transcript.pi.neutral import ROLES, own_messages, path_transcript
from sessiontools.transcript.pi.usage import prompt_tokens, usage_record
from tests.parity.strategies import session_files

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
