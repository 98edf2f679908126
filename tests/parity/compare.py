"""Our port's answer to an oracle query, and the field-by-field comparison with Pi's answer."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.pi_env import PI_PACKAGES
from sessiontools.jsvalues import json_stringify
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
PREPARE_FIELDS = ("context_estimate", "prepare", "serialized", "sources", "overflow")
CONTEXT_FIELDS = ("context", "sources", "estimate_tokens")
#: Keys of an answer that only echo the request or carry the compact transport: not answers.
ECHO_KEYS = frozenset({"session_id", "query_index", "at_index", "keep_recent", "reserve_tokens", "context_refs"})
#: When Pi throws for a field, the fields computed from it are absent or null on Pi's side too.
DEPENDENT = {
    "context": ("context", "context_sources", "estimate_tokens", "context_estimate"),
    "prepare": ("prepare",),
    "prepare.serialized": ("prepare.serialized",),
    "prepare.serialized_turn_prefix": ("prepare.serialized_turn_prefix",),
}


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


def _sha1(values: list[Any]) -> str:
    """sha1 of JSON.stringify(values), as the oracle computes it."""
    return hashlib.sha1((json_stringify(values) or "").encode("utf-8", "surrogatepass")).hexdigest()


def session_facts(session: Session, path: Sequence[Entry], major: str) -> dict[str, Any]:
    """What the oracle reports about the whole session at query 0 (see oracle.py)."""
    return {
        "pi_version": PI_PACKAGES[major][1],
        "session_valid": session.readable,
        "file_version": session.format_version if session.readable else None,
        "entry_count": len(session.entries) + (1 if session.header is not None else 0),
        "path_types": [e.type for e in path],
        "path_ids": [e.id for e in path],
        "path_line_indices": [e.line - 1 for e in path],
        # What Pi's SessionManager sends on resume: not always the branch's context (its leaf rule differs).
        "session_context": [dict(m) for m in build_context(SessionTree(session).context_path().entries, major).messages],
    }


def _roles(messages: Sequence[Any]) -> list[Any]:
    return [m.get("role") if isinstance(m, Mapping) else None for m in messages]


def _prepare_answer(res: Any, prefix: Sequence[Entry], ctx: Any, major: str, sources: dict[int, int]) -> Any:
    if not isinstance(res, Preparation):
        return None
    out = {
        "first_kept_index": res.first_kept_index,
        "first_kept_entry_id": res.first_kept_entry_id,
        "is_split_turn": res.is_split_turn,
        "turn_start_index": res.turn_start_index,
        "turn_start_method": "findCutPoint" if major == "0" else "projection",
        "boundary_start_index": res.boundary_start,
        "tokens_before": res.tokens_before,
        "messages_to_summarize": len(res.messages_to_summarize),
        "turn_prefix_messages": len(res.turn_prefix_messages),
        "has_previous_summary": res.has_previous_compaction and res.previous_summary is not None,
        "previous_summary": res.previous_summary,
        "read_files": res.read_files,
        "modified_files": res.modified_files,
        "serialized": res.serialized(),
        "serialized_turn_prefix": res.serialized_turn_prefix(),
        "messages_to_summarize_sources": [sources.get(id(m)) for m in res.messages_to_summarize],
        "turn_prefix_sources": [sources.get(id(m)) for m in res.turn_prefix_messages],
        "messages_to_summarize_roles": _roles(res.messages_to_summarize),
        "turn_prefix_roles": _roles(res.turn_prefix_messages),
    }
    if major == "1":
        # The same projected positions the oracle reconstructs, from our projection.
        pes = ctx.entries
        prev = next((i for i, pe in enumerate(pes) if pe.source.type == "compaction" and pe.messages), -1)
        b_start = prev + 1
        where = {id(e): i for i, e in enumerate(prefix)}

        def projected(path_index: int | None) -> int | None:
            if path_index is None:
                return None
            return next((k for k in range(b_start, len(pes)) if pes[k].source is prefix[path_index]), None)

        out["boundary_start_index"] = where[id(pes[b_start].source)] if b_start < len(pes) else None
        out["projected_boundary_start"] = b_start
        out["projected_first_kept_index"] = projected(res.first_kept_index)
        out["projected_turn_start_index"] = projected(res.turn_start_index)
    return out


def ours(
    session: Session, path: Sequence[Entry], at: int, keep: int, major: str, *, fields: Sequence[str], facts: bool
) -> dict[str, Any]:
    """The answer of our port to one oracle query: the same keys, names and shapes as Pi's."""
    prefix = path[: at + 1]
    ctx = build_context(prefix, major)
    out: dict[str, Any] = {"path_len": len(path), "slice_len": len(prefix)}
    if facts:
        out.update(session_facts(session, path, major))
    out["slice_ids_sha1"] = _sha1([e.id for e in prefix])
    out["slice_lines_sha1"] = _sha1([e.line - 1 for e in prefix])
    sources: dict[int, int] = {}
    for i, e in enumerate(path):
        if e.type == "message" and e.message is not None:
            sources.setdefault(id(e.message), i)
    if "context" in fields:
        out["context"] = [dict(m) for m in ctx.messages]
        if "sources" in fields:
            out["context_sources"] = [sources.get(id(m)) for m in ctx.messages]
    if "estimate_tokens" in fields:
        out["estimate_tokens"] = [estimate_tokens(m, major) for m in ctx.messages]
    if "context_estimate" in fields:
        out["context_estimate"] = _estimate_dict(estimate_context_tokens(ctx.messages, major))
        if major == "1":
            out["projected_context_estimate"] = _estimate_dict(estimate_projected_context_tokens(ctx, prefix))
    if "overflow" in fields:
        out["overflow"] = [
            {"index": i, "overflow": is_context_overflow(e.message, None, major)}
            for i, e in enumerate(prefix)
            if e.role == "assistant" and (e.message or {}).get("stopReason") == "error"
        ]
    if "prepare" in fields:
        res = prepare_compaction(prefix, CompactionSettings(True, 16384, keep), major, context=ctx)
        out["prepare"] = _prepare_answer(res, prefix, ctx, major, sources)
    return out


