"""`inspect` of a Pi session: what is in the file, as one JSON-ready dict (the contract of
`sessiontools inspect --format json`). Pi's reader keeps more than the neutral transcript (entry
types, labels, branch points, every leaf's path), so Pi's inspect reads the session itself;
`analysis.inspect.inspect_source` reaches it through `transcript.load.OWN_INSPECT`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sessiontools.read.pi.entries import Session
from sessiontools.read.values import cleaned_for, number
from sessiontools.transcript.pi.kinds import compaction_kind
from sessiontools.transcript.pi.overflow import is_context_overflow
from sessiontools.transcript.pi.requests import HARNESS_MODEL_IDS, plain_request, skip_reason
from sessiontools.transcript.pi.tree import Path, SessionTree

try:
    from sessiontools.read._native import pi_reply_sums as _reply_sums
except ImportError:  # not built on this machine: `_replies` does it all
    _reply_sums = None


def _model_key(msg: dict[str, Any]) -> str:
    p, m = msg.get("provider"), msg.get("model")
    if not p and not m:
        return "(no model recorded)"
    return f"{p or '?'}/{m or '?'}"


def compactions_on(path: Path, pi_version: str) -> list[dict[str, Any]]:
    out = []
    for i, e in enumerate(path.entries):
        if e.type == "compaction":
            out.append(
                {
                    "entry_id": e.id,
                    "index": i,
                    "line": e.line,
                    "tokens_before": e.data.get("tokensBefore"),
                    "first_kept_entry_id": e.data.get("firstKeptEntryId"),
                    "kind": compaction_kind(path.entries, i, pi_version),
                    # who wrote the summary: Pi's summariser ("agent") or an extension / hook ("hook")
                    "writer": "hook" if e.data.get("fromHook") is True else "agent",
                }
            )
    return out


def other_branch_compactions(tree: SessionTree, on_path: list[dict[str, Any]], pi_version: str) -> list[dict[str, Any]]:
    """Compactions in the file that are not on the analysed path, each with a leaf whose path holds it."""
    seen = {(c["line"], c["entry_id"]) for c in on_path}
    elsewhere: dict[tuple[int, Any], dict[str, Any]] = {}
    for p in tree.all_paths():
        for c in compactions_on(p, pi_version):
            key = (c["line"], c["entry_id"])
            if key not in seen and key not in elsewhere:
                elsewhere[key] = {**c, "leaf_id": p.leaf_id}
    return sorted(elsewhere.values(), key=lambda c: c["line"])


def _elsewhere(tree: SessionTree, on_path: list[dict[str, Any]], n: _Counts, pi_version: str) -> list[dict[str, Any]]:
    """`other_branch_compactions`, without walking every leaf's path when every compaction of the
    file is already on the analysed one (the common case: no compaction, or a single branch)."""
    if len(on_path) == n.by_type.get("compaction", 0):
        return []  # each compaction entry appears once in `on_path` (deduplicated by line and id)
    return other_branch_compactions(tree, on_path, pi_version)


@dataclass(slots=True)
class _Counts:
    """What one pass over a Pi session's entries counts."""

    by_type: Counter[str] = field(default_factory=Counter)
    by_role: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    skipped_replies: Counter[str] = field(default_factory=Counter)
    totals: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])  # input, output, cacheRead, cacheWrite
    cost: float = 0.0
    requests: int = 0
    errors: int = 0
    overflow_errors: int = 0


#: Recorded usage classes, in the order of `_Counts.totals`.
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")


def _count(session: Session, pi_version: str) -> _Counts:
    """Entries by type, messages by role, models, usage, cost, requests and errors, in one pass.

    A request is what the transcript calls one (`transcript.pi.requests.skip_reason`): harness
    pseudo-replies, aborted and failed calls are counted apart, by reason. Where the C is built,
    `read._native.pi_reply_sums` sums the usage and cost of every reply and counts the plain ones
    (`plain_request`); the others go through `_replies`' rules (tests/analysis/test_inspect_counts.py)."""
    c = _Counts()
    entries = session.entries
    c.by_type.update([e.type for e in entries])
    messages = [e for e in entries if e.type == "message"]
    c.by_role.update([e.role or "<none>" for e in messages])
    replies = [e.message for e in messages if e.role == "assistant"]
    sums = None if _reply_sums is None else _reply_sums(replies, HARNESS_MODEL_IDS)
    if sums is None:
        _replies(c, replies, pi_version, True)
    else:
        t_in, t_out, t_read, t_write, c.cost, c.requests, models, others = sums
        c.totals = [t_in, t_out, t_read, t_write]
        c.models.update(models)
        _replies(c, others, pi_version, False)
    return c


