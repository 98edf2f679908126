"""The layer contract (pyproject.toml, import-linter) holds: data flows one way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_linter_contract_is_kept() -> None:
    """cli -> endpoint -> report -> analysis / replay -> policies -> tokens -> transcript -> read, checked by lint-imports."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_no_module_over_500_lines() -> None:
    """Modules stay small enough to live in (the architecture's rule)."""
    big = {str(p.relative_to(ROOT)): n for p in (ROOT / "sessiontools").rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not big, f"modules over 500 lines: {big}"


def test_no_function_over_80_lines() -> None:
    """Functions (a Typer `register` wrapper included) stay short enough to read at once."""
    import ast

    long = []
    for p in sorted((ROOT / "sessiontools").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > 80:
                    long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "functions over 80 lines:\n" + "\n".join(long)
