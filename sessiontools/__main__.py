"""`python -m sessiontools`."""

from sessiontools.cli import run

run()
