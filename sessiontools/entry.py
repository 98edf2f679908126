"""The `sessiontools` console script and `python -m sessiontools`: a Ctrl-C is one line and exit 130
from the first import of the CLI on.

Importing the CLI takes a second or more under load, and the console script (unlike a module run by
`python -m`) imports it before any handler of ours runs: a Ctrl-C then was a KeyboardInterrupt
traceback through typer's or rich's imports. This module imports nothing but `sys` and the error types before it catches
KeyboardInterrupt (and orjson, whose import must not be interrupted: `import_orjson_whole`); once the CLI's `main` runs, it handles Ctrl-C itself (stopping workers first).
What comes before this module runs is the interpreter's own start-up (its `site` import: CPython's
"Fatal Python error: init_import_site" on a Ctrl-C there), out of reach of any package's code.
"""

import sys

from sessiontools.errors import EXIT_INTERRUPTED  # (a module of constants and classes: nothing to import)


def interrupted() -> int:
    """The one line of an interrupt; a second Ctrl-C meanwhile is ignored (the terminal sends one to
    the whole process group, and an impatient user presses twice)."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # (not the main thread)
        pass
    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or gone: the exit code says it
        pass
    forget_handled_interrupt()
    return EXIT_INTERRUPTED


def forget_handled_interrupt() -> None:
    """Make CPython forget a KeyboardInterrupt we handled, so that the exit code is ours (130).

    CPython remembers a KeyboardInterrupt that passed through a nested `PyRun_*` call (some C
    extensions run code that way while they import), even when it was caught later; under
    `python -m` the interpreter then kills itself with SIGINT at exit (exit status -2 after our
    "interrupted" line: 1 in about 30 interrupted `--executor dask` runs). The flag is private, but
    every `PyRun_*` call clears it when it starts: one run of empty code here. (The console script
    does not need it, since a script's SystemExit exits at once; nothing happens elsewhere than on
    CPython.)"""
    try:
        import ctypes

        run = ctypes.pythonapi.PyRun_StringFlags
    except (ImportError, AttributeError, OSError):
        return
    run.restype = ctypes.py_object
    run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_void_p]
    try:
        run(b"", 257, {}, {}, None)  # 257: Py_file_input
    except Exception:  # (nothing to run: cannot fail, but an exit path must not raise)
        pass


def import_orjson_whole() -> None:
    """Import orjson with SIGINT blocked. Its module init (orjson 3.13) imports `dataclasses` and `json`
    by running their Python code, and a KeyboardInterrupt raised in there kills the process with
    SIGSEGV instead of reaching our handler (1 in about 8 runs of `test_sigint_during_start_up_imports`
    once the command's imports reached orjson 0.1 s in). A Ctrl-C meanwhile stays pending and is
    delivered when the mask is restored: a KeyboardInterrupt here, in our code."""
    import signal

    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError, ValueError):  # (no POSIX signal masks: import it as it comes)
        import orjson  # noqa: F401
        return
    try:
        import orjson  # noqa: F401
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def run() -> None:
    """Run the CLI (`sessiontools.cli.main`) and exit with its code. The cyclic collector is off while
    the CLI is imported and what the imports built is frozen (`gc.freeze`): modules, classes and
    functions live until the process ends, and the ~70 collections that walked them again and again
    during the imports found nothing to free. So is everything at the end, before the exit's own
    collections (atexit handlers still run; an object kept alive only by a cycle is not finalised,
    which no file or worker of ours relies on: each is closed or stopped by the command itself)."""
    try:
        import gc

        gc.disable()
        import_orjson_whole()
        from sessiontools.cli import main
    except KeyboardInterrupt:
        sys.exit(interrupted())
    gc.freeze()
    gc.enable()
    code = main()
    gc.freeze()  # (the interpreter's exit would walk every object again in four collections: ~30M instructions)
    if code == EXIT_INTERRUPTED:  # (the CLI handled a Ctrl-C and printed its line)
        forget_handled_interrupt()
    sys.exit(code)
