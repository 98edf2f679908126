"""Our port's answer to an oracle query, and the field-by-field comparison with Pi's answer."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontools.policies.pi import (
    CompactionSettings,
    Preparation,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    is_context_overflow,
    prepare_compaction,
)
from sessiontools.read import Entry, Session, read_bytes
from sessiontools.tokens.chars4 import estimate_tokens
from sessiontools.transcript.pi import SessionTree, build_context

KEEPS = (1, 1000, 5000, 20000, 100000)
PREPARE_FIELDS = ("path_ids", "context_estimate", "projected_context_estimate", "prepare", "serialized", "overflow")
CONTEXT_FIELDS = ("path_ids", "context", "estimate_tokens")


def session_from_lines(lines: Sequence[str], path: str = "<parity>") -> Session:
    return read_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n", path)


def run_end_points(path: Sequence[Entry]) -> list[int]:
    """Indices of assistant messages that end a run (not a tool call), and the path's last index."""
    pts = [i for i, e in enumerate(path) if e.role == "assistant" and (e.message or {}).get("stopReason") != "toolUse"]
    if path:
        pts.append(len(path) - 1)
    return sorted(set(pts))


def choose_points(path: Sequence[Entry], rng: random.Random, n_random: int, cap: int | None = None) -> list[int]:
    pts = set(run_end_points(path))
    if cap is not None and len(pts) > cap:
        pts = set(rng.sample(sorted(pts), cap))
    if path:
        pts |= {rng.randrange(len(path)) for _ in range(n_random)}
    return sorted(pts)


def _estimate_dict(est: Any) -> dict[str, Any]:
    return {
        "tokens": est.tokens,
        "usageTokens": est.usage_tokens,
        "trailingTokens": est.trailing_tokens,
        "lastUsageIndex": est.last_usage_index,
    }


def ours(path: Sequence[Entry], at: int, keep: int, major: str, *, fields: Sequence[str]) -> dict[str, Any]:
    """The answer of our port to one oracle query (same field names and shapes)."""
    prefix = path[: at + 1]
    ctx = build_context(prefix, major)
    out: dict[str, Any] = {}
    if "context" in fields:
        out["context"] = [dict(m) for m in ctx.messages]
    if "estimate_tokens" in fields:
        out["estimate_tokens"] = [estimate_tokens(m, major) for m in ctx.messages]
    if "context_estimate" in fields:
        out["context_estimate"] = _estimate_dict(estimate_context_tokens(ctx.messages, major))
    if "projected_context_estimate" in fields and major == "1":
        out["projected_context_estimate"] = _estimate_dict(estimate_projected_context_tokens(ctx, prefix))
    if "overflow" in fields:
        out["overflow"] = [
            {"index": i, "overflow": is_context_overflow(e.message, None, major)}
            for i, e in enumerate(prefix)
            if e.role == "assistant" and (e.message or {}).get("stopReason") == "error"
        ]
    if "prepare" in fields:
        res = prepare_compaction(prefix, CompactionSettings(True, 16384, keep), major, context=ctx)
        if isinstance(res, Preparation):
            out["prepare"] = {
                "first_kept_index": res.first_kept_index,
                "is_split_turn": res.is_split_turn,
                "turn_start_index": res.turn_start_index,
                "tokens_before": res.tokens_before,
                "messages_to_summarize": len(res.messages_to_summarize),
                "turn_prefix_messages": len(res.turn_prefix_messages),
                "has_previous_summary": res.has_previous_compaction and res.previous_summary is not None,
                "read_files": res.read_files,
                "modified_files": res.modified_files,
                "serialized": res.serialized(),
                "serialized_turn_prefix": res.serialized_turn_prefix(),
            }
        else:
            out["prepare"] = None
    return out


@dataclass
class Tally:
    """Counts of compared cases and the mismatches found."""

    cases: int = 0
    pi_errors: int = 0
    mismatches: list[str] = field(default_factory=list)
    failed_sessions: dict[str, list[str]] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.pi_errors += other.pi_errors
        self.mismatches.extend(other.mismatches)
        self.failed_sessions.update(other.failed_sessions)


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) < 300 else s[:300] + "…"


def js_normal(v: Any) -> Any:
    """A value as JavaScript holds it: every number a double (Pi prints 1.2e20 as 123456789012345680000,
    which Python reads back as an int that is not exactly the double)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, dict):
        return {k: js_normal(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [js_normal(x) for x in v]
    return v


def _equal(a: Any, b: Any) -> bool:
    return a == b or js_normal(a) == js_normal(b)


def compare_answer(label: str, mine: dict[str, Any], pi: dict[str, Any], tally: Tally) -> None:
    """Compare every field we computed with Pi's; record mismatches with enough context to debug."""
    if pi.get("errors") or pi.get("error"):
        tally.pi_errors += 1
        return
    tally.cases += 1
    for key, value in mine.items():
        theirs = pi.get(key)
        if key == "prepare" and value is not None and theirs is not None:
            for k, v in value.items():
                if k == "turn_start_index" and theirs.get("turn_start_method") not in ("findCutPoint", "projection"):
                    continue
                if not _equal(theirs.get(k), v):
                    tally.mismatches.append(f"{label} prepare.{k}: ours={_short(v)} pi={_short(theirs.get(k))}")
        elif not _equal(theirs, value):
            tally.mismatches.append(f"{label} {key}: ours={_short(value)} pi={_short(theirs)}")


def build_requests(
    session_id: str, lines: Sequence[str], path: Sequence[Entry], points: Sequence[int], keeps: Sequence[int],
    context_points: Sequence[int],
) -> list[dict[str, Any]]:
    reqs = [{
        "session_id": session_id,
        "lines": list(lines),
        "leaf_id": None,
        "queries": [{"at_index": p, "keep_recent": k, "reserve_tokens": 16384} for p in points for k in keeps],
        "fields": list(PREPARE_FIELDS),
    }]
    if context_points:
        reqs.append({
            "session_id": session_id + "#ctx",
            "lines": list(lines),
            "leaf_id": None,
            "queries": [{"at_index": p, "keep_recent": 20000, "reserve_tokens": 16384} for p in context_points],
            "fields": list(CONTEXT_FIELDS),
        })
    return reqs


def check_session(
    major: str, session_id: str, lines: Sequence[str], answers: Sequence[dict[str, Any]], tally: Tally
) -> None:
    """Compare the oracle's answers for one session (both requests of build_requests) with ours."""
    session = session_from_lines(lines, session_id)
    path = SessionTree(session).path().entries
    for ans in answers:
        if ans.get("query_index") is None:
            continue
        if "keep_recent" not in ans:  # Pi could not even load the session (e.g. a parent cycle)
            tally.pi_errors += 1
            continue
        if ans.get("query_index") == 0 and "path_ids" in ans and len(ans["path_ids"]) != len(path):
            tally.mismatches.append(f"{session_id} path length: ours={len(path)} pi={len(ans['path_ids'])}")
            tally.failed_sessions[session_id] = list(lines)
            return
        fields = CONTEXT_FIELDS if ans["session_id"].endswith("#ctx") else PREPARE_FIELDS
        mine = ours(path, ans["at_index"], ans["keep_recent"], major, fields=[f for f in fields if f != "path_ids"])
        label = f"{session_id} v{major} at={ans['at_index']} keep={ans['keep_recent']}"
        before = len(tally.mismatches)
        compare_answer(label, mine, ans, tally)
        if len(tally.mismatches) > before:
            tally.failed_sessions[session_id] = list(lines)
