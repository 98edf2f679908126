"""Files worked on in order while the background work of earlier ones runs.

estimate-error counts a file's tokens in tiktoken threads, which release the GIL; meanwhile this
thread can read and measure the next files. `in_order` takes items as they are started (a job
whose background work is under way, or None when there is none) and finishes them in order, each as
soon as its work is ready, or when more than `lookahead` wait. The library's `estimate_error` and
the CLI (`parallel.map_sessions` in one process) share it.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

#: Items started ahead of the oldest unfinished one (a few large files dominate a corpus: one file
#: of look-ahead hides little of their counting).
LOOKAHEAD = 6
#: The interpreter's switch interval (s) while a pipeline runs: the counting threads need the GIL for
#: a moment after each text, and at the default 5 ms each text would wait that long for this thread,
#: so the counting would hardly overlap anything.
SWITCH_INTERVAL = 0.0005

X = TypeVar("X")
R = TypeVar("R")


class Started(Protocol):
    def ready(self) -> bool:
        """Whether finishing now would not wait for background work."""


def in_order(started: Iterable[tuple[X, Started | None]], finish: Callable[[X, Started | None], R],
             lookahead: int = LOOKAHEAD) -> Iterator[R]:
    """`finish(item, job)` of every started item, in order: the oldest as soon as its job is ready
    (or has none), or when more than `lookahead` items wait. `started` is consumed lazily, so each
    item is started only when the ones before it have been started."""
    queue: deque[tuple[X, Started | None]] = deque()
    for item in started:
        queue.append(item)
        while queue and (len(queue) > lookahead or queue[0][1] is None or queue[0][1].ready()):
            yield finish(*queue.popleft())
    while queue:
        yield finish(*queue.popleft())


@contextmanager
def short_switch_interval() -> Iterator[None]:
    """The switch interval lowered to SWITCH_INTERVAL (never raised), restored on exit."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