@dataclass
class Tally:
    """Counts of compared cases, the mismatches found, and where Pi itself threw (with its error)."""

    cases: int = 0
    pi_throws: list[str] = field(default_factory=list)
    helper_failures: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    failed_sessions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def pi_errors(self) -> int:
        return len(self.pi_throws)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.pi_throws.extend(other.pi_throws)
        self.helper_failures.extend(other.helper_failures)
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


_MISSING = object()


def _compare_dicts(label: str, prefix: str, mine: Mapping[str, Any], pi: Mapping[str, Any], skip: set[str],
                   tally: Tally) -> None:
    """Every key of either side (a key missing on one side is a mismatch); nested for `prepare`."""
    for key in sorted(set(mine) | set(pi)):
        name = prefix + key
        if key in ECHO_KEYS or name in skip or key in ("errors", "error"):
            continue
        a, b = mine.get(key, _MISSING), pi.get(key, _MISSING)
        if a is _MISSING or b is _MISSING:
            side = "our" if b is _MISSING else "Pi's"
            tally.mismatches.append(f"{label} {name}: only on {side} side "
                                    f"({_short(a if b is _MISSING else b)})")
        elif key == "prepare" and isinstance(a, dict) and isinstance(b, dict):
            _compare_dicts(label, "prepare.", a, b, skip, tally)
        elif not _equal(a, b):
            tally.mismatches.append(f"{label} {name}: ours={_short(a)} pi={_short(b)}")


def compare_answer(label: str, mine: dict[str, Any], pi: dict[str, Any], tally: Tally) -> None:
    """Compare every field of both answers. Fields where Pi itself threw are listed, not compared."""
    errors = pi.get("errors") or {}
    skip: set[str] = set()
    for fld, message in errors.items():
        tally.pi_throws.append(f"{label} {fld}: {message}")
        skip.update(DEPENDENT.get(fld, (fld,)))
    tally.cases += 1
    _compare_dicts(label, "", mine, pi, skip, tally)


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
    v1 = session.format_version == 1
    # Per request: Pi draws new random ids for v1 files each time it loads one.
    pi_ids = {a["session_id"]: list(a["path_ids"]) for a in answers if "path_ids" in a}
    for ans in answers:
        label = f"{session_id} v{major} at={ans.get('at_index')} keep={ans.get('keep_recent')}"
        if "helper_error" in ans:
            tally.helper_failures.append(f"{label}: {ans['helper_error']}")
            continue
        if ans.get("query_index") is None and not ans.get("errors"):
            # A session without queries (its path is empty): only the session facts to compare.
            compare_answer(f"{session_id} v{major} (no queries)", {"path_len": len(path),
                           **session_facts(session, path, major)}, ans, tally)
            continue
        if ans.get("query_index") is None or "session" in (ans.get("errors") or {}):
            # Pi could not load the session at all (its migration threw, or its parent links loop).
            tally.pi_throws.append(f"{session_id} v{major} session: {ans.get('error')}")
            continue
        fields = CONTEXT_FIELDS if ans["session_id"].endswith("#ctx") else PREPARE_FIELDS
        mine = ours(session, path, ans["at_index"], ans["keep_recent"], major, fields=fields,
                    facts=ans["query_index"] == 0)
        if v1:
            # Pi gives v1 entries random ids (we derive them): compare ids by their position in the path.
            _ids_by_position(mine, [e.id for e in path])
            _ids_by_position(ans, pi_ids.get(ans["session_id"], []))
        before = len(tally.mismatches)
        compare_answer(label, mine, ans, tally)
        if len(tally.mismatches) > before:
            tally.failed_sessions[session_id] = list(lines)


def _ids_by_position(answer: dict[str, Any], ids: Sequence[Any]) -> None:
    """Replace entry ids by their index in the path (v1 files only; see check_session)."""
    pos = {x: i for i, x in reversed(list(enumerate(ids)))}
    answer.pop("slice_ids_sha1", None)
    if "path_ids" in answer:
        answer["path_ids"] = [pos.get(x) for x in answer["path_ids"]]
    prep = answer.get("prepare")
    if isinstance(prep, dict) and "first_kept_entry_id" in prep:
        prep["first_kept_entry_id"] = pos.get(prep["first_kept_entry_id"], "not on the path")
