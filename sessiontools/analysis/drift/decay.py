"""Decay of every summary's items and literals across the later compactions, and resurrections
(items dropped and found again later, or finished to-dos reopened)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessiontools.analysis.drift.chain import ChainSummary
from sessiontools.analysis.drift.literals import contains
from sessiontools.analysis.drift.matching import Item, find_item, match_items
from sessiontools.analysis.drift.pairs import PairDrift
from sessiontools.analysis.drift.sections import DONE, FUZZY_THRESHOLD, REOPEN_SECTIONS
from sessiontools.analysis.drift.summary import ParsedSummary


@dataclass(frozen=True, slots=True)
class DecayPoint:
    summary: ChainSummary
    items_retained: float | None
    literals_retained: float | None


@dataclass(frozen=True, slots=True, eq=False)
class Decay:
    """Share of one summary's items and literals still present in each later compaction."""

    origin: ChainSummary
    points: tuple[DecayPoint, ...]


def _retained(origin: ParsedSummary, later: ParsedSummary, threshold: float) -> tuple[float | None, float | None]:
    items = origin.items
    item_share = None
    if items:
        present = sum(1 for c in match_items(items, later.items, threshold) if c.kind in ("kept", "changed", "moved"))
        item_share = round(present / len(items), 4)
    lit_share = None
    if origin.literals:
        present = sum(1 for v in origin.literals if v in later.literals or contains(later.text, v))
        lit_share = round(present / len(origin.literals), 4)
    return item_share, lit_share


def decay_curves(chain: Sequence[ChainSummary], threshold: float = FUZZY_THRESHOLD) -> list[Decay]:
    """For every summary S(k), its retention in every later compaction S(j), j > k."""
    out = []
    for k, origin in enumerate(chain):
        points = []
        for later in chain[k + 1:]:
            if later.kind != "compaction":
                continue
            i, lit = _retained(origin.parsed, later.parsed, threshold)
            points.append(DecayPoint(later, i, lit))
        out.append(Decay(origin, tuple(points)))
    return out


@dataclass(frozen=True, slots=True)
class Resurrection:
    """An item that was dropped and came back later, or a finished item that was reopened."""

    item: Item
    kind: str  # "returned" | "reopened"
    last_seen: ChainSummary  # the summary that had it before it was dropped (or moved)
    dropped_in: ChainSummary | None  # None: moved straight from Done to an open section
    back_in: ChainSummary
    back_item: Item


def resurrections(chain: Sequence[ChainSummary], drifts: Sequence[PairDrift], threshold: float = FUZZY_THRESHOLD) -> list[Resurrection]:
    """Items dropped in a pair and found again in a later compaction; Done items reopened."""
    out: list[Resurrection] = []
    for d in drifts:
        later = [s for s in chain if s.kind == "compaction" and s.position > d.pair.new.position]
        for c in d.changes:
            if c.kind == "moved" and c.old is not None and c.new is not None:
                if c.old.section == DONE and c.new.section in REOPEN_SECTIONS:
                    out.append(Resurrection(c.old, "reopened", d.pair.old, None, d.pair.new, c.new))
                continue
            if c.kind != "dropped" or c.old is None:
                continue
            if find_item(c.old, d.pair.new.parsed, threshold) is not None:
                continue  # a copy or close variant is still there (e.g. one of two duplicates was dropped)
            for s in later:
                hit = find_item(c.old, s.parsed, threshold)
                if hit is not None:
                    kind = "reopened" if c.old.section == DONE and hit.section in REOPEN_SECTIONS else "returned"
                    out.append(Resurrection(c.old, kind, d.pair.old, d.pair.new, s, hit))
                    break
    return out

