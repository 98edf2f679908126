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
    appended as it comes); at a compaction, a 1.x context edit, or an entry an earlier 1.x edit
    targets, the context is rebuilt from the path (`build_context`), since it then changes
    wholesale, and the generation is bumped. Linear in the path, not quadratic.
    """
    wanted = sorted(set(indices))
    if not wanted:
        return
    v1 = pi_version == "1"
    if pi_version not in ("0", "1"):
        raise ValueError(f"unknown Pi version {pi_version!r} (expected '0' or '1')")
    messages_of = entry_messages_v1 if v1 else entry_messages_v0
    projected: list[ProjectedEntry] = []
    compaction: Entry | None = None
    edit_targets: set[Any] = set()
    k = 0
    generation = 0  # bumped whenever the context is rebuilt instead of extended
    for j in range(wanted[-1] + 1):
        if j == wanted[k]:
            yield j, projected, compaction, generation
            k += 1
            if k == len(wanted):
                return
        e = entries[j]
        if v1 and e.type == "context_edit":
            edit_targets.add(e.data.get("targetId"))
        if e.type == "compaction" or (v1 and (e.type == "context_edit" or (e.id is not None and e.id in edit_targets))):
            ctx = build_context(entries[: j + 1], pi_version)
            projected, compaction = list(ctx.entries), ctx.compaction
            generation += 1
        else:
            # What `build_context((e,))` gives for an entry that is neither a compaction nor an edit.
            projected.append(ProjectedEntry(e, messages_of(e)))
