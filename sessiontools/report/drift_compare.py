"""`diff-summaries --compare A B`: the side-by-side table and the JSON body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessiontools.analysis.drift.compare import Comparison, side_metrics
from sessiontools.names import COMPARE_SIDE_METRICS


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return f"{v:,}"


def compare_table(cmp: Comparison, metrics: dict[str, Any], a: str, b: str) -> Any:
    from rich.table import Table

    from sessiontools.report.text import safe_text

    t = Table(title=safe_text(f"diff-summaries --compare: A = {a}, B = {b} ({len(cmp.pairs)} session(s) paired)"),
              title_justify="left")
    for col, just in (("metric", "left"), ("A", "right"), ("B", "right"), ("B / A", "right"), ("B - A", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for m in COMPARE_SIDE_METRICS:
        t.add_row(m, _fmt(metrics[f"a.{m}"]), _fmt(metrics[f"b.{m}"]), _fmt(metrics[f"compare.{m}"]),
                  _fmt(metrics[f"delta.{m}"]))
    t.caption = ("retention.* = share of the spans' facts the summaries state; section.* = share of a section's "
                 "items carried into the next summary; - = nothing to measure. Gate on compare.M (B / A), "
                 "delta.M (B - A), a.M or b.M")
    return t


def compare_to_dict(cmp: Comparison, metrics: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    pairs = []
    for label, ca, cb in cmp.pairs:
        pairs.append({"session": label, "a": str(ca[0].session) if ca else None, "b": str(cb[0].session) if cb else None,
                      "a_metrics": side_metrics(ca), "b_metrics": side_metrics(cb)})
    return {"a": a, "b": b, "metrics": metrics, "pairs": pairs, "unpaired": list(cmp.unpaired)}


def compare_headline(cmp: Comparison, metrics: dict[str, Any]) -> str:
    parts = []
    for m in ("retention.files", "retention.identifiers", "retention.constraints", "section.done"):
        r = metrics[f"compare.{m}"]
        if r is not None:
            parts.append(f"{m} B/A {r:.3f}")
    names = ", ".join(Path(p).name for p in cmp.unpaired[:3])
    tail = f"; unpaired: {names}{' ...' if len(cmp.unpaired) > 3 else ''}" if cmp.unpaired else ""
    return f"diff-summaries --compare: {len(cmp.pairs)} session(s) paired; " + ("; ".join(parts) or "nothing to compare") + tail
