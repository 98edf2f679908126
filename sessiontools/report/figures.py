"""The one figure writer: every command saves its matplotlib figures through `save_figure`.

PNG or SVG, chosen by the file name's suffix; anything else is refused before any work is done
(`figure_format`, called when options are checked). Files depend only on the data: no dates,
versions or random SVG ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessiontools.errors import UsageError

FORMATS = ("png", "svg")


def figure_format(path: Path) -> str:
    """`png` or `svg` from the suffix of `path`; a UsageError naming the file for any other suffix."""
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise UsageError(f"{path}: the file name must end in .png or .svg")
    return fmt


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib Figure to `path` as PNG or SVG, reproducibly."""
    import matplotlib

    fmt = figure_format(path)
    kwargs: dict[str, Any] = (
        {"format": "svg", "metadata": {"Date": None, "Creator": None}} if fmt == "svg"
        else {"format": "png", "metadata": {"Software": None}, "dpi": 110}
    )
    from sessiontools.report.writers import atomic_path

    with matplotlib.rc_context({"svg.hashsalt": "sessiontools", "svg.fonttype": "none"}), atomic_path(path) as tmp:
        fig.savefig(tmp, **kwargs)
