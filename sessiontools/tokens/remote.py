"""tiktoken counts from a helper process, which loads the vocabulary while this one does other work.

Building an o200k `tiktoken.Encoding` (parsing the ranks, making tiktoken's core) holds the GIL
for about half a second, and a cold estimate-error had nothing to overlap it with: it sat on the
one thread that also imports polars, reads the files and builds the contexts (issue 28). `start`
forks a helper for an encoding before any of that: the helper loads the vocabulary on the other
core, then counts every text it is sent (tiktoken threads, as `TiktokenCounter.count_texts`) and
sends the counts back. `TiktokenCounter` sends its misses here when a helper of its encoding was
started in this process (`get`); the counts are the same tokenizer's, so every figure is identical.

Nothing is shared but two pipes: a request is a pickle of the texts (any `str`, lone surrogates
included), an answer the counts as 32-bit integers. The helper is forked only from a process
running a single thread (a fork copies no other thread, nor a lock one of them holds), ignores
Ctrl-C (the terminal sends it to the group; this process handles it), never writes to stdout or
stderr, and exits when its request pipe closes (`stop`, or this process ending any way). A helper
that dies fails its pending counts with `HelperGone`, and the counter counts those texts itself.
"""

from __future__ import annotations

import os
import pickle
import struct
import threading
from collections.abc import Sequence
from concurrent.futures import Future

from sessiontools.read.pipes import read_exactly, write_all

#: Request and answer headers: (request id, payload bytes).
_HEADER = struct.Struct("<QQ")


class HelperGone(RuntimeError):
    """The helper process ended before it answered."""


class Helper:
    """A forked counting process for one encoding (see the module doc)."""

    def __init__(self, name: str) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper
            code = 1
            try:
                for fd in (req_w, res_r, *_PARENT_FDS):  # (another helper's copy would keep its pipe open)
                    _close(fd)
                code = _serve(name, req_r, res_w)
            finally:
                os._exit(code)  # no atexit handlers, no flush of the parent's stdio buffers
        os.close(req_r)
        os.close(res_w)
        _PARENT_FDS.update((req_w, res_r))
        self.name, self.pid, self.owner = name, pid, os.getpid()
        self._req, self._res = req_w, res_r
        self._lock = threading.Lock()
        self._pending: dict[int, Future[list[int]]] = {}
        self._outbox: list[tuple[int, bytes] | None] = []
        self._wake = threading.Condition(self._lock)
        self._next = 0
        self.gone = False
        self.max_rss_kb = 0  # the helper's peak RSS, known once it has been waited for
        self._threads = [threading.Thread(target=self._read, name="tokens-helper-read", daemon=True),
                         threading.Thread(target=self._write, name="tokens-helper-write", daemon=True)]

    def run(self) -> Helper:
        """Start the threads that write the requests and read the answers (after every fork)."""
        for t in self._threads:
            t.start()
        return self

    def submit(self, texts: Sequence[str]) -> Future[list[int]]:
        """The texts' token counts, in order, when the helper has counted them. The caller never
        waits here: requests are written by a thread of their own (the helper may still be loading)."""
        fut: Future[list[int]] = Future()
        payload = pickle.dumps(list(texts), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self.gone:
                fut.set_exception(HelperGone(f"the {self.name} helper has ended"))
                return fut
            rid = self._next
            self._next += 1
            self._pending[rid] = fut
            self._outbox.append((rid, payload))
            self._wake.notify()
        return fut

    def _write(self) -> None:
        while True:
            with self._lock:
                while not self._outbox:
                    self._wake.wait()
                item = self._outbox.pop(0)
            if item is None:
                break
            rid, payload = item
            try:
                write_all(self._req, _HEADER.pack(rid, len(payload)) + payload)
            except OSError:
                break
        _close(self._req)  # EOF: the helper exits

    def _read(self) -> None:
        try:
            while True:
                head = read_exactly(self._res, _HEADER.size)
                if head is None:
                    break
                rid, size = _HEADER.unpack(head)
                body = read_exactly(self._res, size)
                if body is None:
                    break
                with self._lock:
                    fut = self._pending.pop(rid, None)
                if fut is not None:
                    fut.set_result(list(memoryview(body).cast("I")))
        finally:
            self._fail_pending()

    def _fail_pending(self) -> None:
        with self._lock:
            self.gone = True
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut.set_exception(HelperGone(f"the {self.name} helper ended before it answered"))
        _close(self._res)

    def stop(self) -> None:
        """Close the request pipe (the helper exits when it has answered what it was sent) and
        wait for it."""
        with self._lock:
            self._outbox.append(None)
            self._wake.notify()
        try:
            _, _, usage = os.wait4(self.pid, 0)
            self.max_rss_kb = usage.ru_maxrss
        except ChildProcessError:
            pass


def _serve(name: str, req: int, res: int) -> int:
    """The helper's loop: load the vocabulary, then answer every request until EOF."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from sessiontools.tokens.tiktoken_counter import TiktokenCounter
    from sessiontools.tokens.vocab import get_encoding

    counter = TiktokenCounter(name, get_encoding(name))
    while True:
        head = read_exactly(req, _HEADER.size)
        if head is None:
            return 0
        rid, size = _HEADER.unpack(head)
        body = read_exactly(req, size)
        if body is None:
            return 0
        counts = counter.count_texts(pickle.loads(body))
        out = struct.pack(f"<{len(counts)}I", *counts)
        write_all(res, _HEADER.pack(rid, len(out)) + out)


def _close(fd: int) -> None:
    _PARENT_FDS.discard(fd)
    try:
        os.close(fd)
    except OSError:
        pass


_HELPERS: dict[str, Helper] = {}
#: The pipe ends this process holds for its helpers (a helper forked later closes its copies).
_PARENT_FDS: set[int] = set()


def start(*names: str) -> bool:
    """Fork a helper for each encoding of `names` (o200k_base, cl100k_base) not running yet, all
    before any of their threads starts; False when this process cannot fork safely (no fork, or
    other threads running)."""
    from sessiontools.read.workers import _threads

    todo = [n for n in dict.fromkeys(names) if get(n) is None]
    if not todo:
        return True
    if not hasattr(os, "fork") or _threads() != 1:
        return False
    helpers = [Helper(n) for n in todo]
    for h in helpers:
        _HELPERS[h.name] = h.run()
    return True


def get(name: str) -> Helper | None:
    """This process's running helper for `name` (a forked child never uses its parent's)."""
    helper = _HELPERS.get(name)
    if helper is None or helper.owner != os.getpid() or helper.gone:
        return None
    return helper


def stop_all() -> dict[str, int]:
    """Stop every helper this process started; their peak RSS (KB) by encoding."""
    out = {}
    for name, helper in list(_HELPERS.items()):
        if helper.owner == os.getpid():
            helper.stop()
            out[name] = helper.max_rss_kb
        del _HELPERS[name]
    return out

