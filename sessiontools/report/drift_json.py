"""`diff-summaries` as JSON: the body of the envelope, built from the analysis' values.

Keys and order are part of the output contract (docs/diff-summaries.md); tests/golden holds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessiontools.analysis.drift import ChainDrift, ChainSummary, DriftReport, Item, PairDrift
from sessiontools.analysis.drift.retention import SummaryFacts
from sessiontools.jsvalues import utf16_len
from sessiontools.report.gates import Gate


def _item_dict(it: Item) -> dict[str, Any]:
    return {"section": it.section, "text": it.text}


def facts_to_dict(f: SummaryFacts | None) -> dict[str, Any] | None:
    """`{category: {in_span, retained, retention, lost: [...]}}` of one compaction (None: a branch summary)."""
    if f is None:
        return None
    return {c: {"in_span": r.in_span, "retained": r.retained, "retention": r.rate, "lost": [x.value for x in r.lost]}
            for c, r in f.categories.items()}


def summary_to_dict(s: ChainSummary, facts: SummaryFacts | None = None) -> dict[str, Any]:
    p = s.parsed
    return {
        "position": s.position,
        "entry_id": s.entry_id,
        "index": s.index,
        "line": s.line,
        "kind": s.kind,
        "previous_summary_id": s.previous_summary_id,
        "tokens": s.tokens,
        "chars": utf16_len(p.text),
        "format": p.format,
        "summary_format": p.summary_format,
        "writer": s.writer,
        "title": p.title,
        "sections_present": list(p.sections),
        "sections_missing": p.sections_missing,
        "compliance": round(p.compliance, 4),
        "split_turn": p.split_turn,
        "turn_prefix_format": p.turn_prefix_format,
        "items": len(p.items),
        "literals": len(p.literals),
        "read_files": None if p.read_files is None else len(p.read_files),
        "modified_files": None if p.modified_files is None else len(p.modified_files),
        "facts": facts_to_dict(facts),
    }


def pair_to_dict(d: PairDrift, position: int) -> dict[str, Any]:
    a, b = d.pair.old, d.pair.new
    ch = d.changes
    return {
        "position": position,
        "from": a.entry_id,
        "to": b.entry_id,
        "from_position": a.position,
        "to_position": b.position,
        "relation": d.pair.relation,
        "items": {k: d.count(k) for k in ("kept", "dropped", "added", "changed", "moved")},
        "by_section": d.by_section(),
        "items_detail": {
            "dropped": [_item_dict(c.old) for c in ch if c.kind == "dropped" and c.old],
            "added": [_item_dict(c.new) for c in ch if c.kind == "added" and c.new],
            "changed": [
                {"section": c.old.section, "from": c.old.text, "to": c.new.text, "similarity": c.similarity}
                for c in ch
                if c.kind == "changed" and c.old and c.new
            ],
            "moved": [
                {"from_section": c.old.section, "to_section": c.new.section, "from": c.old.text, "to": c.new.text,
                 "similarity": c.similarity}
                for c in ch
                if c.kind == "moved" and c.old and c.new
            ],
        },
        "literals": {"kept": len(d.literals_kept), "dropped": len(d.literals_dropped), "added": len(d.literals_added)},
        "literal_retention": d.literal_retention,
        "literals_detail": {
            "dropped": [{"kind": k, "value": v} for v, k in d.literals_dropped],
            "added": [{"kind": k, "value": v} for v, k in d.literals_added],
        },
        "goal_similarity": d.goal_similarity,
        "file_list_violations": [{"list": v.list, "file": v.file, "now_in": v.now_in} for v in d.file_list_violations],
        "tokens_from": a.tokens,
        "tokens_to": b.tokens,
        "growth_tokens": d.growth_tokens,
    }


def chain_to_dict(c: ChainDrift, pair: int | None = None) -> dict[str, Any]:
    pairs = [pair_to_dict(d, i) for i, d in enumerate(c.pairs, 1)]
    if pair is not None:
        pairs = [p for p in pairs if p["position"] == pair]
    return {
        "session": c.session,
        "leaf_id": c.leaf_id,
        "summaries": [summary_to_dict(s, c.facts.of(s)) for s in c.chain],
        "pairs": pairs,
        "decay": [
            {
                "origin": d.origin.entry_id,
                "origin_position": d.origin.position,
                "items": len(d.origin.parsed.items),
                "literals": len(d.origin.parsed.literals),
                "points": [
                    {"entry_id": p.summary.entry_id, "position": p.summary.position,
                     "items_retained": p.items_retained, "literals_retained": p.literals_retained}
                    for p in d.points
                ],
            }
            for d in c.decay
        ],
        "resurrections": [
            {
                "item": r.item.text,
                "section": r.item.section,
                "kind": r.kind,
                "last_seen": r.last_seen.entry_id,
                "dropped_in": r.dropped_in.entry_id if r.dropped_in else None,
                "back_in": r.back_in.entry_id,
                "back_section": r.back_item.section,
                "back_text": r.back_item.text,
            }
            for r in c.resurrections
        ],
        "fact_survival": {k: list(v) for k, v in c.facts.survival.items()},
        "fact_returns": [
            {"category": r.fact.category, "fact": r.fact.value, "last_seen": r.last_seen.entry_id,
             "lost_in": r.lost_in.entry_id, "back_in": r.back_in.entry_id}
            for r in c.facts.returns
        ],
        "metrics": c.metrics(),
    }



def report_to_dict(report: DriftReport, pair: int | None = None) -> dict[str, Any]:
    """The JSON body (without the envelope); `pair` keeps only the K-th pair of each chain."""
    return {
        "tokenizer": report.tokenizer,
        "fuzzy_threshold": report.threshold,
        "metrics": report.metrics(),
        "chains": [chain_to_dict(c, pair) for c in report.chains],
    }


def gate_expression(g: Gate) -> str:
    number = int(g.value) if g.value.is_integer() else g.value
    return f"{g.metric}{g.op}{number}"


def gate_results(metrics: Mapping[str, Any], gates: Iterable[Gate]) -> list[dict[str, Any]]:
    """Each gate with the metric's value and whether it tripped."""
    out = []
    for g in gates:
        value = metrics[g.metric]
        number = int(g.value) if g.value.is_integer() else g.value
        out.append({"expression": gate_expression(g), "metric": g.metric, "op": g.op, "threshold": number,
                    "value": value, "tripped": value is not None and g.trips(value)})
    return out


def drift_frame(chains: Sequence[ChainDrift], table: str) -> Any:
    """The polars frame behind `--format csv`: `summaries`, `pairs`, `facts` or `chains` rows."""
    from sessiontools.analysis.drift import frames

    make = {"summaries": frames.summaries_frame, "pairs": frames.pairs_frame, "facts": frames.facts_frame,
            "chains": frames.chains_frame}
    return make[table](chains)
