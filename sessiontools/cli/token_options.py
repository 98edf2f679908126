"""Token counts as users write them on the command line: 16000, 16_000, 16k, 1.5m (one value or a
comma-separated list), and the Typer option type that parses them. Imported by the commands that take token counts."""

from __future__ import annotations

import math
from typing import Any

import typer

from sessiontools.errors import UsageError

__all__ = ["parse_percent_list", "parse_token_list", "parse_tokens", "tokens_option"]


_TOKEN_SUFFIX = {"k": 1_000, "m": 1_000_000}


def parse_tokens(value: str | int, option: str, *, minimum: int = 0) -> int:
    """A token count as users write it: 16000, 16_000, 16,000 is not allowed (lists), 16k, 1.5m."""
    if isinstance(value, int):
        n = value
    else:
        v = value.strip().lower().replace("_", "")
        mult = _TOKEN_SUFFIX.get(v[-1:], 1)
        num = v[:-1] if mult != 1 else v
        from sessiontools.read.values import number_text  # (lazily: `--help` reads no session)

        f = number_text(num, float)
        if f is None:
            raise UsageError(f"{option} takes a token count such as 16000 or 16k, got {value!r}")
        f *= mult
        if not math.isfinite(f) or f != int(f):  # (1e308m is past a double: infinite)
            raise UsageError(f"{option} takes a whole number of tokens, got {value!r}")
        n = int(f)
    if n < minimum:
        raise UsageError(f"{option} must be at least {minimum:,} tokens, got {value!r}")
    return n


def parse_token_list(value: str | None, option: str, *, minimum: int = 0) -> list[int] | None:
    """Comma-separated token counts (`8k,16384,32k`), each checked by `parse_tokens`."""
    if value is None:
        return None
    items = [v for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError(f"{option} takes comma-separated token counts, got {value!r}")
    return [parse_tokens(v, option, minimum=minimum) for v in items]


def parse_percent_list(value: str | None, option: str) -> list[float | None]:
    """Comma-separated percentages in (0, 100] (whole numbers stay ints); None: [None], the policy's default."""
    if value is None:
        return [None]
    from sessiontools.read.values import number_text

    out = [number_text(v, float) for v in value.split(",") if v.strip()]
    if None in out:
        raise UsageError(f"{option} takes comma-separated percentages, got {value!r}")
    if not out or any(not 0 < p <= 100 for p in out):
        raise UsageError(f"{option}: each value must be in (0, 100], got {value!r}")
    return [int(p) if p == int(p) else p for p in out]


def _token_value(value: str | int) -> int:
    try:
        return parse_tokens(value, "a token count")
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


def tokens_option(*names: str, help: str, minimum: int = 0) -> Any:
    """A Typer option for one token count that accepts 16000, 16_000 and 16k alike."""
    def parse(value: str | int) -> int:
        n = _token_value(value)
        if n < minimum:
            raise typer.BadParameter(f"must be at least {minimum:,} tokens, got {value!r}")
        return n

    return typer.Option(*names, help=help + " Tokens; 16k = 16000.", parser=parse, metavar="TOKENS")
