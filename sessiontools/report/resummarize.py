"""`resummarize` output: the regenerated session files (written atomically), the JSON records and
the table.

A record per input path and setting: the file written, and per compaction the requests with
their sizes (estimated: chars/4 of the text, Pi's own estimate; and as the endpoint counted them),
cost at the catalogue's prices of --model (None when unknown), latency and cache hit.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sessiontools.replay.summarizer import estimated_tokens


def output_path(directory: Path, result: Any) -> Path:
    """`DIR/<input stem>.<setting>.jsonl` (`w16000-r3000-k4000-pi-0`): one file per input and setting."""
    return directory / f"{Path(result.chain.session.path).stem}.{result.chain.label}.jsonl"


def _line(rec: dict[str, Any]) -> str:
    # JSON.stringify's shape (Pi writes its files so): no spaces, non-ASCII as is.
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


def write_session(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """The new session file, its JSON lines in the agent's format (`Summarizer.records`: a Pi
    session, a Codex rollout), atomically (a temporary file beside it, then a rename)."""
    text = "".join(_line(r) + "\n" for r in records)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cost(inp: int | None, out: int | None, prices: dict[str, float] | None) -> float | None:
    if prices is None or inp is None or out is None or "input" not in prices or "output" not in prices:
        return None
    return round(inp * prices["input"] + out * prices["output"], 6)


def result_record(result: Any, output: Path | None,
                  prices: dict[str, float] | None) -> dict[str, Any]:
    """One element of the JSON `outputs` list."""
    chain = result.chain
    comps = []
    totals = {"requests": 0, "cache_hits": 0, "request_tokens_estimated": 0, "request_tokens_endpoint": 0,
              "output_tokens_estimated": 0, "output_tokens_endpoint": 0, "cost": 0.0}
    unknown_cost = unknown_tokens = False
    for n, r in enumerate(result.compactions, 1):
        sc = r.compaction
        reqs = []
        for req, ans in r.calls:
            cost = _cost(ans.input_tokens, ans.output_tokens, prices)
            row = {
                "kind": req.kind.value,
                "max_tokens": req.max_tokens,
                "request_tokens_estimated": estimated_tokens(req.system) + estimated_tokens(req.user),
                "request_tokens_endpoint": ans.input_tokens,
                "output_tokens_estimated": estimated_tokens(ans.text),
                "output_tokens_endpoint": ans.output_tokens,
                "stop_reason": ans.stop_reason,
                "latency_s": round(ans.latency_s, 3),
                "cache_hit": ans.cache_hit,
                "cost": cost,
            }
            reqs.append(row)
            totals["requests"] += 1
            totals["cache_hits"] += ans.cache_hit
            totals["request_tokens_estimated"] += row["request_tokens_estimated"]
            totals["output_tokens_estimated"] += row["output_tokens_estimated"]
            if ans.input_tokens is None or ans.output_tokens is None:
                unknown_tokens = True
            else:
                totals["request_tokens_endpoint"] += ans.input_tokens
                totals["output_tokens_endpoint"] += ans.output_tokens
            if cost is None:
                unknown_cost = True
            else:
                totals["cost"] += cost
        comps.append({
            "index": n,
            "reason": sc.reason.value,
            "parent_entry_id": sc.parent_entry_id,
            "first_kept_entry_id": sc.first_kept_entry_id,
            "tokens_before": sc.tokens_before,
            "is_split_turn": sc.is_split_turn,
            "regenerated": r.regenerated,
            "at_recorded_place": sc.matches_recorded,
            "summary_chars": len(r.summary),
            "summary_tokens_estimated": estimated_tokens(r.summary),
            "requests": reqs,
        })
    if unknown_tokens:
        totals["request_tokens_endpoint"] = totals["output_tokens_endpoint"] = None
    totals["cost"] = None if unknown_cost or prices is None else round(totals["cost"], 6)
    return {
        "session": chain.session.path,
        "leaf_id": chain.leaf_id,
        "settings": chain.settings.to_dict(),
        "output": None if output is None else str(output),
        "error": result.error,
        "compactions": comps,
        "totals": totals,
    }


def resummarize_table(records: Sequence[dict[str, Any]]) -> Any:
    from rich.table import Table

    from sessiontools.report.text import safe_text as plain

    t = Table(title="resummarize: regenerated summaries", title_justify="left")
    for col, just in (("written (input stem.setting)", "left"), ("comp.", "right"), ("req.", "right"),
                      ("cached", "right"), ("in tok", "right"), ("out tok", "right"), ("cost $", "right")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in records:
        tot = r["totals"]
        regen = sum(1 for c in r["compactions"] if c["regenerated"])
        inp = tot["request_tokens_endpoint"]
        out = tot["output_tokens_endpoint"]
        name = Path(r["output"]).name if r["output"] else f"{Path(r['session']).name}: failed: {r['error']}"
        t.add_row(
            plain(name), f"{regen}/{len(r['compactions'])}", str(tot["requests"]), str(tot["cache_hits"]),
            "?" if inp is None else f"{inp:,}", "?" if out is None else f"{out:,}",
            "?" if tot["cost"] is None else f"{tot['cost']:.4f}",
        )
    t.caption = ("comp. = compactions regenerated/all (a user's is kept as recorded); req. = requests; cached = "
                 "answered from the cache; in/out tokens as the "
                 "endpoint counted them (? = it did not say); cost at --model's catalogue prices (? = unknown)")
    return t


def resummarize_headline(records: Sequence[dict[str, Any]], sent: int, hits: int) -> str:
    files = sum(1 for r in records if r["output"])
    comps = sum(sum(1 for c in r["compactions"] if c["regenerated"]) for r in records)
    failed = sum(1 for r in records if r["error"])
    tail = f"; {failed} setting(s) failed" if failed else ""
    return (f"resummarize: {comps} summaries regenerated into {files} session file(s); {sent} request(s) sent, "
            f"{hits} answered from the cache{tail}")