def _replies(c: _Counts, replies: list[Any], pi_version: str, sums: bool) -> None:
    """`replies` (assistant messages, in file order) counted into `c`: models, requests, skipped
    replies by reason, errors; with `sums`, their usage and cost too (the totals by _USAGE_KEYS and
    the cost, floats summed in file order)."""
    models: list[str] = []
    totals = list(c.totals)
    cost = c.cost
    requests = errors = overflow_errors = 0
    for msg in replies:
        assert msg is not None
        u = msg.get("usage")
        stop = msg.get("stopReason")
        reason = None if plain_request(msg, u, stop) else skip_reason(msg, pi_version)
        if reason != "pseudo_reply":  # a harness's message names no model that was called
            models.append(_model_key(msg))
        if sums and type(u) is dict:  # (the common replies are summed in C: `_reply_sums`)
            for k, key in enumerate(_USAGE_KEYS):
                v = u.get(key)
                if type(v) is int or type(v) is float:
                    totals[k] += v
            total_cost = u.get("cost")
            if type(total_cost) is dict:
                v = total_cost.get("total")
                cost += v if type(v) is float or type(v) is int else number(v)
        if reason is None:
            requests += 1
        else:
            c.skipped_replies[reason] += 1
        if stop == "error":
            errors += 1
            if is_context_overflow(msg, None, pi_version):
                overflow_errors += 1
    c.models.update(models)
    if sums:
        c.totals, c.cost = totals, cost
    c.requests += requests
    c.errors += errors
    c.overflow_errors += overflow_errors


def inspect_session(
    session: Session, *, leaf: str | None = None, all_leaves: bool = False, pi_version: str | None = None
) -> dict[str, Any]:
    """Counts, tree shape, compactions, usage, cost and problems of one session."""
    tree = SessionTree(session)
    pi_version = pi_version or session.pi_version
    n = _count(session, pi_version)
    by_type, by_role, models, totals, cost = n.by_type, n.by_role, n.models, n.totals, n.cost
    requests, errors, overflow_errors = n.requests, n.errors, n.overflow_errors
    usage = {"input": int(totals[0]), "output": int(totals[1]), "cache_read": int(totals[2]),
             "cache_write": int(totals[3])}
    if all_leaves:
        paths = tree.all_paths()
    else:
        paths = [tree.path(leaf)]
    seen: set[tuple[int, Any]] = set()
    compactions = []
    for p in paths:
        for c in compactions_on(p, pi_version):
            key = (c["line"], c["entry_id"])
            if key not in seen:
                seen.add(key)
                compactions.append(c)
    header = session.header
    return cleaned_for(session, {  # (the cleaned view: no lone surrogate in what is reported)
        "path": session.path,
        "agent": session.agent.value,
        "session_id": header.id if header else None,
        "format_version": session.format_version,
        "pi_version": pi_version,
        "session_name": tree.session_name,
        "entries": len(session.entries),
        "entries_by_type": dict(sorted(by_type.items())),
        "messages_by_role": dict(sorted(by_role.items())),
        "leaves": len(tree.leaves),
        "branch_points": len(tree.branch_points),
        "leaf_ids": [e.id for e in tree.leaves],
        "branch_point_ids": [e.id for e in tree.branch_points],
        "labels": dict(sorted(tree.labels.items())),
        "path_leaf_id": paths[0].leaf_id if paths else None,
        "path_entries": len(paths[0]) if paths else 0,
        "compactions": compactions,
        "other_branch_compactions": [] if all_leaves else _elsewhere(tree, compactions, n, pi_version),
        "models": dict(sorted(models.items())),
        "requests": requests,
        "skipped_replies": dict(sorted(n.skipped_replies.items())),
        "usage": usage,
        "cost": round(cost, 6),
        "cost_source": "recorded",  # Pi records every reply's cost (0 for a model it has no price for)
        "errors": errors,
        "overflow_errors": overflow_errors,
        "skipped_lines": [d.to_dict() for d in session.skipped],
        "recovered_lines": [d.to_dict() for d in session.recovered],
        "notices": [d.to_dict() for d in session.notices],
        "fatal": [d.to_dict() for d in session.fatal],
    })
