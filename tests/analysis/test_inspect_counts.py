"""inspect's shortcut for plain requests agrees with the transcript's rules on every usage shape."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontools.read import session_from_records
from sessiontools.transcript.pi import inspect as inspect_mod
from sessiontools.transcript.pi.requests import plain_request as _plain_request
from sessiontools.transcript.pi.requests import skip_reason
from tests.conftest import BAD, SAMPLES, shared_sessions

_VALUES = (None, 0, 1, -3, 2.5, 0.0, True, False, "7", [], {})
_MISSING = object()


def _usage(i, cr, cw, out, total):  # type: ignore[no-untyped-def]
    fields = {"input": i, "cacheRead": cr, "cacheWrite": cw, "output": out, "totalTokens": total}
    return {k: v for k, v in fields.items() if v is not _MISSING}


def test_plain_request_never_disagrees_with_skip_reason() -> None:
    values = (*_VALUES, _MISSING)
    shortcut = 0
    for i, cr, cw, out, total in itertools.product(values, (0, 5, _MISSING, 1.5), (0, 2, None), values, values):
        u = _usage(i, cr, cw, out, total)
        for stop, model in itertools.product(("stop", "error", "aborted", None),
                                             ("m", None, "delivery-mirror", "gateway-injected")):
            msg = {"role": "assistant", "usage": u, "stopReason": stop, "model": model}
            if _plain_request(msg, u, stop):
                shortcut += 1
                for version in ("0", "1"):
                    assert skip_reason(msg, version) is None, msg
    assert shortcut > 0


def test_plain_request_declines_what_is_not_a_dict_usage() -> None:
    for u in (None, [], "x", 0):
        msg = {"role": "assistant", "usage": u, "stopReason": "stop", "model": "m"}
        assert not _plain_request(msg, u, "stop")


# `_count` with the C (`read._native.pi_reply_sums`) against `_replies` alone (the C off): the same
# sums (floats in file order, the same types), requests, models, skipped replies and errors.

_NUM = st.sampled_from([None, 0, 1, -3, 7, 2.5, -0.0, 0.1, True, False, "7", [], {}, 2**63, -(2**63) - 1,
                        10**15, 1e300])
_NAME = st.sampled_from([None, "", "m", "anthropic", "delivery-mirror", "gateway-injected", 5, True, ["x"], "中"])
_USAGE = st.one_of(st.none(), st.sampled_from([[], "u", 3]), st.dictionaries(
    st.sampled_from(["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "x"]),
    _NUM | st.dictionaries(st.sampled_from(["total", "input"]), _NUM, max_size=2), max_size=7))
_REPLY = st.fixed_dictionaries({"role": st.just("assistant")}, optional={
    "usage": _USAGE, "stopReason": st.sampled_from(["stop", "error", "aborted", "toolUse", "length", None, 3]),
    "model": _NAME, "provider": _NAME, "errorMessage": st.sampled_from(["context length exceeded", "x", None])})


def _counts(session: Any, version: str) -> tuple[Any, ...]:
    c = inspect_mod._count(session, version)
    return (c.by_type, c.by_role, sorted(c.models.items()), sorted(c.skipped_replies.items()),  # (reported sorted)
            [(type(t), t) for t in c.totals],
            (type(c.cost), c.cost), c.requests, c.errors, c.overflow_errors)


def _counted(session: Any, version: str) -> Any:
    try:
        return _counts(session, version)
    except OverflowError as exc:  # (an int too large for a float: raised alike)
        return str(exc)


def _both(session: Any) -> None:
    c = inspect_mod._reply_sums
    for version in ("0", "1"):
        with_c = _counted(session, version)
        inspect_mod._reply_sums = None
        try:
            without = _counted(session, version)
        finally:
            inspect_mod._reply_sums = c
        assert repr(with_c) == repr(without)


@pytest.mark.skipif(inspect_mod._reply_sums is None, reason="the C extension is not built")
@settings(max_examples=400, deadline=None)
@given(st.lists(_REPLY, max_size=8))
def test_reply_sums_in_c_are_the_loops(replies: list[dict[str, Any]]) -> None:
    records = [{"type": "session", "id": "s", "version": 3},
               *({"type": "message", "id": f"e{k}", "parentId": None, "message": r} for k, r in enumerate(replies))]
    _both(session_from_records(records))


@pytest.mark.skipif(inspect_mod._reply_sums is None, reason="the C extension is not built")
def test_reply_sums_over_every_sample_fixture_and_shared_file() -> None:
    from sessiontools.read.pi.load import read_data
    from sessiontools.read.sources import FALLBACK, expand_sources, head_of, reader_for

    files = [f for f in expand_sources([SAMPLES, BAD, SAMPLES.parent / "tests" / "fixtures", *shared_sessions()])
             if reader_for(head_of(f)) is FALLBACK]
    assert len(files) > 40
    for f in files:
        data = open(f, "rb").read()
        for selective in (False, True):
            _both(read_data(data, str(f), selective=selective))


@pytest.mark.skipif(inspect_mod._reply_sums is None, reason="the C extension is not built")
def test_reply_sums_over_every_usage_shape() -> None:
    """The grid of `test_plain_request_never_disagrees_with_skip_reason`, as one session's replies."""
    values = (*_VALUES, _MISSING)
    replies = [{"role": "assistant", "usage": _usage(i, cr, cw, out, total), "stopReason": stop, "model": model,
                "provider": "p"}
               for i, cr, cw, out, total in itertools.product(values, (0, 5, _MISSING, 1.5), (0, 2, None), values,
                                                              values)
               for stop, model in (("stop", "m"), ("error", None), ("aborted", "m"), (None, "delivery-mirror"))]
    records = [{"type": "session", "id": "s", "version": 3},
               *({"type": "message", "id": f"e{k}", "parentId": None, "message": r} for k, r in enumerate(replies))]
    _both(session_from_records(records))
