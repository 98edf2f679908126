"""Contexts of many requests along one Pi path, built incrementally (linear, not quadratic).

The one incremental builder over `build_context`: estimate-error and the neutral transcript both
use it, so that the rule for when a context must be rebuilt lives in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sessiontools.read.pi.entries import Entry
from sessiontools.transcript.pi.context import Context, Message, ProjectedEntry, build_context


def iter_request_contexts(
    entries: Sequence[Entry], indices: Iterable[int], pi_version: str
) -> Iterable[tuple[int, Context]]:
    """(i, context of `entries[:i]`) for each i in `indices` (see `iter_request_contexts_gen`)."""
    for j, ctx, _ in iter_request_contexts_gen(entries, indices, pi_version):
        yield j, ctx


def iter_request_contexts_gen(
    entries: Sequence[Entry], indices: Iterable[int], pi_version: str
) -> Iterable[tuple[int, Context, int]]:
    """(i, context of `entries[:i]`) for each i in `indices`: the messages, projected entries and
    compaction of `build_context(entries[:i])` (thinking level and model are not tracked).

    Built incrementally: each entry's messages are appended as it comes; at a compaction, a 1.x
    context edit, or an entry an earlier 1.x edit targets, the context is rebuilt from the path
    (`build_context`), since it then changes wholesale. Linear in the path, not quadratic.
    """
    wanted = sorted(set(indices))
    if not wanted:
        return
    messages: list[Message] = []
    projected: list[ProjectedEntry] = []
    compaction: Entry | None = None
    edit_targets: set[Any] = set()
    k = 0
    generation = 0  # bumped whenever the context is rebuilt instead of extended
    for j in range(wanted[-1] + 1):
        if j == wanted[k]:
            yield j, Context(pi_version, tuple(projected), tuple(messages), compaction), generation
            k += 1
            if k == len(wanted):
                return
        e = entries[j]
        if pi_version == "1" and e.type == "context_edit":
            edit_targets.add(e.data.get("targetId"))
        if e.type == "compaction" or (pi_version == "1" and (e.type == "context_edit" or (e.id is not None and e.id in edit_targets))):
            ctx = build_context(entries[: j + 1], pi_version)
            messages, projected, compaction = list(ctx.messages), list(ctx.entries), ctx.compaction
            generation += 1
        else:
            one = build_context((e,), pi_version)
            messages.extend(one.messages)
            projected.extend(one.entries)
