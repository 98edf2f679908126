"""What estimate-error reads for one file: a neutral transcript plus what the agent's rules need.

`transcript_source(loaded, ...)` turns whatever a reader loaded into a `Source`. The one place
that knows about agents is `SOURCES` (how to turn a loaded file into a transcript); everything
after it reads `transcript.model` types only. A Codex or Claude Code reader adds an entry here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sessiontools.transcript.model import Agent, Message, Role, Transcript, TranscriptPath
from sessiontools.transcript.pi.neutral import message_units


@dataclass(slots=True)
class Source:
    """One file as estimate-error reads it."""

    transcript: Transcript
    #: per path: file lines after which the agent distrusts earlier usage (Pi 1.x: compactions, edits)
    resets: list[tuple[int, ...]] = field(default_factory=list)
    #: skipped replies by reason, each counted once over every path
    skipped: Counter[str] = field(default_factory=Counter)
    version: str | None = None  # the agent's rule version (Pi: "0" or "1")

    @property
    def agent(self) -> Agent:
        return self.transcript.agent


def _pi_source(session: Any, leaf: str | None, all_leaves: bool, pi_version: str | None) -> Source:
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
    resets = []
    for p in paths:
        kinds = ("compaction", "context_edit") if version == "1" else ("compaction",)
        resets.append(tuple(e.line for e in p.entries if e.type in kinds))
    skipped: Counter[str] = Counter()
    seen: set[int] = set()
    for tp in transcript.paths:
        for m in tp.messages:
            if m.role != Role.ASSISTANT or m.line in seen or not isinstance(m.raw, dict):
                continue
            seen.add(m.line)
            reason = skip_reason(m.raw, version)
            if reason is not None:
                skipped[reason] += 1
    return Source(transcript, resets, skipped, version)


def _with_edits(path: Any, tp: TranscriptPath) -> TranscriptPath:
    """Pi 1.x: a context edit that replaces a message's content changes what later requests sent,
    while the neutral path keeps the original message. Give those requests the edited messages
    (appended to the path's messages, same line and id) so that every count stays Pi-exact."""
    from sessiontools.transcript.pi.incremental import iter_request_contexts_gen

    if not any(e.type == "context_edit" and isinstance(e.data.get("replacement"), dict) for e in path.entries):
        return tp
    by_line = {e.line: k for k, e in enumerate(path.entries)}
    messages = list(tp.messages)
    requests = []
    contexts = iter_request_contexts_gen(path.entries, [by_line[r.line] for r in tp.requests], "1")
    for r, (_, ctx, _) in zip(tp.requests, contexts, strict=True):
        idx = list(r.context_indices())
        if len(idx) != len(ctx.messages):  # not the shape we expect: keep the neutral context
            requests.append(r)
            continue
        new = []
        for i, raw in zip(idx, ctx.messages, strict=True):
            old = messages[i]
            if old.raw is raw:
                new.append(i)
                continue
            new.append(len(messages))
            messages.append(Message(len(messages), old.id, old.line, old.role, message_units(raw), old.timestamp, raw))
        requests.append(replace(r, context=_ranges(new)))
    return replace(tp, messages=tuple(messages), requests=tuple(requests))


def _ranges(indices: list[int]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return tuple(out)


def _is_pi_session(loaded: Any) -> bool:
    from sessiontools.read.pi.entries import Session

    return isinstance(loaded, Session)


#: (recognise a loaded file, make its Source). A new agent's reader adds one entry.
SOURCES: list[tuple[Callable[[Any], bool], Callable[[Any, str | None, bool, str | None], Source]]] = [
    (_is_pi_session, _pi_source),
]


def transcript_source(loaded: Any, *, leaf: str | None = None, all_leaves: bool = False,
                      version: str | None = None) -> Source:
    """The Source of one loaded file (a Pi `Session`, or a `Transcript` of any agent)."""
    if isinstance(loaded, Transcript):
        resets = [tuple(c.line for c in p.compactions) for p in loaded.paths]
        skipped: Counter[str] = Counter()
        for p in loaded.paths:
            skipped.update(p.skipped)
        return Source(loaded, resets, skipped, version)
    for recognise, make in SOURCES:
        if recognise(loaded):
            return make(loaded, leaf, all_leaves, version)
    raise TypeError(f"estimate-error cannot read a {type(loaded).__name__}")
