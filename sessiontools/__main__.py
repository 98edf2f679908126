"""`python -m sessiontools`."""

from .cli import run

run()
