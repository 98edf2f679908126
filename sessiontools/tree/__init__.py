"""Session tree: entries by id, children, leaves, paths; and the context Pi would send."""

from .context import Context, ProjectedEntry, build_context
from .tree import Path, SessionTree

__all__ = ["Context", "Path", "ProjectedEntry", "SessionTree", "build_context"]
