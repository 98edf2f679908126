"""`values.fast_pass`: the fast path `check_fields` takes without calling a check keeps exactly what
the check itself keeps, for every marked check (the readers' own and Pi's null-keeping wrappers)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read import values
from sessiontools.read.claude_code import checks as claude_checks
from sessiontools.read.codex import checks as codex_checks
from sessiontools.read.pi import checks as pi_checks


def _marked() -> list[Any]:
    seen: dict[int, Any] = {}
    for mod in (values, pi_checks, claude_checks, codex_checks):
        for v in vars(mod).values():
            if callable(v) and getattr(v, "fast", None) is not None:
                seen[id(v)] = v
            tables = [v] if isinstance(v, dict) else []
            if isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()):
                tables = list(v.values())  # Pi's _BY_TYPE
            for table in tables:
                for check in table.values():
                    if callable(check) and getattr(check, "fast", None) is not None:
                        seen[id(check)] = check
    return list(seen.values())


MARKED = _marked()
EDGES = [0, -1, 1, 1677.0, 0.5, -0.0, math.nan, math.inf, -math.inf, True, False, None, "", "x", [], {}, [1],
         values.MAX_REQUEST_TOKENS, values.MAX_REQUEST_TOKENS + 1, values.MAX_TOTAL_TOKENS,
         values.MAX_TOTAL_TOKENS + 1, values.MAX_COST, values.MAX_COST + 0.001, values.MAX_EPOCH_MS,
         values.MAX_EPOCH_MS + 1, 10**30, 2**63]
VALUES = st.one_of(st.sampled_from(EDGES), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                   st.booleans(), st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


def _slow_fields(obj: dict[str, Any], checks: dict[str, Any], where: str) -> list[str]:
    """`check_fields` as it was: every present field through its check."""
    problems = []
    for key, check in checks.items():
        if key in obj:
            v = obj[key]
            kept, why = check(v)
            if why is not None:
                del obj[key]
                problems.append(f"{where}{key}: {why}; dropped")
            elif kept is not v:
                obj[key] = kept
    return problems


def test_every_common_check_is_marked() -> None:
    names = {getattr(c, "__name__", "") for c in MARKED}
    assert {"count", "total_count", "amount", "epoch_ms", "text", "optional_text", "an_object", "content",
            "kept", "_text_or_ms"} <= names


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_fast_path_keeps_what_the_check_keeps(v: Any) -> None:
    for check in MARKED:
        types, numbers, low, high = check.fast
        t = type(v)
        if t in types or (t in numbers and low <= v <= high):
            kept, why = check(v)
            assert why is None and kept is v, (check, v)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), VALUES, max_size=4))
def test_check_fields_equals_calling_every_check(obj: dict[str, Any]) -> None:
    for check in MARKED:
        table = dict.fromkeys(["a", "b", "c"], check)
        fast, slow = dict(obj), dict(obj)
        assert values.check_fields(fast, table, "w.") == _slow_fields(slow, table, "w.")
        assert fast.keys() == slow.keys()
        assert all(fast[k] is slow[k] or fast[k] == slow[k] for k in fast)
