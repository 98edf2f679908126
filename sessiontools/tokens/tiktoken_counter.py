"""tiktoken counts over exactly the text Pi's chars/4 counts.

A message's units (`tokens.units.message_units`: the strings behind `chars4.message_chars` and its
images) are counted: the sum of its units' token counts plus `IMAGE_TOKENS` per image; no
per-message framing is added, so the count is comparable with Pi's estimate, not with a provider's
wire format.

`TiktokenCounter` counts many messages at once: each message is keyed by a hash of its units, each
distinct key is tokenized once per encoding (cached), and misses are batched through tiktoken's
`encode_ordinary_batch`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontools.tokens.chars4 import ALL, CountRules
from sessiontools.tokens.units import IMAGE_TOKENS, MessageUnits, message_units

#: Texts shorter than this (characters) are counted at once, not in the background threads.
SHORT_TEXT = 512
#: Distinct short texts whose counts a counter keeps by text (tool names, "Continue", a path...
#: recur in many messages with different content keys): each is tokenized once per vocabulary.
SHORT_MEMO = 65536

#: Encodings this counter knows (loaded offline by `tokens.vocab.get_encoding`).
ENCODINGS = ("cl100k_base", "o200k_base")

#: Short estimator names used in output, by encoding.
SHORT_NAMES = {"cl100k_base": "cl100k", "o200k_base": "o200k"}

_POOLS: dict[int, Any] = {}
# A forked child inherits the pool objects but not their threads: give it fresh ones.
os.register_at_fork(after_in_child=_POOLS.clear)


def _pool(threads: int) -> Any:
    """A thread pool per size, created once per process."""
    pool = _POOLS.get(threads)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tiktoken")
    return pool


def token_counter(encoding: Any) -> Callable[[str], int]:
    """`len(encoding.encode_ordinary(text))` without building the list of token ids when tiktoken's
    core offers its buffer (the same encoder: no special tokens are allowed, so none is split out;
    text that UTF-8 cannot hold is repaired as `encode_ordinary` does). Building millions of Python
    ints holds the GIL, which the thread counting in the background would take from the main thread."""
    encode = encoding.encode_ordinary
    core = getattr(encoding, "_core_bpe", None)
    to_buffer = getattr(core, "encode_to_tiktoken_buffer", None)
    if to_buffer is None:
        return lambda text: len(encode(text))
    none: set[str] = set()

    def count(text: str) -> int:
        try:
            return memoryview(to_buffer(text, none)).nbytes >> 2
        except UnicodeEncodeError:
            return len(encode(text))

    return count


def _count_with(count: Callable[[str], int], texts: Sequence[str]) -> list[int]:
    return [count(t) for t in texts]


@dataclass(slots=True)
class _Batch:
    """Content keys being counted: their image tokens, whose key each text is, and the parts of
    the texts' counts (lists, or futures of lists), in text order."""

    counts: dict[bytes, int]
    owners: list[bytes]
    parts: list[Any]
    done: bool = False


class _RemotePart:
    """The counts of one `_Batch`'s texts from a helper process: `sent` (distinct) were sent, and
    `result()` gives one count per text of `order`; a helper that is gone is made up for here."""

    __slots__ = ("counter", "future", "sent", "order")

    def __init__(self, counter: TiktokenCounter, future: Any, sent: list[str], order: list[str]) -> None:
        self.counter, self.future, self.sent, self.order = counter, future, sent, order

    def done(self) -> bool:
        return bool(self.future.done())

    def result(self) -> list[int]:
        from sessiontools.tokens.remote import HelperGone

        try:
            got = self.future.result()
        except HelperGone:
            count = self.counter.count_function()
            got = [count(t) for t in self.sent]
        by_text = dict(zip(self.sent, got, strict=True))
        for t, n in by_text.items():
            if len(t) < SHORT_TEXT:
                self.counter._remember(t, n)
        return [by_text[t] for t in self.order]


@dataclass(slots=True)
class _Waiter:
    """What `submit_units` returns: call it to wait for the counts; `ready()` says whether that would block."""

    counter: TiktokenCounter
    batches: list[_Batch]

    def ready(self) -> bool:
        return all(b.done or all(isinstance(p, list) or p.done() for p in b.parts) for b in self.batches)

    def __call__(self) -> None:
        self.counter._finish(self.batches)


