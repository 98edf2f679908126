"""Renderables and exports: rich tables (never printed here), JSON, CSV/Parquet, figures."""

from sessiontools.report.text import safe_text
from sessiontools.report.writers import dumps_json

__all__ = ["dumps_json", "safe_text"]
