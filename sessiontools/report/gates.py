"""Gates for CI, one grammar for every command: `METRIC OP NUMBER` (`--fail-if`, repeatable).

METRIC is a name such as `overflows`, or a dotted name such as `mape.calibrated`, `bias.chars4` or
`retention.files`; OP is one of > >= < <= == !=; NUMBER is a plain decimal. A gate trips when the
comparison holds for any row (a run, a session, a chain); each tripped gate is reported in one
wording: `gate mape.calibrated>0.1 tripped: mape.calibrated=0.163 (session a.jsonl, window 16000)`.
Parsing errors are `GateError`s (the CLI says which option they came from).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import UsageError


class GateError(UsageError):
    """A gate expression that does not parse or names an unknown metric."""

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}
_GATE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_*]+)*)\s*(>=|<=|==|!=|>|<)\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")


@dataclass(frozen=True, slots=True)
class Gate:
    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"

    def trips(self, observed: float) -> bool:
        return bool(OPS[self.op](observed, self.value))


def parse_gates(exprs: Iterable[str], known: Iterable[str], option: str = "--fail-if") -> list[Gate]:
    """Parse `METRIC OP NUMBER` expressions; unknown metrics and bad syntax are `GateError`s whose
    message starts with `option` (the name the expression was given under)."""
    names = set(known)
    gates = []
    for expr in exprs:
        m = _GATE.match(expr)
        if not m:
            example = f"{sorted(names)[0]}>0" if names else "metric>0"
            raise GateError(f"{option} {expr!r}: expected METRIC OP NUMBER, e.g. {example} (OP: > >= < <= == !=)")
        metric, op, value = m.group(1), m.group(2), float(m.group(3))
        if metric not in names:
            raise GateError(f"{option} {expr!r}: unknown metric {metric!r}; known: {', '.join(sorted(names))}")
        gates.append(Gate(metric, op, value))
    return gates


def tripped(gates: Iterable[Gate], rows: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Messages for every (label, metrics) row on which a gate trips.

    `label` names the row in words ("session a.jsonl, window 16000, reserve 3000, keep 4000");
    a metric missing from a row (or None there) does not trip.
    """
    gates = list(gates)
    out = []
    for label, metrics in rows:
        for g in gates:
            v = metrics.get(g.metric)
            if isinstance(v, int | float) and g.trips(v):
                out.append(f"gate {g} tripped: {g.metric}={v:g} ({label})")
    return out
