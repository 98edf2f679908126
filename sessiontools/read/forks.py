"""`--jobs` workers forked directly (`os.fork` and two pipes each), for `read.parallel` when this
process may fork (one thread) and the function reads selectively (`inspect`).

`concurrent.futures.ProcessPoolExecutor` cost such a run its imports (multiprocessing, logging, socket,
tempfile, random: 0.025-0.04 s of CPU, a twentieth of `inspect` over the 100 MB Codex bench corpus), two
threads, semaphores and a pickled call per task. A forked worker already holds the batches and the
function: a task is the index of a batch (4 bytes), and only its results are pickled back. The workers
take batches from the front (largest first); the parent, one of the `--jobs` processes, takes them
from the back while a result it is to yield next is not in (`ForkPool.take`).

A worker ignores Ctrl-C (the parent alone handles it and stops them); it exits when its task pipe is
closed (the parent done, or gone). An exception in a worker is raised in the parent (its traceback as
the cause); a worker that dies is an error naming its exit status.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import deque
from collections.abc import Callable
from typing import Any

from sessiontools.read.pipes import read_exactly, write_all

_TASK = 4  # bytes of a task: a batch index (little-endian, unsigned)
_SIZE = 8  # bytes of a result's length
#: Tasks each worker holds (one at work, one waiting), so that it never waits for the parent,
#: busy with a batch of its own, to hand it the next.
AHEAD = 2


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (the cause of the one raised here)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _serve(tasks: int, results: int, run: Callable[[int], Any]) -> None:
    """A worker's loop: `run(batch)` for each task read, its results (or its exception) written back."""
    while True:
        data = read_exactly(tasks, _TASK)
        if data is None:  # the parent closed the task pipe (done, or gone)
            return
        try:
            payload = _dumps((True, run(int.from_bytes(data, "little"))))
        except BaseException as exc:  # (sent to the parent, which raises it)
            payload = _failure(exc)
        write_all(results, len(payload).to_bytes(_SIZE, "little") + payload)


def _failure(exc: BaseException) -> bytes:
    import traceback

    text = "".join(traceback.format_exception(exc))
    try:
        return _dumps((False, (exc, text)))
    except Exception:  # an exception that does not pickle: its text
        return _dumps((False, (RuntimeError(f"{type(exc).__name__}: {exc}"), text)))


def _dumps(obj: Any) -> bytes:
    return _pickle().dumps(obj, protocol=5)


def _pickle() -> Any:
    """The pickler: CPython's C module itself where there is one (the `pickle` module around it costs
    its import, a few ms of a run's CPU, for nothing used here)."""
    try:
        import _pickle as module
    except ImportError:  # pragma: no cover (not CPython)
        import pickle as module
    return module


class ForkPool:
    """`workers` forked processes running `run(batch)` for batches `0..batches-1`, handed out in order;
    `take()` gives this process the last batch none has been handed. Use as a context manager: on
    exit the workers are stopped (terminated when it exits by an exception)."""

    def __init__(self, workers: int, batches: int, run: Callable[[int], Any]) -> None:
        self.pending = deque(range(batches))
        self._run = run
        self._procs: dict[int, tuple[int, int]] = {}  # result fd -> (pid, task fd)
        self._done: dict[int, Any] = {}  # batch -> its results, from a worker
        self._out: dict[int, deque[int]] = {}  # result fd -> the batches it was handed, in order
        for stream in (sys.stdout, sys.stderr):  # (a forked worker must not write their buffers again)
            try:
                stream.flush()
            except (AttributeError, ValueError, OSError):
                pass
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # (a Ctrl-C now: ours, after)
        try:
            try:
                for _ in range(workers):
                    self._fork()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # (a Ctrl-C meanwhile is raised here)
            for fd in list(self._procs):
                for _ in range(AHEAD):
                    self._hand(fd)
        except BaseException:
            self.stop(kill=True)
            raise

    def _fork(self) -> None:
        task_r, task_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                for fd in (task_w, res_r, *(f for r, (_, t) in self._procs.items() for f in (r, t))):
                    os.close(fd)
                _serve(task_r, res_w, self._run)
            except BaseException:
                code = 70
            finally:
                os._exit(code)
        os.close(task_r)
        os.close(res_w)
        self._procs[res_r] = (pid, task_w)
        self._out[res_r] = deque()

    def _hand(self, fd: int) -> None:
        if not self.pending:
            return
        batch = self.pending.popleft()
        self._out[fd].append(batch)
        try:
            write_all(self._procs[fd][1], batch.to_bytes(_TASK, "little"))
        except OSError:  # the worker is gone: its result pipe's end says so (`_receive`), never a broken pipe
            pass

    def take(self) -> int | None:
        """The last batch not handed to a worker (this process does it), or None."""
        return self.pending.pop() if self.pending else None

    def ready(self, batch: int, wait: bool) -> Any:
        """The results of `batch` if a worker has sent them, else None (`wait`: until it has); what
        the workers have sent meanwhile is taken in, each handed its next batch."""
        import select

        while batch not in self._done:
            if not self._procs:
                raise RuntimeError(f"no --jobs worker holds batch {batch}")
            fds, _, _ = select.select(list(self._procs), [], [], None if wait else 0)
            if not fds:
                return None
            for fd in fds:
                self._receive(fd)
        return self._done.pop(batch)

    def _receive(self, fd: int) -> None:
        head = read_exactly(fd, _SIZE)
        body = read_exactly(fd, int.from_bytes(head, "little")) if head is not None else None
        if body is None:
            pid = self._procs[fd][0]
            _, status = os.waitpid(pid, 0)
            del self._procs[fd]
            raise RuntimeError(f"a --jobs worker process ended unexpectedly (exit status "
                               f"{os.waitstatus_to_exitcode(status)}) while reading files")
        ok, value = _pickle().loads(body)
        if not ok:
            exc, text = value
            raise exc from RemoteTraceback(text)
        self._done[self._out[fd].popleft()] = value
        self._hand(fd)

    def stop(self, kill: bool = False) -> None:
        """Close the task pipes (each worker exits) and wait for the workers; `kill`: terminate them first."""
        for res_r, (pid, task_w) in list(self._procs.items()):
            if kill:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for fd in (task_w, res_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
        for pid, _ in list(self._procs.values()):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self._procs.clear()

    def __enter__(self) -> ForkPool:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.stop(kill=kind is not None)

