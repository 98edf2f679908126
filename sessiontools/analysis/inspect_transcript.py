"""`inspect` for any agent's transcript (Codex rollouts, Claude Code transcripts): the same keys as
Pi's inspect where they mean the same thing, from the neutral model.

Entries are the transcript's messages; "leaves" are its conversation paths (main chain or branches),
sidechains (Claude Code subagents) are counted apart. Requests, usage and cost are the file's billed
responses (`Transcript.billed_requests`: for Claude Code every response in the session's files once,
on the resumed path or not, with its final output count; for Codex the rollout's requests), priced
by `transcript.prices` (``cost_source``: ``recorded``, ``catalogue`` or ``none``; a session none of
whose models has a price has ``cost`` null, never $0). Compactions carry their recorded trigger,
tokens before and after, and who wrote the summary; those on no path (Claude Code branches off the
resumed path) are listed in ``other_branch_compactions``.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain, repeat
from typing import Any

from sessiontools.names import RULE_VERSION_KEY
from sessiontools.transcript.model import BilledRows, Compaction, MessageColumns, Transcript, TranscriptPath
from sessiontools.transcript.prices import SessionCost, session_cost, session_cost_of


def _compactions(path: TranscriptPath) -> list[dict[str, Any]]:
    out = []
    for c in path.compactions:
        first_kept = path.messages[c.kept[0][0]].id if c.kept else None
        out.append({
            "entry_id": c.id, "index": c.index, "line": c.line, "tokens_before": c.tokens_before,
            "tokens_after": c.tokens_after, "first_kept_entry_id": first_kept, "kind": c.trigger.value,
            "writer": c.writer,
        })
    return out


def _off_path(c: Compaction) -> dict[str, Any]:
    return {"entry_id": c.id, "index": None, "line": c.line, "tokens_before": c.tokens_before,
            "tokens_after": c.tokens_after, "first_kept_entry_id": None, "kind": c.trigger.value,
            "writer": c.writer, "leaf_id": None}


def _messages(paths: list[TranscriptPath]) -> tuple[int, Counter[Any]]:
    """How many messages all `paths` have, each once (by line and id), and their count by role (by
    Role: its .value, a property call, is read once per role at the end; a message's role is its
    first occurrence's). Paths whose messages are all columns (`MessageColumns`: a summed-up
    session) are counted from them in one dict, without a `Message` or a Python step each."""
    if paths and all(type(p.messages) is MessageColumns for p in paths):
        keys = list(chain.from_iterable(zip(p.messages.lines, p.messages.ids, strict=True) for p in paths))
        roles = list(chain.from_iterable(p.messages.roles for p in paths))
        first = dict(zip(reversed(keys), reversed(roles), strict=True))  # (read backwards: the first one's role)
        return len(first), Counter(first.values())
    seen: set[tuple[int, Any]] = set()
    by_role: Counter[Any] = Counter()
    for p in paths:
        for m in p.messages:
            key = (m.line, m.id)
            if key not in seen:
                seen.add(key)
                by_role[m.role] += 1
    return len(seen), by_role


def _billed(t: Transcript) -> tuple[int, Counter[str], dict[str, int], SessionCost]:
    """The billed requests' count, count by model (`provider/model`), usage by class and cost.
    Rows (`BilledRows`: a summed-up session) are read as columns, without a `Request` each."""
    billed = t.billed
    models: Counter[str] = Counter()
    if type(billed) is BilledRows and billed.rows:
        p = billed.provider
        _, by_model, stamps, _, _, inp, cache_read, cache_write, out, hour = zip(*billed.rows, strict=True)
        for model, n in Counter(by_model).items():
            models[f"{p or '?'}/{model or '?'}"] += n  # (a reader may pass any JSON value as model)
        cost = session_cost_of(zip(repeat(p), by_model, stamps, repeat(None), inp, cache_read, cache_write, out,
                                   hour, strict=False))  # (repeat: endless)
        return len(billed), models, {"input": sum(inp), "output": sum(out), "cache_read": sum(cache_read),
                                     "cache_write": sum(cache_write)}, cost
    requests = t.billed_requests()
    i = o = cr = cw = 0
    for r in requests:
        models[f"{r.provider or '?'}/{r.model or '?'}"] += 1
        u = r.usage
        i += u.input
        o += u.output
        cr += u.cache_read
        cw += u.cache_write
    return len(requests), models, {"input": i, "output": o, "cache_read": cr, "cache_write": cw}, \
        session_cost(requests)


def inspect_transcript(t: Transcript) -> dict[str, Any]:
    """Counts, paths, compactions, usage, cost and problems of one transcript."""
    main = [p for p in t.paths if not p.sidechain]
    side = [p for p in t.paths if p.sidechain]
    entries, by_role = _messages(t.paths)
    requests, models, usage, cost = _billed(t)
    first = main[0] if main else (t.paths[0] if t.paths else None)
    compactions = _compactions(first) if first is not None else []
    overflows = sum(len(p.overflows) for p in t.paths)
    diags = t.diagnostics
    return {
        "path": t.source,
        "agent": t.agent.value,
        "session_id": t.session_id,
        "format_version": t.format,
        RULE_VERSION_KEY: None,
        "session_name": None,
        "entries": entries,
        "entries_by_type": {"message": entries},
        "messages_by_role": dict(sorted((r.value, n) for r, n in by_role.items())),
        "leaves": len(main),
        "branch_points": max(0, len(main) - 1),
        "leaf_ids": [p.leaf_id for p in main],
        "branch_point_ids": [],
        "sidechains": len(side),
        "labels": {},
        "path_leaf_id": first.leaf_id if first is not None else None,
        "path_entries": len(first.messages) if first is not None else 0,
        "compactions": compactions,
        "other_branch_compactions": [_off_path(c) for c in t.off_path_compactions],
        "models": dict(sorted(models.items())),
        "requests": requests,
        "skipped_replies": dict(sorted(sum((p.skipped for p in t.paths), Counter()).items())),
        "usage": usage,
        **cost.to_dict(),
        "errors": overflows,
        "overflow_errors": overflows,
        "settings": {k: v for k, v in sorted(t.settings.items()) if isinstance(v, str | int | float | bool)},
        "skipped_lines": [d.to_dict() for d in diags if d.kind == "skipped"],
        "recovered_lines": [d.to_dict() for d in diags if d.kind == "recovered"],
        "notices": [d.to_dict() for d in diags if d.kind == "notice"],
        "fatal": [d.to_dict() for d in diags if d.kind == "fatal"],
    }
