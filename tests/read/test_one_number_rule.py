"""One rule for reading a number the package was given (`read.values`: `number`, `integer`, `real`,
`finite`, `number_text`): no module outside it coerces an untrusted value by catching what `int()`
or `float()` raises, which is how the local `_int`/`_number` copies that disagreed on NaN, infinity
and bools were written."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sessiontools.read.values import finite, number_text

PACKAGE = Path(__file__).resolve().parents[2] / "sessiontools"
HOME = PACKAGE / "read" / "values.py"
_RAISED = {"ValueError", "TypeError", "OverflowError"}


def _caught(handler: ast.ExceptHandler) -> set[str]:
    t = handler.type
    names = t.elts if isinstance(t, ast.Tuple) else [t] if t is not None else []
    return {n.id for n in names if isinstance(n, ast.Name)}


def coercions(tree: ast.AST) -> list[int]:
    """Lines of `try:` blocks that call `int(...)`/`float(...)` and catch what they raise."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not any(_caught(h) & _RAISED for h in node.handlers):
            continue
        calls = [c for stmt in node.body for c in ast.walk(stmt)
                 if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in ("int", "float")]
        if calls:
            out.append(node.lineno)
    return out


def test_the_scan_finds_a_local_coercion() -> None:
    src = "def _int(t):\n    try:\n        return int(t)\n    except ValueError:\n        return 0\n"
    assert coercions(ast.parse(src)) == [2]
    assert coercions(ast.parse("try:\n    x = f(t)\nexcept ValueError:\n    x = 0\n")) == []


def test_no_module_coerces_numbers_its_own_way() -> None:
    found = [f"{p.relative_to(PACKAGE.parent)}:{line}" for p in sorted(PACKAGE.rglob("*.py")) if p != HOME
             for line in coercions(ast.parse(p.read_text(encoding="utf-8")))]
    assert found == [], f"use sessiontools.read.values (number_text, integer, finite...) instead: {found}"


@pytest.mark.parametrize(("text", "kind", "want"), [
    ("12", int, 12), (" 12 ", int, 12), ("1_000", int, 1000), ("2.5", float, 2.5), ("-3", int, -3),
    (None, int, None), ("", int, None), ("x", float, None), ("2.5", int, None), ("²", int, None),
    ("nan", float, None), ("inf", float, None), ("1e400", float, None), ("9" * 5000, int, None),
])
def test_number_text(text: str | None, kind: type, want: object) -> None:
    assert number_text(text, kind) == want
    assert number_text(text, kind, "d") == ("d" if want is None else want)


@pytest.mark.parametrize(("v", "want"), [
    (1, 1.0), (2.5, 2.5), (-4, -4.0), (True, None), ("1", None), (None, None), (float("nan"), None),
    (float("inf"), None), (10**400, None),
])
def test_finite(v: object, want: float | None) -> None:
    got = finite(v)
    assert got == want and (got is None or type(got) is float)
