"""Mutating the values of real-shaped records: the odd values the attack of issue 27 found, and a
walk over every field of every line so the fuzzing can set any of them to any odd value."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import SAMPLES

#: The base sessions (one per agent, small: the fuzzing reads them thousands of times).
BASES = {
    "pi": SAMPLES / "pi0-tiny.jsonl",
    "pi1": SAMPLES / "pi1-branches.jsonl",
    "claude": SAMPLES / "claude-code" / "claude-manual.jsonl",
    "codex": SAMPLES / "codex" / "codex-pair-a.jsonl",
}

#: Values of the wrong type, magnitude or encoding (each well-formed JSON).
ODD_VALUES: list[Any] = [
    [1], {"a": []}, {"nested": True}, "x", "", 5, 0, -1, -1e9, 1e308, -1e308, 1e20, 2**63, -(2**63), 2**64,
    1.5, None, True, False, "\ud800", "a\udfffb", [], {}, 10**30,
    "__1e400__",  # written as the number 1e400 (infinite when read as a double)
]


def dumps(obj: Any) -> str:
    """A line as Node's JSON.stringify writes it (lone surrogates as \\u escapes; 1e400 stays a number)."""
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).replace('"__1e400__"', "1e400")


def field_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path of a JSON value (the first three items of a list)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from field_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield (*prefix, i)
            yield from field_paths(v, (*prefix, i))


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def mutated(lines: list[str], index: int, path: tuple[Any, ...], value: Any) -> list[str]:
    """`lines` with field `path` of line `index` set to `value`."""
    rec = json.loads(lines[index])
    set_path(rec, path, value)
    out = list(lines)
    out[index] = dumps(rec)
    return out


def first_line(lines: list[str], pred: Any) -> int:
    return next(i for i, line in enumerate(lines) if pred(json.loads(line)))


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(args: list[str]) -> tuple[int, str]:
    """`sessiontools ARGS` in this process: (exit code, stderr). Unexpected exceptions propagate (the
    caller turns off the per-file containment, so that a bug is seen, not hidden as exit 3)."""
    from sessiontools.cli import main

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


def commands(f: Path, tmp: Path) -> list[list[str]]:
    """Every command over `f` (machine formats; outputs under `tmp`)."""
    s = str(f)
    return [
        ["inspect", s, "--format", "json"],
        ["inspect", s, "--format", "table"],
        ["cut", s, "--format", "json"],
        ["replay", s, "--format", "json", "--jobs", "1", "--context-window", "3000", "--reserve", "500"],
        ["estimate-error", s, "--format", "json", "--no-cache", "--jobs", "1"],
        ["diff-summaries", s, "--format", "json"],
        ["export", s, "-o", str(tmp / "ds"), "--jobs", "1"],
    ]


def line_object(line: str) -> dict[str, Any]:
    """A line's JSON object; {} for a line that is not one (cut, garbage, another JSON value)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def one_line_per_kind(lines: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, record) of the first line of each kind of a Claude Code transcript after its first line:
    a kind is (type, subtype, message role, the message's content block types)."""
    kinds: set[Any] = set()
    for index in range(1, len(lines)):
        obj = json.loads(lines[index])
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        content = message.get("content")
        blocks = tuple(sorted({b.get("type") for b in content if isinstance(b, dict)})) if isinstance(content, list) else ()
        kind = (obj.get("type"), obj.get("subtype"), message.get("role"), blocks)
        if kind not in kinds:
            kinds.add(kind)
            yield index, obj
