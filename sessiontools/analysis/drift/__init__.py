"""Summary drift: what survives, what is lost and what comes back across repeated compactions.

Pi's UPDATE prompt asks the summariser to "PRESERVE all existing information" of the previous
summary; this package measures how well that holds on one transcript path, for any agent whose
reader fills `TranscriptPath.compactions` (ARCHITECTURE.md section 2, Drift). Pure: transcripts in,
dataclasses and polars frames out; JSON, tables, markdown and plots are made in `report/`.

1. **Chain** (`chain.summary_chain`): the summaries on a path in order: compactions (with the
   split-turn part Pi appends after `---` / `**Turn Context (split turn):**`) and branch summaries.
2. **Parse** (`summary.parse_summary`, blocks from `markdown`): sections, items, file lists, literals.
3. **Pairs** (`chain.summary_pairs`): each compaction with the summary it was written from.
4. **Item matching** (`matching.match_items`), per pair: same section and same normalised text =
   `kept`; same section and fuzzy match (Dice coefficient of word tokens >= `FUZZY_THRESHOLD`,
   literals compatible) = `changed`; another section = `moved` (exact anywhere, fuzzy only within
   Progress / Next Steps or out of a Turn Context; never into the new summary's Turn Context); the
   rest of the old summary = `dropped`, of the new one = `added`. Multiset-aware.
5. **Literals** (`literals.extract_literals`): file paths, identifiers in backticks, numbers (two or
   more digits, and versions), double-quoted strings and error messages. A literal is kept when the
   same string still occurs in the later summary's text.
6. **Chain measures** (`decay`, `metrics`): the decay curve of every summary's items and literals
   across the later compactions, resurrections, section compliance per summary, goal similarity,
   file-list monotonicity violations and growth in tokens.

Module map: sections (names), text (normalising, similarity; CJK from tokens/text.py), literals
(regexes), markdown (blocks), summary (parsing), matching, counting (tokenizer and its fallback),
chain (chain and pairing), pairs, decay, metrics (chains, reports, gateable metrics), frames.
"""

from sessiontools.analysis.drift.chain import ChainSummary, SummaryPair, summary_chain, summary_pairs
from sessiontools.analysis.drift.counting import TOKENIZERS, TokenCounter, chars4_tokens, token_counter
from sessiontools.analysis.drift.decay import Decay, DecayPoint, Resurrection, decay_curves, resurrections
from sessiontools.analysis.drift.literals import extract_literals
from sessiontools.analysis.drift.matching import ItemChange, find_item, match_items
from sessiontools.analysis.drift.metrics import (
    METRICS,
    ChainDrift,
    DriftReport,
    DriftWorker,
    analyse_path,
    chain_metrics,
    diff_summaries,
)
from sessiontools.analysis.drift.pairs import PairDrift, pair_drift
from sessiontools.analysis.drift.sections import (
    BLOCKED,
    BRANCH_SECTIONS,
    CONSTRAINTS,
    CRITICAL,
    DECISIONS,
    DONE,
    FUZZY_THRESHOLD,
    GOAL,
    IN_PROGRESS,
    NEXT_STEPS,
    PROGRESS,
    TEMPLATE_SECTIONS,
    TURN_CONTEXT,
    TURN_PROGRESS,
    TURN_REQUEST,
    TURN_SECTIONS,
)
from sessiontools.analysis.drift.summary import Item, ParsedSummary, parse_summary
from sessiontools.analysis.drift.text import text_similarity

__all__ = [
    "BLOCKED", "BRANCH_SECTIONS", "CONSTRAINTS", "CRITICAL", "DECISIONS", "DONE", "FUZZY_THRESHOLD", "GOAL",
    "IN_PROGRESS", "METRICS", "NEXT_STEPS", "TEMPLATE_SECTIONS", "PROGRESS", "TOKENIZERS", "TURN_CONTEXT",
    "TURN_PROGRESS", "TURN_REQUEST", "TURN_SECTIONS", "ChainDrift", "ChainSummary", "Decay", "DecayPoint",
    "DriftReport", "DriftWorker", "Item", "ItemChange", "PairDrift", "ParsedSummary", "Resurrection",
    "SummaryPair", "TokenCounter", "analyse_path", "chain_metrics", "chars4_tokens", "decay_curves",
    "diff_summaries", "extract_literals", "find_item", "match_items", "pair_drift", "parse_summary",
    "resurrections", "summary_chain", "summary_pairs", "text_similarity", "token_counter",
]
