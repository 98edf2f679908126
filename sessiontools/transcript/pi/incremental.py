"""Contexts of many requests along one Pi path, built incrementally (linear, not quadratic).

The one incremental builder over `build_context`: estimate-error, the neutral transcript and the
replay's truth fit all use it, so that the rule for when a context must be rebuilt lives in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.pi.context import (
    Context,
    Message,
    ProjectedEntry,
    build_context,
    entry_messages_v0,
    entry_messages_v1,
)


def iter_request_contexts_gen(
    entries: Sequence[Entry], indices: Iterable[int], pi_version: str
) -> Iterable[tuple[int, Context, int]]:
    """(i, context of `entries[:i]`, generation) for each i in `indices`: the messages, projected
    entries and compaction of `build_context(entries[:i])` (thinking level and model are not tracked).
    The generation changes whenever the context was rebuilt rather than extended (see
    `iter_request_projections`)."""
    messages: list[Message] = []
    counted = 0  # projected entries whose messages are in `messages`
    last_gen = None
    for j, projected, compaction, gen in iter_request_projections(entries, indices, pi_version):
        if gen != last_gen:
            messages, counted, last_gen = [], 0, gen
        for pe in projected[counted:]:
            messages.extend(pe.messages)
        counted = len(projected)
        yield j, Context(pi_version, tuple(projected), tuple(messages), compaction), gen


def iter_request_projections(
    entries: Sequence[Entry], indices: Iterable[int], pi_version: str
) -> Iterable[tuple[int, list[ProjectedEntry], Entry | None, int]]:
    """(i, projected entries of `build_context(entries[:i])`, its compaction, generation) for each i
    in `indices`, without copying: the list is the builder's own, valid until the next step (read
    it, do not keep or change it). Within one generation it only grows (each entry's projection is
    appended as it comes, see `iter_request_generations`). Linear in the path, not quadratic.
    """
    messages_of = entry_messages_v1 if pi_version == "1" else entry_messages_v0
    projected: list[ProjectedEntry] = []
    done = 0  # entries[:done] are in `projected`
    last_gen = None
    for j, base, start, compaction, gen in iter_request_generations(entries, indices, pi_version):
        if gen != last_gen:
            projected, done, last_gen = list(base), start, gen
        projected.extend([ProjectedEntry(e, messages_of(e)) for e in entries[done:j]])
        done = j
        yield j, projected, compaction, gen


def iter_request_generations(
    entries: Sequence[Entry], indices: Iterable[int], pi_version: str
) -> Iterable[tuple[int, tuple[ProjectedEntry, ...], int, Entry | None, int]]:
    """(i, base, start, compaction, generation) for each i in `indices`: the projected entries of
    `build_context(entries[:i])` are `base` followed by each of `entries[start:i]` with its own
    messages (`entry_messages_v0`/`entry_messages_v1` of it), and `compaction` is its compaction.
    `base` is what the generation's last rebuild gave (`build_context(entries[:start])`; generation
    0: nothing, start 0). The context is rebuilt, and the generation bumped, at a compaction, a 1.x
    context edit, or an entry an earlier 1.x edit targets, since it then changes wholesale; between
    two rebuilds it only grows, by each entry's own messages. The one rule for when a context must be
    rebuilt: a reader that only needs where the context's messages are (the neutral transcript's
    request ranges) reads `base` once per generation and `entries[start:i]` as one run, instead of
    a projected entry per entry.
    """
    wanted = sorted(set(indices))
    if not wanted:
        return
    v1 = pi_version == "1"
    if pi_version not in ("0", "1"):
        raise ValueError(f"unknown Pi version {pi_version!r} (expected '0' or '1')")
    base: tuple[ProjectedEntry, ...] = ()
    start = 0
    compaction: Entry | None = None
    edit_targets: set[Any] = set()
    k = 0
    generation = 0  # bumped whenever the context is rebuilt instead of extended
    for j in range(wanted[-1] + 1):
        if j == wanted[k]:
            yield j, base, start, compaction, generation
            k += 1
            if k == len(wanted):
                return
        e = entries[j]
        if v1 and e.type == "context_edit":
            edit_targets.add(e.data.get("targetId"))
        if e.type == "compaction" or (v1 and (e.type == "context_edit" or (e.id is not None and e.id in edit_targets))):
            ctx = build_context(entries[: j + 1], pi_version)
            base, start, compaction = ctx.entries, j + 1, ctx.compaction
            generation += 1
