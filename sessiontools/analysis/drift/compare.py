"""`diff-summaries --compare A B`: the same drift measures over two sets of summaries, side by side.

A and B are two files, or two directories whose files are paired by session (the header's session
id, so a recorded session pairs with its `resummarize` outputs); each side is measured over its
paired files only. Per side: fact retention per class (`retention.files`, ...), item retention per
section (`section.done`, ...: of the items of a section in S(k), the share still in S(k+1), kept,
changed or moved, pooled over pairs), the lowest literal retention, lost facts, dropped items.
Then `compare.M` = B / A (none when A is 0 or none) and `delta.M` = B - A. The metric names and
their meanings have one home: `sessiontools.names.COMPARE_METRICS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.analysis.drift.metrics import ChainDrift, Metrics, chain_metrics
from sessiontools.names import COMPARE_METRICS, COMPARE_SIDE_METRICS, DRIFT_SECTION_KEYS

METRICS = COMPARE_METRICS


def section_retention(chains: Sequence[ChainDrift]) -> dict[str, float | None]:
    """`section.<key>` of some chains: carried items over the items the older summaries had."""
    carried = dict.fromkeys(DRIFT_SECTION_KEYS, 0)
    total = dict.fromkeys(DRIFT_SECTION_KEYS, 0)
    for c in chains:
        for d in c.pairs:
            by = d.by_section()
            for key, name in DRIFT_SECTION_KEYS.items():
                n = by.get(name)
                if n is None:
                    continue
                kept = n["kept"] + n["changed"] + n["moved"]
                carried[key] += kept
                total[key] += kept + n["dropped"]
    return {f"section.{k}": (round(carried[k] / total[k], 4) if total[k] else None) for k in DRIFT_SECTION_KEYS}


def side_metrics(chains: Sequence[ChainDrift]) -> Metrics:
    m = {**chain_metrics(chains), **section_retention(chains)}
    return {k: m[k] for k in COMPARE_SIDE_METRICS}


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or a == 0:
        return None
    return round(b / a, 4)


def _delta(a: Any, b: Any) -> float | int | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return None
    return round(b - a, 4) if isinstance(a, float) or isinstance(b, float) else b - a


@dataclass(frozen=True, slots=True, eq=False)
class Comparison:
    """Two sides, paired by session: (label, A chains, B chains) per pair."""

    pairs: tuple[tuple[str, tuple[ChainDrift, ...], tuple[ChainDrift, ...]], ...]
    unpaired: tuple[str, ...] = ()

    def side(self, which: int) -> tuple[ChainDrift, ...]:
        return tuple(c for p in self.pairs for c in p[1 + which])

    def metrics(self) -> Metrics:
        return compare_metrics(self.side(0), self.side(1))


def compare_metrics(a_chains: Sequence[ChainDrift], b_chains: Sequence[ChainDrift]) -> Metrics:
    """Every `COMPARE_METRICS` value: each side's, B / A and B - A."""
    a, b = side_metrics(a_chains), side_metrics(b_chains)
    out: Metrics = {}
    for m in COMPARE_SIDE_METRICS:
        out[f"a.{m}"] = a[m]
        out[f"b.{m}"] = b[m]
    for m in COMPARE_SIDE_METRICS:
        out[f"compare.{m}"] = _ratio(a[m], b[m])
    for m in COMPARE_SIDE_METRICS:
        out[f"delta.{m}"] = _delta(a[m], b[m])
    return out


def session_key(source: Any) -> str:
    """What pairs a file of A with one of B: the session id of its header, else the file's stem."""
    header = getattr(source, "header", None)
    sid = getattr(header, "id", None)
    if isinstance(sid, str) and sid:
        return sid
    from pathlib import Path

    return Path(str(getattr(source, "path", ""))).stem


def pair_by_session(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[tuple[Any, Any]], list[str]]:
    """Sources of A and B with the same `session_key`, in A's order, and the names left unpaired.
    A key held by two files of one side is ambiguous: a `ValueError` naming them."""
    def index(side: Sequence[Any], name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in side:
            k = session_key(s)
            if k in out:
                raise ValueError(f"{name}: {out[k].path} and {s.path} hold the same session {k}; "
                                 "compare one file per session (resummarize each setting into its own directory)")
            out[k] = s
        return out

    ia, ib = index(a, "A"), index(b, "B")
    pairs = [(s, ib[k]) for k, s in ia.items() if k in ib]
    unpaired = [str(s.path) for k, s in ia.items() if k not in ib] + [str(s.path) for k, s in ib.items() if k not in ia]
    return pairs, unpaired
