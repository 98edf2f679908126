"""Session tree: entries by id, children, leaves, paths; and the context Pi would send.

The names are loaded on first use (PEP 562): Pi's `inspect` reaches `transcript.pi.tree` through
this package and needs no context builder (its dataclasses and `jsvalues` are ~7M instructions of
a small `inspect`'s start-up, issue 28)."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiontools.transcript.pi.context import Context, ProjectedEntry, build_context
    from sessiontools.transcript.pi.tree import Path, SessionTree

__all__ = ["Context", "Path", "ProjectedEntry", "SessionTree", "build_context"]
_HOMES = {"Context": "context", "ProjectedEntry": "context", "build_context": "context", "Path": "tree",
          "SessionTree": "tree"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
