"""`--fail-if METRIC OP NUMBER` gates for CI: parse once, evaluate against metric dicts."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sessiontools.errors import UsageError

OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}
_GATE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")


@dataclass(frozen=True, slots=True)
class Gate:
    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"

    def trips(self, observed: float) -> bool:
        return bool(OPS[self.op](observed, self.value))


def parse_gates(exprs: Iterable[str], known: Iterable[str]) -> list[Gate]:
    """Parse `METRIC OP NUMBER` expressions; unknown metrics and bad syntax are usage errors."""
    names = set(known)
    gates = []
    for expr in exprs:
        m = _GATE.match(expr)
        if not m:
            example = f"{sorted(names)[0]}>0" if names else "metric>0"
            raise UsageError(f"--fail-if {expr!r}: expected METRIC OP NUMBER, e.g. {example} (OP: > >= < <= == !=)")
        metric, op, value = m.group(1), m.group(2), float(m.group(3))
        if metric not in names:
            raise UsageError(f"--fail-if {expr!r}: unknown metric {metric!r}; known: {', '.join(sorted(names))}")
        gates.append(Gate(metric, op, value))
    return gates


def tripped(gates: Iterable[Gate], rows: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Messages for every (label, metrics) row on which a gate trips."""
    out = []
    for label, metrics in rows:
        for g in gates:
            v = metrics.get(g.metric)
            if isinstance(v, int | float) and g.trips(v):
                out.append(f"gate {g} tripped: {g.metric}={v:g} ({label})")
    return out
