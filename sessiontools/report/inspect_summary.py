"""`inspect`'s totals across sessions and its headline: plain values and text, no rich (the JSON
output's only stderr line is the headline, and this keeps rich out of that run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def inspect_totals(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals across sessions (what the headline and the totals table show)."""
    tot: dict[str, Any] = {"sessions": len(reports), "entries": 0, "requests": 0, "compactions": 0, "input": 0,
                           "output": 0, "cache_read": 0, "cache_write": 0, "cost": 0.0, "errors": 0,
                           "overflow_errors": 0, "branched": 0, "unpriced": 0}
    for r in reports:
        tot["entries"] += r["entries"]
        tot["requests"] += r["requests"]
        tot["compactions"] += len(r["compactions"]) + len(r.get("other_branch_compactions") or [])
        for k in ("input", "output", "cache_read", "cache_write"):
            tot[k] += r["usage"][k]
        tot["cost"] += r["cost"] or 0.0
        tot["unpriced"] += 0 if r["cost"] is not None else 1
        tot["errors"] += r["errors"]
        tot["overflow_errors"] += r["overflow_errors"]
        tot["branched"] += 1 if r["leaves"] > 1 else 0
    return tot


def inspect_headline(reports: Sequence[Mapping[str, Any]]) -> str:
    tot = inspect_totals(reports)
    return (f"inspect: {tot['sessions']} session(s), {tot['entries']:,} entries, {tot['requests']:,} requests, "
            f"{tot['compactions']} compaction(s), {tot['overflow_errors']} overflow error(s), "
            f"{tot['input'] + tot['cache_read'] + tot['cache_write']:,} prompt tokens, cost ${tot['cost']:.2f}"
            + (f" ({tot['unpriced']} session(s) without a price)" if tot["unpriced"] else ""))
