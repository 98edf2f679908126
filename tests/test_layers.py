"""The layer contract (pyproject.toml, import-linter) holds: data flows one way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_linter_contract_is_kept() -> None:
    """cli -> report -> analysis / replay -> policies -> tokens -> transcript -> read, checked by lint-imports."""
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
