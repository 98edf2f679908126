"""`python -m sessiontools` (the same entry as the `sessiontools` console script)."""

from sessiontools.entry import run

run()
