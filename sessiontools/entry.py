"""The `sessiontools` console script and `python -m sessiontools`: a Ctrl-C is one line and exit 130
from the first import of the CLI on.

Importing the CLI takes a second or more under load, and the console script (unlike a module run by
`python -m`) imports it before any handler of ours runs: a Ctrl-C then was a KeyboardInterrupt
traceback through typer's or rich's imports. This module imports nothing but `sys` and the error types before it catches
KeyboardInterrupt; once the CLI's `main` runs, it handles Ctrl-C itself (stopping workers first).
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
    return EXIT_INTERRUPTED


def run() -> None:
    """Run the CLI (`sessiontools.cli.main`) and exit with its code."""
    try:
        from sessiontools.cli import main
    except KeyboardInterrupt:
        sys.exit(interrupted())
    sys.exit(main())
