"""Diagnostics: what a reader noticed about one place of an input file (any agent's reader)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class DiagnosticKind(StrEnum):
    """How a line was treated: dropped, read after a repair, read with a remark, or fatal to the file."""

    SKIPPED = "skipped"
    RECOVERED = "recovered"
    NOTICE = "notice"
    FATAL = "fatal"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Something about one place in an input file: a skipped line, a recovered line, or a notice."""

    path: str
    line: int
    reason: str
    kind: str = DiagnosticKind.NOTICE  # a DiagnosticKind (a str)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}
