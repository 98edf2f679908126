"""Drift as polars DataFrames: one row per summary, per pair and per chain (schemas below).

`report/` renders these (CSV; the JSON and tables show the same numbers). polars is imported
inside the functions: the CLI must start without it.

summaries (`summaries_frame`): session str, leaf_id str?, agent str, position i64, entry_id str?,
  index i64 (message position on the path), line i64, kind str (compaction | branch_summary),
  writer str (agent | hook | provider), summary_format str (SUMMARY_FORMATS), format str (pi | partial |
  free-form), tokens i64, compliance f64,
  sections_missing i64, items i64, literals i64, split_turn bool.
pairs (`pairs_frame`): session, leaf_id, pair i64 (1-based), from_position i64, to_position i64,
  relation str (update | absorbed), kept, dropped, added, changed, moved i64, literals_kept,
  literals_dropped, literals_added i64, literal_retention f64?, goal_similarity f64?,
  file_list_violations i64, growth_tokens i64.
chains (`chains_frame`): session, leaf_id, agent, then one column per gateable metric (METRICS).
facts (`facts_frame`): session, leaf_id, position i64, entry_id str?, category str (files |
  identifiers | errors | constraints), in_span i64, retained i64, retention f64?, lost str (the lost
  facts, one per line); one row per compaction and category.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontools.analysis.drift.metrics import ChainDrift
from sessiontools.analysis.drift.pairs import CHANGE_KINDS


def _frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> Any:
    import polars as pl

    return pl.DataFrame(rows, schema=schema, orient="row")


def summaries_frame(chains: Sequence[ChainDrift]) -> Any:
    import polars as pl

    schema = {"session": pl.String, "leaf_id": pl.String, "agent": pl.String, "position": pl.Int64,
              "entry_id": pl.String, "index": pl.Int64, "line": pl.Int64, "kind": pl.String, "writer": pl.String,
              "summary_format": pl.String, "format": pl.String, "tokens": pl.Int64, "compliance": pl.Float64, "sections_missing": pl.Int64,
              "items": pl.Int64, "literals": pl.Int64, "split_turn": pl.Boolean}
    rows = [
        {"session": c.session, "leaf_id": c.leaf_id, "agent": c.agent, "position": s.position,
         "entry_id": s.entry_id, "index": s.index, "line": s.line, "kind": s.kind, "writer": s.writer,
         "summary_format": s.parsed.summary_format, "format": s.parsed.format, "tokens": s.tokens, "compliance": round(s.parsed.compliance, 4),
         "sections_missing": len(s.parsed.sections_missing), "items": len(s.parsed.items),
         "literals": len(s.parsed.literals), "split_turn": s.parsed.split_turn}
        for c in chains for s in c.chain
    ]
    return _frame(rows, schema)


def pairs_frame(chains: Sequence[ChainDrift]) -> Any:
    import polars as pl

    schema: dict[str, Any] = {"session": pl.String, "leaf_id": pl.String, "pair": pl.Int64,
                              "from_position": pl.Int64, "to_position": pl.Int64, "relation": pl.String}
    schema |= {k: pl.Int64 for k in CHANGE_KINDS}
    schema |= {"literals_kept": pl.Int64, "literals_dropped": pl.Int64, "literals_added": pl.Int64,
               "literal_retention": pl.Float64, "goal_similarity": pl.Float64, "file_list_violations": pl.Int64,
               "growth_tokens": pl.Int64}
    rows = []
    for c in chains:
        for k, d in enumerate(c.pairs, 1):
            row: dict[str, Any] = {"session": c.session, "leaf_id": c.leaf_id, "pair": k,
                                   "from_position": d.pair.old.position, "to_position": d.pair.new.position,
                                   "relation": d.pair.relation}
            row |= {kind: d.count(kind) for kind in CHANGE_KINDS}
            row |= {"literals_kept": len(d.literals_kept), "literals_dropped": len(d.literals_dropped),
                    "literals_added": len(d.literals_added), "literal_retention": d.literal_retention,
                    "goal_similarity": d.goal_similarity, "file_list_violations": len(d.file_list_violations),
                    "growth_tokens": d.growth_tokens}
            rows.append(row)
    return _frame(rows, schema)


def chains_frame(chains: Sequence[ChainDrift]) -> Any:
    import polars as pl

    from sessiontools.analysis.drift.metrics import METRICS

    rows = [{"session": c.session, "leaf_id": c.leaf_id, "agent": c.agent, **c.metrics()} for c in chains]
    schema: dict[str, Any] = {"session": pl.String, "leaf_id": pl.String, "agent": pl.String}
    schema |= {m: (pl.Float64 if m.startswith(("min_", "retention.")) else pl.Int64) for m in METRICS}
    return _frame(rows, schema)


def facts_frame(chains: Sequence[ChainDrift]) -> Any:
    import polars as pl

    from sessiontools.analysis.drift.facts import CATEGORIES

    schema = {"session": pl.String, "leaf_id": pl.String, "position": pl.Int64, "entry_id": pl.String,
              "category": pl.String, "in_span": pl.Int64, "retained": pl.Int64, "retention": pl.Float64,
              "lost": pl.String}
    rows = [
        {"session": c.session, "leaf_id": c.leaf_id, "position": x.summary.position, "entry_id": x.summary.entry_id,
         "category": cat, "in_span": r.in_span, "retained": r.retained, "retention": r.rate,
         "lost": "\n".join(f.value for f in r.lost)}
        for c in chains for x in c.facts.summaries for cat in CATEGORIES for r in (x.categories[cat],)
    ]
    return _frame(rows, schema)
