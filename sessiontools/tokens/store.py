"""A persistent token-count cache: counts keyed by tokenizer and content hash, in SQLite, and
per-session results keyed by the session file's content hash and every option that shapes them.

Several processes may read and write at once (SQLite WAL with a busy timeout; inserts are
idempotent); a file still locked by another process after the timeout and a few tries is left
alone, and this store counts without it. Only a cache file proven corrupt or of another format is
removed and rebuilt (an I/O error or a full disk turns the cache off for the run, one note, and
keeps the file); if even that fails, the store turns itself off and counting goes on uncached. The caller chooses the file
(the CLI uses the user cache directory); nothing here reads the environment.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

SCHEMA = 1
_CHUNK = 500
#: Opening attempts while another process holds the file locked (each waits the busy timeout).
_OPEN_TRIES = 4
#: SQLITE_BUSY and SQLITE_LOCKED (an extended result code keeps its primary code in the low byte).
_BUSY_CODES = (5, 6)


def _transient(exc: sqlite3.Error) -> bool:
    """Whether `exc` is another connection's lock (worth waiting for), not damage to the file."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(exc) or "busy" in str(exc)


#: SQLITE_CORRUPT and SQLITE_NOTADB: the only errors that prove the file is damaged or not ours.
_CORRUPT_CODES = (11, 26)


def _corrupt(exc: sqlite3.Error) -> bool:
    """Whether `exc` proves the file corrupt or foreign (then it may be rebuilt). An I/O error, a full
    disk, a read-only or unopenable file proves nothing about the file: it is never deleted for one."""
    if str(exc).startswith("cache schema "):
        return True  # (our own check in `_prepare`: a file of another schema)
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _CORRUPT_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def _prepare(conn: sqlite3.Connection) -> None:
    """WAL mode, the tables, and the schema check (a DatabaseError when the file is not ours)."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS counts (enc TEXT NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,"
        " PRIMARY KEY (enc, key)) WITHOUT ROWID"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
    (schema,) = conn.execute("SELECT v FROM meta WHERE k = 'schema'").fetchone()
    if schema != str(SCHEMA):
        raise sqlite3.DatabaseError(f"cache schema {schema}, expected {SCHEMA}")
    conn.execute("SELECT count(*) FROM (SELECT 1 FROM counts LIMIT 1)").fetchone()


class TokenStore:
    """Token counts by (encoding, content key) on disk."""

    def __init__(self, path: Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout  # seconds a statement waits for another process's lock
        self.notes: list[str] = []
        self.hits = 0
        self.misses = 0
        self._conn: sqlite3.Connection | None = None
        self._disabled = False

    def _open(self) -> sqlite3.Connection | None:
        """The connection, opened on first use. A file another process holds locked past the busy
        timeout is tried again, then left alone (counting goes on without it): a lock is not damage,
        and removing a file other processes have open would lose their writes. A corrupt file, or one
        of another schema, is removed and rebuilt once."""
        if self._conn is not None or self._disabled:
            return self._conn
        rebuilt = False
        for attempt in range(_OPEN_TRIES):
            conn = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
                _prepare(conn)
                self._conn = conn
                return conn
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                if _transient(exc):
                    if attempt + 1 < _OPEN_TRIES:
                        time.sleep(0.05 * 2 ** attempt)
                        continue
                    self.notes.append(f"token cache {self.path} busy ({exc}); counting without it")
                elif not _corrupt(exc):
                    self.notes.append(f"token cache {self.path} not usable in this run ({exc}); counting without "
                                      "it (the file is kept)")
                elif not rebuilt:
                    rebuilt = True
                    self.notes.append(f"token cache {self.path} unusable ({exc}); rebuilt")
                    for suffix in ("", "-wal", "-shm"):
                        Path(str(self.path) + suffix).unlink(missing_ok=True)
                    continue
                else:
                    self.notes.append(f"token cache {self.path} unusable ({exc}); counting without it")
                self._disabled = True
                return None
            except OSError as exc:
                self.notes.append(f"token cache {self.path} unusable ({exc.strerror or exc}); counting without it")
                self._disabled = True
                return None
        return None

    def get_many(self, encoding: str, keys: Sequence[bytes]) -> dict[bytes, int]:
        """Counts known for these keys (missing keys are absent)."""
        conn = self._open()
        out: dict[bytes, int] = {}
        if conn is None or not keys:
            return out
        try:
            for i in range(0, len(keys), _CHUNK):
                chunk = list(keys[i: i + _CHUNK])
                marks = ",".join("?" * len(chunk))
                for key, n in conn.execute(f"SELECT key, n FROM counts WHERE enc = ? AND key IN ({marks})",
                                           [encoding, *chunk]):
                    out[bytes(key)] = int(n)
        except sqlite3.Error as exc:
            self._fail(exc)
            return {}
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def put_many(self, encoding: str, items: Mapping[bytes, int] | Iterable[tuple[bytes, int]]) -> None:
        conn = self._open()
        rows = list(items.items() if isinstance(items, Mapping) else items)
        if conn is None or not rows:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR IGNORE INTO counts VALUES (?, ?, ?)", [(encoding, k, n) for k, n in rows])
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self._fail(exc)

    def get_result(self, key: str) -> bytes | None:
        """A per-session result stored under `key` (the caller puts every input of it in the key)."""
        conn = self._open()
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._fail(exc)
            return None
        return bytes(row[0]) if row else None

    def put_result(self, key: str, value: bytes) -> None:
        conn = self._open()
        if conn is None:
            return
        try:
            conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?)", (key, value))
        except sqlite3.Error as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.notes.append(f"token cache {self.path} failed ({exc}); counting without it")
        self._disabled = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
