"""Compatibility name of `sessiontools.analysis.estimate` (estimate-error lives there, in small modules)."""

from sessiontools.analysis.estimate import *  # noqa: F403
from sessiontools.analysis.estimate import __all__  # noqa: F401
