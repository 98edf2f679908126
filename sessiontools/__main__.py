"""`python -m sessiontools`."""

try:
    # (importing the CLI takes a second or more under load: a Ctrl-C meanwhile is an interrupt like
    # any other, one line and exit 130, not a traceback of the import)
    from sessiontools.cli import run
except KeyboardInterrupt:
    import sys

    sys.stderr.write("interrupted\n")
    sys.exit(130)

run()
