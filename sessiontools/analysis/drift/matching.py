"""Item matching between two summaries: kept, changed (fuzzy), moved, dropped, added."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from sessiontools.analysis.drift.sections import FUZZY_THRESHOLD, PROGRESS_GROUP, TURN
from sessiontools.analysis.drift.summary import Item, ParsedSummary
from sessiontools.analysis.drift.text import dice


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One item's fate between two summaries."""

    kind: str  # "kept" | "changed" | "moved" | "dropped" | "added"
    old: Item | None
    new: Item | None
    similarity: float

    @property
    def section(self) -> str:
        return (self.old or self.new).section  # type: ignore[union-attr]


def _compatible(a: Item, b: Item) -> bool:
    """Two items can be one item reworded only if the literals of one (counted with multiplicity) all
    occur in the other: `Task 11 ... 20 lines` and `Task 20 ... 20 lines` conflict, so they are two items."""
    return not (a.compat - b.compat) or not (b.compat - a.compat)


def _may_move(src: str, dst: str, *, exact: bool) -> bool:
    if dst.startswith(TURN + "/") and not src.startswith(TURN + "/"):
        return False  # the new turn prefix describes a new split turn, not the old summary
    if exact:
        return True
    return (src in PROGRESS_GROUP and dst in PROGRESS_GROUP) or src.startswith(TURN + "/")


def _greedy(cands: list[tuple[float, int, int]], a_free: set[int], b_free: set[int]) -> list[tuple[float, int, int]]:
    out = []
    for sim, i, j in sorted(cands, key=lambda c: (-c[0], c[1], c[2])):
        if i in a_free and j in b_free:
            a_free.discard(i)
            b_free.discard(j)
            out.append((sim, i, j))
    return out


def match_items(old: Sequence[Item], new: Sequence[Item], threshold: float = FUZZY_THRESHOLD) -> list[ItemChange]:
    """Every old item kept, changed, moved or dropped, and every new item not matched as added.

    Order: same section and same text first (in order, multiset-aware), then the best fuzzy
    matches within a section, then exact and fuzzy moves across sections (see `_may_move`).
    """
    a_free, b_free = set(range(len(old))), set(range(len(new)))
    out: list[tuple[int, int, ItemChange]] = []  # (old order or big, new order, change) for sorting
    queues: dict[tuple[str, str], deque[int]] = {}
    for j, y in enumerate(new):
        queues.setdefault((y.section, y.key), deque()).append(j)
    for i, x in enumerate(old):
        q = queues.get((x.section, x.key))
        if q:
            j = q.popleft()
            a_free.discard(i)
            b_free.discard(j)
            out.append((i, j, ItemChange("kept", x, new[j], 1.0)))

    def fuzzy(same_section: bool) -> list[tuple[float, int, int]]:
        cands = []
        for i in sorted(a_free):
            x = old[i]
            for j in sorted(b_free):
                y = new[j]
                if same_section != (x.section == y.section):
                    continue
                if not same_section and not _may_move(x.section, y.section, exact=False):
                    continue
                if not _compatible(x, y):
                    continue
                if 2 * min(x.n_tokens, y.n_tokens) / max(1, x.n_tokens + y.n_tokens) < threshold:
                    continue  # the Dice coefficient cannot reach the threshold
                sim = dice(x.tokens, y.tokens, x.n_tokens, y.n_tokens)
                if sim >= threshold:
                    cands.append((sim, i, j))
        return _greedy(cands, a_free, b_free)

    for sim, i, j in fuzzy(True):
        out.append((i, j, ItemChange("changed", old[i], new[j], round(sim, 4))))
    for i in sorted(a_free):
        x = old[i]
        for j in sorted(b_free):
            if new[j].key == x.key and new[j].section != x.section and _may_move(x.section, new[j].section, exact=True):
                a_free.discard(i)
                b_free.discard(j)
                out.append((i, j, ItemChange("moved", x, new[j], 1.0)))
                break
    for sim, i, j in fuzzy(False):
        out.append((i, j, ItemChange("moved", old[i], new[j], round(sim, 4))))
    for i in sorted(a_free):
        out.append((i, -1, ItemChange("dropped", old[i], None, 0.0)))
    for j in sorted(b_free):
        out.append((len(old) + j, j, ItemChange("added", None, new[j], 0.0)))
    out.sort(key=lambda t: (t[0], t[1]))
    return [c for _, _, c in out]


def find_item(item: Item, summary: ParsedSummary, threshold: float = FUZZY_THRESHOLD) -> Item | None:
    """The item of `summary` that is `item` (same text anywhere, else the best compatible fuzzy match)."""
    best: tuple[float, int] | None = None
    found: Item | None = None
    for y in summary.items:
        if y.key == item.key:
            return y
    for y in summary.items:
        if not _compatible(item, y):
            continue
        sim = dice(item.tokens, y.tokens, item.n_tokens, y.n_tokens)
        if sim >= threshold and (best is None or (sim, -y.order) > best):
            best, found = (sim, -y.order), y
    return found