class TiktokenCounter:
    """tiktoken counts of messages for one encoding, cached by content key, batched on misses."""

    def __init__(self, encoding_name: str, encoding: Any | None = None, *, num_threads: int | None = None,
                 store: Any | None = None) -> None:
        from sessiontools.tokens.registry import TOKENIZERS, store_name

        if encoding_name not in ENCODINGS and encoding_name not in TOKENIZERS:
            known = ", ".join((*ENCODINGS, *TOKENIZERS))
            raise ValueError(f"unknown encoding {encoding_name!r} (expected one of {known})")
        self.name = encoding_name
        self.short_name = SHORT_NAMES.get(encoding_name, encoding_name)
        #: the store's key for these counts (a model tokenizer's carries its package version)
        self.store_name = store_name(encoding_name)
        self._encoding = encoding  # loaded on first use: a warm cache never needs the vocabulary
        self.num_threads = num_threads or max(1, min(8, os.cpu_count() or 1))
        self._cache: dict[bytes, int] = {}
        self._short: dict[str, int] = {}  # short texts' counts by text (at most SHORT_MEMO)
        self._pending: dict[bytes, _Batch] = {}  # content keys being counted in the background
        self._count: Callable[[str], int] | None = None
        self.texts_encoded = 0
        self.store = store  # a TokenStore shared across runs and processes, or None

    @property
    def encoding(self) -> Any:
        """The tiktoken encoding (cl100k/o200k only; a model tokenizer has `count_function`)."""
        if self._encoding is None:
            from sessiontools.tokens.vocab import get_encoding

            self._encoding = get_encoding(self.name)
        return self._encoding

    def count_function(self) -> Callable[[str], int]:
        """`text -> tokens` of this counter's tokenizer (loaded on first use)."""
        if self._count is None:
            if self._encoding is not None or self.name in ENCODINGS:
                self._count = token_counter(self.encoding)
            else:
                from sessiontools.tokens.registry import load

                self._count = load(self.name)
        return self._count

    def __len__(self) -> int:
        return len(self._cache)

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Token counts of strings (uncached), spread over `num_threads` threads in a few chunks.

        tiktoken's `encode_ordinary_batch` submits one task per text to a new thread pool on every
        call; for many short texts that overhead exceeds the encoding. Here each thread encodes a
        contiguous chunk (tiktoken releases the GIL while it encodes), on one pool kept per process.
        """
        if not texts:
            return []
        self.texts_encoded += len(texts)
        count = self.count_function()  # (tiktoken: the token buffer's size, no list of ids built)
        n = len(texts)
        if n == 1 or self.num_threads == 1 or sum(map(len, texts)) < 20_000:
            return [count(t) for t in texts]
        size = -(-n // self.num_threads)
        chunks = [texts[i: i + size] for i in range(0, n, size)]
        out: list[int] = []
        for part in _pool(self.num_threads).map(lambda chunk: [count(t) for t in chunk], chunks):
            out.extend(part)
        return out

    def count_units(self, items: Iterable[MessageUnits]) -> list[int]:
        """Token counts of many messages' units; each distinct content key is tokenized once."""
        items = list(items)
        self.submit_units(items)()
        return [self._cache[u.key] for u in items]

    def submit_units(self, items: Iterable[MessageUnits]) -> _Waiter:
        """Start counting the units of `items` not known yet (tiktoken threads, in the background: the
        caller goes on with other work) and return `wait()`; after it, `count_units(items)` answers
        from memory. Content keys are looked up in the store first, and a key being counted for an
        earlier call is not counted again (its batch is waited for)."""
        missing: dict[bytes, MessageUnits] = {}
        batches: dict[int, _Batch] = {}
        for u in items:
            if u.key in self._cache or u.key in missing:
                continue
            batch = self._pending.get(u.key)
            if batch is not None:
                batches[id(batch)] = batch
            else:
                missing[u.key] = u
        if missing and self.store is not None:
            known = self.store.get_many(self.store_name, list(missing))
            for key, n in known.items():
                self._cache[key] = n
                del missing[key]
        if missing:
            batch = self._start(missing)
            batches[id(batch)] = batch
        return _Waiter(self, list(batches.values()))

    def _start(self, missing: Mapping[bytes, MessageUnits]) -> _Batch:
        """Count the texts of `missing`: short texts here and now, long ones in the thread pool (a
        thread takes the GIL back after every text: short texts there would cost more in hand-overs
        than in counting). With a helper process of this encoding (`tokens.remote`), every text
        not known yet goes there instead, each distinct one once."""
        helper = self._helper()
        if helper is not None:
            return self._start_remote(missing, helper)
        count = self.count_function()
        counts = {k: IMAGE_TOKENS * u.images for k, u in missing.items()}
        flat: list[str] = []
        owners: list[bytes] = []
        short = self._short
        for key, u in missing.items():
            self.texts_encoded += len(u.texts)
            for t in u.texts:
                if len(t) < SHORT_TEXT:
                    n = short.get(t)
                    if n is None:
                        n = self._remember(t, count(t))
                    counts[key] += n
                else:
                    flat.append(t)
                    owners.append(key)
        parts: list[Any] = []
        if len(flat) <= 1 or self.num_threads == 1 or sum(map(len, flat)) < 20_000:
            parts.append([count(t) for t in flat])  # not worth a thread
        else:
            size = -(-len(flat) // self.num_threads)
            pool = _pool(self.num_threads)
            for i in range(0, len(flat), size):
                parts.append(pool.submit(_count_with, count, flat[i: i + size]))
        return self._register(missing, _Batch(counts, owners, parts))

    def _register(self, missing: Mapping[bytes, MessageUnits], batch: _Batch) -> _Batch:
        for key in missing:
            self._pending[key] = batch
        return batch

    def _remember(self, text: str, n: int) -> int:
        """`n` as the count of the short `text` from now on (while the memo has room)."""
        if len(self._short) < SHORT_MEMO:
            self._short[text] = n
        return n

    def _helper(self) -> Any:
        """The `tokens.remote` helper counting for this encoding in this process, if one was
        started (a counter given its own encoding object, or one already loaded here, counts itself)."""
        if self._encoding is not None or self._count is not None or self.name not in ENCODINGS:
            return None
        import sys

        remote = sys.modules.get("sessiontools.tokens.remote")  # (imported by whoever started one)
        return remote.get(self.name) if remote is not None else None

    def _start_remote(self, missing: Mapping[bytes, MessageUnits], helper: Any) -> _Batch:
        counts = {k: IMAGE_TOKENS * u.images for k, u in missing.items()}
        owners: list[bytes] = []
        order: list[str] = []
        short = self._short
        for key, u in missing.items():
            self.texts_encoded += len(u.texts)
            for t in u.texts:
                n = short.get(t)
                if n is None:
                    owners.append(key)
                    order.append(t)
                else:
                    counts[key] += n
        sent = list(dict.fromkeys(order))
        parts: list[Any] = [_RemotePart(self, helper.submit(sent), sent, order)] if sent else []
        return self._register(missing, _Batch(counts, owners, parts))

    def _finish(self, batches: Sequence[_Batch]) -> None:
        for batch in batches:
            if batch.done:
                continue
            counts = batch.counts
            owners = iter(batch.owners)
            for part in batch.parts:
                for n in part if isinstance(part, list) else part.result():
                    counts[next(owners)] += n
            batch.done = True
            self._cache.update(counts)
            for key in counts:
                self._pending.pop(key, None)
            if self.store is not None:
                self.store.put_many(self.store_name, counts)

    def count_messages(self, messages: Iterable[Mapping[str, Any]], rules: CountRules | str = ALL) -> list[int]:
        """Token counts of messages over the text units Pi counts under `rules` (see `message_units`)."""
        return self.count_units(message_units(m, rules) for m in messages)

    def count_message(self, message: Mapping[str, Any], rules: CountRules | str = ALL) -> int:
        """Token count of one message (see `count_messages`)."""
        return self.count_messages([message], rules)[0]
