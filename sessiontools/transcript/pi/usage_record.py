"""A recorded Pi usage as the neutral transcript's record (`transcript.model.Usage`): `usage_record`
in Python, and its C twin `c_usage_record` where built. Apart from `usage.py` so that reading Pi's
own usage rules (`inspect`) does not load the neutral model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontools.read.values import integer, real
from sessiontools.transcript.model import Cost, Usage

#: The types a JSON number reads as (a bool is none).
_JSON_NUMBERS = frozenset({int, float})


def usage_record(raw: Mapping[str, Any]) -> Usage:
    """A recorded usage as the neutral record: `integer` of each count, `real` of each cost item
    (a cost only when it is a dict)."""
    g = raw.get
    i, r, w, o = g("input"), g("cacheRead"), g("cacheWrite"), g("output")
    # Fast path: counts that are ints, as JSON gives them, are what `integer` returns for them; any
    # other value goes through `integer` (one of these per request of every file: four calls saved).
    if not (type(i) is int and type(r) is int and type(w) is int and type(o) is int):
        i, r, w, o = integer(i), integer(r), integer(w), integer(o)
    cost = g("cost")
    c = None
    if isinstance(cost, dict):
        f = cost.get
        ci, cr, cw, co, ct = f("input"), f("cacheRead"), f("cacheWrite"), f("output"), f("total")
        # (the same: an int or a float is what `real` turns into a float; anything else goes through it)
        if {type(ci), type(cr), type(cw), type(co), type(ct)} <= _JSON_NUMBERS:
            c = Cost(float(ci), float(cr), float(cw), float(co), float(ct))
        else:
            c = Cost(real(ci), real(cr), real(cw), real(co), real(ct))
    return Usage(i, r, w, o, c)


try:
    # `usage_record(raw)` of the usage JSON gives (exact ints; a cost of exact ints and floats), made in
    # C, its objects' slots set directly: `c_usage_record(Usage, Cost, raw)`, None for anything else.
    # One per request of every file, most of what building a request cost (bench s0049: the neutral
    # transcript's requests 14.6M -> 9.8M instructions).
    from sessiontools.read._native import pi_usage as c_usage_record
except ImportError:  # not built on this machine: `usage_record` of each, with the same results
    c_usage_record = None
