"""`diff-summaries` over a folder: what summaries lose, per section and group, worst paths first.

The answer to "what do my summaries lose?" in one screen:

1. retention per section over every pair S(k) -> S(k+1): the items of S(k) kept, changed, moved,
   dropped, the items S(k+1) added, and the share of S(k)'s items still there (kept + changed +
   moved), with an `all sections` row and one row for the literals;
2. per group (`--group-by`, default the agent): paths, summaries, pairs, items and literals
   retained, facts lost, with an `all` row;
3. the paths without any summary counted in one line (never one line each);
4. the few worst paths (most items dropped, or by the `--fail-if` metric), then one line on how
   to see every path's tables and diffs (`--per-session`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.text import Text

from sessiontools.analysis.drift import ChainDrift, DriftReport, chain_metrics
from sessiontools.analysis.drift.pairs import CHANGE_KINDS
from sessiontools.analysis.drift.sections import TEMPLATE_SECTIONS
from sessiontools.report.folder import WORST_SHOWN, folder_names, middle, more_line
from sessiontools.report.layout import Column, FittedTable, percent

#: Section rows shown (the template's first, then the largest others; the rest summed in one row).
MAX_SECTIONS = 12


def _share(part: int, whole: int) -> str:
    return percent(part / whole, digits=0) if whole else "-"


def section_counts(chains: Sequence[ChainDrift]) -> dict[str, dict[str, int]]:
    """kept / changed / moved / dropped / added per section, summed over every pair of `chains`."""
    out: dict[str, dict[str, int]] = {}
    for c in chains:
        for d in c.pairs:
            for section, counts in d.by_section().items():
                acc = out.setdefault(section, dict.fromkeys(CHANGE_KINDS, 0))
                for k, v in counts.items():
                    acc[k] = acc.get(k, 0) + v
    return out


def _kept(c: Mapping[str, int]) -> int:
    return c.get("kept", 0) + c.get("changed", 0) + c.get("moved", 0)


def _old(c: Mapping[str, int]) -> int:
    return _kept(c) + c.get("dropped", 0)


def sections_table(chains: Sequence[ChainDrift]) -> FittedTable:
    counts = section_counts(chains)
    template = [s for s in TEMPLATE_SECTIONS if s in counts]
    others = sorted((s for s in counts if s not in TEMPLATE_SECTIONS), key=lambda s: (-_old(counts[s]), s))
    shown = (template + others)[:MAX_SECTIONS]
    rest = [s for s in counts if s not in shown]
    t = FittedTable(f"retention per section over {sum(len(c.pairs) for c in chains):,} pair(s) S(k) -> S(k+1)", (
        Column("section", "", "left"), Column("items", "items of S(k)"), Column("kept", "same text"),
        Column("chg", "changed (fuzzy match)"), Column("move", "moved to another section"),
        Column("drop", "dropped"), Column("add", "added by S(k+1)"),
        Column("retained", "share of S(k)'s items still in S(k+1) (kept + changed + moved)"),
    ))

    def row(label: str, c: Mapping[str, int]) -> None:
        t.add_row(middle(label, 30), f"{_old(c):,}", f"{c.get('kept', 0):,}", f"{c.get('changed', 0):,}",
                  f"{c.get('moved', 0):,}", f"{c.get('dropped', 0):,}", f"{c.get('added', 0):,}",
                  _share(_kept(c), _old(c)))

    for s in shown:
        row(s, counts[s])
    if rest:
        merged = {k: sum(counts[s].get(k, 0) for s in rest) for k in CHANGE_KINDS}
        row(f"{len(rest)} other section(s)", merged)
    row("all sections", {k: sum(c.get(k, 0) for c in counts.values()) for k in CHANGE_KINDS})
    kept = sum(len(d.literals_kept) for c in chains for d in c.pairs)
    dropped = sum(len(d.literals_dropped) for c in chains for d in c.pairs)
    t.add_row("literals", f"{kept + dropped:,}", f"{kept:,}", "-", "-", f"{dropped:,}", "-", _share(kept, kept + dropped))
    return t


def groups_table(chains: Sequence[ChainDrift], groups: Mapping[str, str], by: str) -> FittedTable:
    t = FittedTable(f"per {by}", (
        Column(by, "", "left"), Column("paths", "analysed paths (one per session unless --all-leaves)"),
        Column("w/ summ.", "paths with at least one summary"), Column("summ.", "summaries"),
        Column("pairs", "pairs S(k) -> S(k+1)"), Column("items kept", "share of S(k)'s items in S(k+1)"),
        Column("lit. kept", "share of S(k)'s literals in S(k+1)"), Column("lost facts", "facts lost (see JSON)"),
    ))
    by_group: dict[str, list[ChainDrift]] = {}
    for c in chains:
        by_group.setdefault(groups.get(c.session, "(unknown)"), []).append(c)

    def row(label: str, cs: Sequence[ChainDrift]) -> None:
        m = chain_metrics(cs)
        counts = section_counts(cs)
        old, kept = sum(_old(x) for x in counts.values()), sum(_kept(x) for x in counts.values())
        lk = sum(len(d.literals_kept) for c in cs for d in c.pairs)
        ld = sum(len(d.literals_dropped) for c in cs for d in c.pairs)
        t.add_row(middle(label, 30), f"{len(cs):,}", f"{sum(1 for c in cs if c.chain):,}", f"{m['summaries']:,}",
                  f"{m['pairs']:,}", _share(kept, old), _share(lk, lk + ld), f"{m['lost_facts']:,}")

    for label in sorted(by_group):
        row(label, by_group[label])
    row("all", chains)
    return t


def _rank(c: ChainDrift, metric: str | None) -> tuple[float, ...]:
    m = c.metrics()
    if metric is not None:
        v = m.get(metric)
        return (-(v or 0.0), -m["dropped_items"])
    return (-m["dropped_items"], -m["dropped_literals"], -m["lost_facts"])


def worst_table(chains: Sequence[ChainDrift], metric: str | None, shown: int) -> FittedTable:
    names = folder_names([c.session for c in chains])
    by = metric or "items dropped, then literals dropped, then facts lost"
    t = FittedTable(f"worst paths (by {by})", (
        Column("session", "relative to the folder the sessions share", "left"), Column("summ.", ""),
        Column("pairs", ""), Column("drop", "items dropped"), Column("lit. drop", "literals dropped"),
        Column("lost facts", ""), Column("goal sim.", "lowest goal similarity of a pair"),
    ))
    for c in sorted(chains, key=lambda c: (_rank(c, metric), c.session))[:shown]:
        m = c.metrics()
        leaf = f" @ {c.leaf_id}" if c.leaf_id and sum(1 for x in chains if x.session == c.session) > 1 else ""
        t.add_row(names[c.session] + leaf, str(m["summaries"]), str(m["pairs"]), str(m["dropped_items"]),
                  str(m["dropped_literals"]), str(m["lost_facts"]),
                  f"{m['min_goal_similarity']:.2f}" if m["pairs"] else "-")
    return t


def drift_folder_answer(report: DriftReport, *, groups: Mapping[str, str], by: str, metric: str | None = None,
                        shown: int = WORST_SHOWN) -> Group:
    """The folder answer of `diff-summaries` (renderables)."""
    with_summaries = [c for c in report.chains if c.chain]
    without = [c for c in report.chains if not c.chain]
    parts: list[Any] = []
    if any(c.pairs for c in with_summaries):
        parts.append(sections_table(with_summaries))
    parts.append(groups_table(report.chains, groups, by))
    if without:
        n_sessions = len({c.session for c in without})
        parts.append(Text(f"{len(without):,} path(s) in {n_sessions:,} session(s) have no summaries "
                          "(counted above, not listed)", style="dim"))
    if with_summaries:
        parts.append(worst_table(with_summaries, metric, shown))
        parts.append(Text(more_line(min(shown, len(with_summaries)), len(with_summaries), "paths with summaries",
                                    "--per-session shows their tables and diffs"), style="dim"))
    return Group(*parts)
