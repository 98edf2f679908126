"""estimate-error's reading of a Pi session (`pi_source`, through `transcript.load.ESTIMATE_SOURCES`):
Pi's own context walk gives each request the messages Pi sent (1.x context edits included) and the
rejected requests whose error states the provider's count; resets are Pi's compactions (and 1.x
context edits), after which Pi distrusts earlier usage."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from sessiontools.transcript.model import Message, Ranges, Request, Role, TranscriptPath, Usage, ranges_of
from sessiontools.transcript.pi.message_units import message_units
from sessiontools.transcript.source import Source


def pi_source(session: Any, leaf: str | None, all_leaves: bool, pi_version: str | None) -> Source:
    """estimate-error's `Source` of a Pi session: its transcript with the 1.x context edits, the
    rejected requests whose error states the provider's count, the resets and skipped replies."""
    from sessiontools.transcript.pi.neutral import pi_transcript
    from sessiontools.transcript.pi.requests import skip_reason
    from sessiontools.transcript.pi.tree import SessionTree

    version = pi_version or session.pi_version
    paths: list[Any] = []

    def choose(tree: SessionTree) -> list[Any]:
        paths.extend(tree.all_paths() if all_leaves else [tree.path(leaf)])
        return paths

    transcript = pi_transcript(session, pi_version=version, paths=choose)
    if version == "1":
        transcript.paths = [_with_edits(p, tp) for p, tp in zip(paths, transcript.paths, strict=True)]
    overflows = []
    for k, (p, tp) in enumerate(zip(paths, transcript.paths, strict=True)):
        transcript.paths[k], extra = _overflow_requests(p, tp, version)
        overflows.append(extra)
    counted = {r.line for extra in overflows for r in extra}
    resets = []
    for p in paths:
        kinds = ("compaction", "context_edit") if version == "1" else ("compaction",)
        resets.append(tuple(e.line for e in p.entries if e.type in kinds))
    skipped: Counter[str] = Counter()
    seen: set[int] = set()
    for tp in transcript.paths:
        for m in tp.messages:
            if m.role != Role.ASSISTANT or m.line in seen or m.line in counted or not isinstance(m.raw, dict):
                continue
            seen.add(m.line)
            reason = skip_reason(m.raw, version)
            if reason is not None:
                skipped[reason] += 1
    return Source(transcript, resets, skipped, version, overflows, native_messages=True,
                  merges_systems=version == "1")


def _pi_contexts(path: Any, tp: TranscriptPath, messages: list[Message], lines: list[int],
                 version: str) -> list[Ranges | None]:
    """The context Pi builds before each entry line in `lines`, as index ranges into `messages`.

    A 1.x context edit that replaces a message's content changes what later requests sent, while
    the neutral path keeps the original message: the edited messages are appended to `messages`
    (same line and id) so that every count stays Pi-exact. None where a message cannot be mapped.
    """
    from sessiontools.transcript.pi.incremental import iter_request_contexts_gen

    slot: dict[tuple[int, int], int] = {}
    for m in tp.messages:
        k = 0
        while (m.line, k) in slot:
            k += 1
        slot[(m.line, k)] = m.index
    by_line = {e.line: k for k, e in enumerate(path.entries)}
    out: list[Ranges | None] = []
    for _, ctx, _ in iter_request_contexts_gen(path.entries, [by_line[ln] for ln in lines], version):
        idx: list[int] | None = []
        raws = iter(ctx.messages)
        for pe in ctx.entries:
            for k in range(len(pe.messages)):
                raw = next(raws)
                i = slot.get((pe.source.line, k))
                if i is None or idx is None:
                    idx = None
                    continue
                if messages[i].raw is not raw:
                    old = messages[i]
                    i = len(messages)
                    messages.append(Message(i, old.id, old.line, old.role, message_units(raw), old.timestamp, raw))
                idx.append(i)
        out.append(ranges_of(idx) if idx is not None else None)
    return out


def _with_edits(path: Any, tp: TranscriptPath) -> TranscriptPath:
    """Pi 1.x with context edits that replace content: requests get the edited messages."""
    if not any(e.type == "context_edit" and isinstance(e.data.get("replacement"), dict) for e in path.entries):
        return tp
    messages = list(tp.messages)
    contexts = _pi_contexts(path, tp, messages, [r.line for r in tp.requests], "1")
    requests = tuple(replace(r, context=c) if c is not None else r for r, c in zip(tp.requests, contexts, strict=True))
    return replace(tp, messages=tuple(messages), requests=requests)


def _overflow_requests(path: Any, tp: TranscriptPath, version: str) -> tuple[TranscriptPath, tuple[Request, ...]]:
    """Rejected requests whose error states the provider's count: requests with a known A."""
    known = [o for o in tp.overflows if o.provider_tokens is not None]
    if not known:
        return tp, ()
    messages = list(tp.messages)
    contexts = _pi_contexts(path, tp, messages, [o.line for o in known], version)
    out = []
    for o, c in zip(known, contexts, strict=True):
        raw = messages[o.index].raw if o.index < len(messages) else None
        raw = raw if isinstance(raw, dict) else {}
        if c is None:
            continue
        out.append(Request(o.index, o.line, Usage(int(o.provider_tokens or 0), 0, 0, 0), c,
                           provider=_str(raw.get("provider")), model=_str(raw.get("model")),
                           timestamp=messages[o.index].timestamp, id=messages[o.index].id, stop_reason="error"))
    return replace(tp, messages=tuple(messages)), tuple(out)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None
