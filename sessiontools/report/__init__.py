"""Renderables and exports: rich tables (never printed here), JSON, CSV/Parquet, figures."""

from .text import safe_text
from .writers import dumps_json

__all__ = ["dumps_json", "safe_text"]
