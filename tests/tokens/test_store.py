"""The persistent token cache: same counts with and without it, shared by processes, rebuilt
when corrupt, and a warm cache never loads a vocabulary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sessiontools.tokens.store import TokenStore
from sessiontools.tokens.tiktoken_counter import TiktokenCounter

MESSAGES = [
    {"role": "user", "content": "hello world " * 50},
    {"role": "user", "content": "会话管理器把每个条目追加到文件中。" * 20},
    {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                      {"type": "toolCall", "name": "read", "arguments": {"path": "a.py"}}]},
]


def test_counts_are_identical_with_cold_and_warm_cache(tmp_path: Path) -> None:
    """A cold cache fills, a warm one answers without encoding anything, and both equal no cache."""
    plain = TiktokenCounter("o200k_base").count_messages(MESSAGES)
    store = TokenStore(tmp_path / "t.sqlite")
    cold = TiktokenCounter("o200k_base", store=store)
    assert cold.count_messages(MESSAGES) == plain and cold.texts_encoded > 0
    store.close()
    store2 = TokenStore(tmp_path / "t.sqlite")
    warm = TiktokenCounter("o200k_base", store=store2)
    assert warm.count_messages(MESSAGES) == plain
    assert warm.texts_encoded == 0 and warm._encoding is None  # the vocabulary was never loaded
    assert store2.hits == len(MESSAGES)


def test_encodings_do_not_share_counts(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "t.sqlite")
    a = TiktokenCounter("o200k_base", store=store).count_messages(MESSAGES)
    b = TiktokenCounter("cl100k_base", store=store).count_messages(MESSAGES)
    assert b == TiktokenCounter("cl100k_base").count_messages(MESSAGES)
    assert a != b


def test_corrupt_cache_is_rebuilt(tmp_path: Path) -> None:
    """Garbage in the cache file is noted, the file rebuilt, and the counts still right."""
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    store = TokenStore(path)
    counts = TiktokenCounter("o200k_base", store=store).count_messages(MESSAGES)
    assert counts == TiktokenCounter("o200k_base").count_messages(MESSAGES)
    assert any("rebuilt" in n for n in store.notes)
    assert TokenStore(path).get_many("o200k_base", [b"x"]) == {}


def test_unwritable_location_turns_the_cache_off(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = TokenStore(blocker / "sub" / "t.sqlite")  # parent is a file: cannot be created
    counts = TiktokenCounter("o200k_base", store=store).count_messages(MESSAGES)
    assert counts == TiktokenCounter("o200k_base").count_messages(MESSAGES)
    assert store.notes


def test_several_processes_write_at_once(tmp_path: Path) -> None:
    """Four processes filling the same cache concurrently all succeed and agree."""
    path = tmp_path / "t.sqlite"
    code = (
        "import sys; from sessiontools.tokens.store import TokenStore\n"
        "s = TokenStore(sys.argv[1])\n"
        "for i in range(200):\n"
        "    s.put_many('enc', {f'k{j}'.encode(): j for j in range(i * 5, i * 5 + 50)})\n"
        "assert not s.notes, s.notes\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    got = TokenStore(path).get_many("enc", [f"k{j}".encode() for j in range(1045)])
    assert got == {f"k{j}".encode(): j for j in range(1045)}


def test_a_file_locked_by_another_process_is_left_alone(tmp_path: Path) -> None:
    """A lock is not damage: a store that cannot get past another connection's lock counts without
    the cache and never removes the file (other processes have it open; their counts would be lost)."""
    import sqlite3

    path = tmp_path / "t.sqlite"
    first = TokenStore(path)
    first.put_many("enc", {b"a": 1})
    first.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: an exclusive lock blocks readers
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = TokenStore(path, busy_timeout=0.01)
        assert store.get_many("enc", [b"a"]) == {}
        assert len(store.notes) == 1 and "busy" in store.notes[0] and "rebuilt" not in store.notes[0]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert TokenStore(path).get_many("enc", [b"a"]) == {b"a": 1}, "the file and its counts survive"


def test_io_error_never_deletes_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error while opening (SQLITE_IOERR: a full disk, a failing device) proves nothing about
    the file: one note, the cache off for this run, the file and its counts kept (issue 27: a
    healthy cache was deleted as 'unusable (disk I/O error); rebuilt')."""
    import sqlite3

    import sessiontools.tokens.store as store_mod

    path = tmp_path / "t.sqlite"
    first = TokenStore(path)
    first.put_many("enc", {bytes([i]): i for i in range(200)})
    first.close()

    def failing(conn: sqlite3.Connection) -> None:
        exc = sqlite3.OperationalError("disk I/O error")
        exc.sqlite_errorcode = 10  # SQLITE_IOERR
        raise exc

    with monkeypatch.context() as m:
        m.setattr(store_mod, "_prepare", failing)
        store = TokenStore(path)
        assert store.get_many("enc", [b"\x01"]) == {}
        store.put_many("enc", {b"new": 1})
    assert len(store.notes) == 1 and "not usable in this run" in store.notes[0] and "kept" in store.notes[0]
    assert len(TokenStore(path).get_many("enc", [bytes([i]) for i in range(200)])) == 200


def test_full_disk_never_deletes_the_cache(tmp_path: Path) -> None:
    """A real full disk (a 64 KiB tmpfs, filled): the cache counts without itself, one note, and
    once there is space again every count is still there."""
    import os
    import shutil
    import subprocess

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = mnt / "t.sqlite"
        first = TokenStore(path)
        first.put_many("enc", {bytes([i]): i for i in range(200)})
        first.close()
        filler = mnt / "filler"
        with open(filler, "wb", buffering=0) as fh:  # fill every byte left
            try:
                while True:
                    fh.write(b"f" * 512)
            except OSError:
                pass
        store = TokenStore(path)
        got = store.get_many("enc", [bytes([i]) for i in range(200)])
        store.put_many("enc", {i.to_bytes(4, "big"): i for i in range(2000)})
        store.close()
        assert all("rebuilt" not in n for n in store.notes), store.notes
        assert len(store.notes) <= 1
        filler.unlink()
        again = TokenStore(path)
        assert len(again.get_many("enc", [bytes([i]) for i in range(200)])) == 200
        again.close()
        assert got in ({}, {bytes([i]): i for i in range(200)})
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)  # (a file still open: detach)
