"""The worker processes' start and stop: fork or a forkserver, Ctrl-C in each kind of process, the
garbage collector's view of the heap they start with (`read/parallel.py` runs the files over them;
`read/executors.py` the Dask workers).

The forkserver imports this module among its preloads: it then installs its excepthook and ignores
Ctrl-C (`_install_forkserver_hook`, run at import).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # multiprocessing and concurrent.futures are imported by the runs that use them
    from concurrent.futures import ProcessPoolExecutor


def _preload(fn: Callable[..., Any]) -> list[str]:
    """Modules for a forkserver to import once, so that workers forked from it start with them: this
    one (its import installs the forkserver's hook), `fn`'s (a partial's function's) and every
    sessiontools module this process has loaded (`read.parallel`, whose `_many` the workers run, among them).

    The last matter because each forkserver child re-runs the main module (CPython 3.11 ignores
    `__main__` in the preload list): for the CLI's script that is importing `sessiontools.cli`, a
    no-op once the forkserver has it, half a second per worker otherwise."""
    import sys

    target = getattr(fn, "func", fn)
    package = __name__.partition(".")[0]
    loaded = {m for m in list(sys.modules) if m == package or m.startswith(package + ".")}
    return sorted({__name__, getattr(target, "__module__", None) or __name__} | loaded)


def _start_method() -> str:
    """fork when this process runs a single thread: workers start at once with the package already
    imported. With other threads (a progress bar's refresher, a tokenizer's or polars' native pool)
    a forked child could inherit a lock held by one of them, so workers come from a forkserver."""
    if hasattr(os, "fork") and _threads() == 1:  # (multiprocessing's "fork"; its import is not needed to know)
        return "fork"
    return "forkserver"


def _threads() -> int:
    """Threads of this process, native ones included (Linux: /proc/self/task); 0 when unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


_FROZEN = [0]  # frozen_heap()s running in this process (threads: a Dask worker's batches)
_FROZEN_LOCK = threading.Lock()


@contextmanager
def frozen_heap(freeze: bool = True) -> Iterator[None]:
    """The objects this process holds when it starts frozen (`gc.freeze`) until it ends: the
    collector's full passes skip them. They are the imported modules (and on a Dask worker,
    distributed's state): walked again at every full pass while a file's objects pile up, and in a
    forked worker each walk copied the pages it touched (copy-on-write). `--jobs 2` took 0.2-0.45 s
    more CPU than `--jobs 1` over the 300 MB corpus (issue 28). Nested or concurrent uses unfreeze
    when the last ends; what was garbage before is collected after."""
    if not freeze:
        yield
        return
    import gc

    with _FROZEN_LOCK:
        _FROZEN[0] += 1
        if _FROZEN[0] == 1:
            gc.freeze()
    try:
        yield
    finally:
        with _FROZEN_LOCK:
            _FROZEN[0] -= 1
            if _FROZEN[0] == 0:
                gc.unfreeze()


def start_forkserver_ignoring_sigint() -> None:
    """Start the forkserver (if it is not running) with SIGINT blocked, which it inherits: CPython's
    forkserver ignores Ctrl-C only once its preload imports are done, and a Ctrl-C that reached it
    during them printed a KeyboardInterrupt traceback (seen under load). This module, imported among
    the preloads, makes the forkserver ignore SIGINT and unblocks it (`_install_forkserver_hook`).

    Blocked, not ignored, in this process while the server is spawned: a Ctrl-C meanwhile stays
    pending and is this process's KeyboardInterrupt as soon as the server is started. (Ignoring it
    lost it: the command then ran to its end and exited 0, seen under load.) The resource tracker is
    started first, since its own start unblocks SIGINT (it blocks the signal for its child too)."""
    import signal
    from multiprocessing import forkserver, resource_tracker

    if not hasattr(signal, "pthread_sigmask"):
        forkserver.ensure_running()
        return
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _quiet_spawn_after_shutdown(previous: Any) -> Any:
    """A `sys.excepthook` for the forkserver (its children inherit it): a worker (a pool's, or a Dask
    nanny's) being spawned while the parent, interrupted, exits fails before any task runs, and
    CPython's forkserver prints that traceback to the terminal after our one "interrupted" line.
    Two such cases are silent: the parent has already removed the semaphores the child unpickles
    (`SemLock._rebuild` in multiprocessing/synchronize.py: FileNotFoundError), or it was gone before
    it sent the child its data (`spawn._main` reading it: EOFError). Every other error is reported by
    the previous hook as before."""
    silent = {FileNotFoundError: os.path.join("multiprocessing", "synchronize.py"),
              EOFError: os.path.join("multiprocessing", "spawn.py")}

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        last = tb
        while last is not None and last.tb_next is not None:
            last = last.tb_next
        where = last.tb_frame.f_code.co_filename if last is not None else ""
        if any(issubclass(kind, k) and where.endswith(f) for k, f in silent.items()):
            return
        previous(kind, exc, tb)

    return hook


def _in_forkserver() -> bool:
    """Whether this process is CPython's forkserver, importing its preload modules (`main` running)."""
    import sys

    fs = sys.modules.get("multiprocessing.forkserver")
    if fs is None:
        return False
    import multiprocessing

    return sys.argv[:1] == ["-c"] and multiprocessing.current_process().name == "MainProcess" \
        and getattr(fs, "_forkserver", None) is not None and fs._forkserver._forkserver_pid is None


def _install_forkserver_hook() -> None:
    """In the forkserver only: the excepthook above, and Ctrl-C ignored from here on (as CPython's
    forkserver does once its preloads are imported; its children inherit it) instead of blocked (see
    `start_forkserver_ignoring_sigint`), so that no process it forks inherits a blocked SIGINT."""
    import signal
    import sys

    if _in_forkserver():
        sys.excepthook = _quiet_spawn_after_shutdown(sys.excepthook)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker_ignores_sigint() -> None:
    """Ctrl-C reaches the whole process group: the parent alone handles it (one line, exit 130) and
    stops the workers; a worker that handled it too would print a KeyboardInterrupt traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the worker processes (their work is thrown away)."""
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, ValueError):
            pass
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.join(timeout=5)


_install_forkserver_hook()  # in the forkserver only: it imports this module as a preload
