"""`sessiontools --help` starts fast: none of the heavy libraries is imported to print help."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "polars", "matplotlib", "tiktoken")

CODE = """
import sys
from sessiontools.cli import main
rc = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


def test_help_imports_no_heavy_library() -> None:
    """A fresh interpreter (sys.modules clean) runs the CLI's --help and each command's --help."""
    for args in (["--help"], ["inspect", "--help"], ["replay", "--help"], ["estimate-error", "--help"],
                 ["diff-summaries", "--help"], ["cut", "--help"]):
        proc = subprocess.run([sys.executable, "-c", CODE.format(heavy=set(HEAVY)), *args], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "Usage" in proc.stdout
        line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1]
        assert line == "HEAVY=", f"sessiontools {' '.join(args)} imported {line[6:]}"
