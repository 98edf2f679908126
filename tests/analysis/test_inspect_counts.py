"""inspect's shortcut for plain requests agrees with the transcript's rules on every usage shape."""

from __future__ import annotations

import itertools

from sessiontools.analysis.inspect import _plain_request
from sessiontools.transcript.pi.requests import skip_reason

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
