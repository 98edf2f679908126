"""Session tree: entries by id, children, leaves, paths; and the context Pi would send."""

from sessiontools.transcript.pi.context import Context, ProjectedEntry, build_context
from sessiontools.transcript.pi.tree import Path, SessionTree

__all__ = ["Context", "Path", "ProjectedEntry", "SessionTree", "build_context"]
