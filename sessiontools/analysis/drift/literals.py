"""Literals of a summary: file paths, identifiers in backticks, numbers, quoted strings, errors.

The regular expressions live here and nowhere else; `contains` is the one whole-literal test.
"""

from __future__ import annotations

import re

_EXT = (
    r"(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|mdx|toml|ya?ml|txt|rs|go|java|kt|c|h|cc|cpp|hpp|cs|sh|"
    r"bash|zsh|css|scss|html?|sql|csv|tsv|lock|cfg|ini|conf|rb|php|swift|vue|svelte|xml|env|log|ipynb|lua|"
    r"dart|scala|exs?|proto|gradle|mk)"
)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]{3,200})"|\u201c([^\u201d\n]{3,200})\u201d')
_ERROR = re.compile(
    r"(?:\b[A-Z][A-Za-z]*(?:Error|Exception)\b"
    r"|\b(?:ENOENT|EACCES|EPERM|EEXIST|EISDIR|ENOTDIR|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EADDRINUSE|EPIPE)\b"
    r"|\b(?:[Ee]rror|ERROR|[Ff]ailed|FAILED)\b(?=:))(?::[ \t]*[^\n]+)?"
)
PATH_PATTERN = re.compile(
    rf"(?<![\w@.+/~-])(?:(?:~|\.{{1,2}})?/[\w@.+-]+(?:/[\w@.+-]+)*/?|[\w@.+-]+(?:/[\w@.+-]+)+/?"
    rf"|[\w@+-][\w@.+-]*\.{_EXT})(?![\w/])"
)
_NUMBER = re.compile(r"(?<![\w.#/-])(?:v?\d+(?:\.\d+){2,}|#?\d[\d,]*(?:\.\d+)?%?)(?![\w])")


def _looks_like_path(s: str) -> bool:
    m = PATH_PATTERN.fullmatch(s)
    return bool(m) and is_path(s)


def is_path(s: str) -> bool:
    if s.startswith(("/", "~/", "./", "../")):
        return len(s) > 1
    if re.fullmatch(rf"[\w@+-][\w@.+-]*\.{_EXT}", s):
        return True
    if re.fullmatch(r"[\d/.-]+", s):  # 1/2, 2025/01/02
        return False
    parts = s.rstrip("/").split("/")
    return len(parts) >= 3 or "." in parts[-1]


def extract_literals(text: str, *, min_digits: int = 2) -> dict[str, str]:
    """Literals of a text, value -> kind, in order of first occurrence.

    Kinds: `path` (file paths, in backticks or not), `code` (other backtick spans), `quoted`
    (double-quoted strings), `error` (`SomethingError: ...`, `ENOENT ...`, `Error: ...`) and
    `number` (numbers with at least `min_digits` digits, versions like `v0.27.3`, `#288`, `30%`).
    """
    out: dict[str, str] = {}
    for value, kind in scan_literals(text, min_digits):
        out.setdefault(value, kind)
    return out


def scan_literals(text: str, min_digits: int) -> list[tuple[str, str]]:
    """Every literal occurrence of a text as (value, kind), in the order of `extract_literals`."""
    out: list[tuple[str, str]] = []

    def add(value: str, kind: str) -> None:
        value = value.strip()
        if len(value) >= 2 or (kind == "number" and value):
            out.append((value, kind))

    def blank(m: re.Match[str]) -> str:
        return " " * (m.end() - m.start())

    for m in _BACKTICK.finditer(text):
        v = m.group(1).strip()
        add(v, "path" if _looks_like_path(v) else "code")
    rest = _BACKTICK.sub(blank, text)
    for m in _QUOTED.finditer(rest):
        add(m.group(1) or m.group(2) or "", "quoted")
    rest = _QUOTED.sub(blank, rest)
    for m in _ERROR.finditer(rest):
        add(m.group(0)[:160].rstrip(" .,;"), "error")
    rest = _ERROR.sub(blank, rest)
    for m in PATH_PATTERN.finditer(rest):
        v = m.group(0).rstrip(".,:;")
        if is_path(v):
            add(v, "path")
            rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end():]
    for m in _NUMBER.finditer(rest):
        v = m.group(0).rstrip(",")
        digits = sum(c.isdigit() for c in v)
        if digits >= min_digits or v.count(".") >= 2:
            add(v, "number")
    return out


_CONTAINS_CACHE: dict[str, re.Pattern[str]] = {}


def contains(text: str, value: str) -> bool:
    """True when `value` occurs in `text` as a whole literal (not as part of a longer word or number)."""
    if value not in text:
        return False
    pat = _CONTAINS_CACHE.get(value)
    if pat is None:
        pat = re.compile(r"(?<![\w.-])" + re.escape(value) + r"(?![\w/-]|\.\w)")
        if len(_CONTAINS_CACHE) < 100_000:
            _CONTAINS_CACHE[value] = pat
    return pat.search(text) is not None

