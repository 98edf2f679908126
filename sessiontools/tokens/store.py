"""A persistent token-count cache: counts keyed by tokenizer and content hash, in SQLite, and
per-session results keyed by the session file's content hash and every option that shapes them.

Several processes may read and write at once (SQLite WAL with a busy timeout; inserts are
idempotent). A cache file that is corrupt or of another format is removed and rebuilt; if even
that fails, the store turns itself off and counting goes on uncached. The caller chooses the file
(the CLI uses the user cache directory); nothing here reads the environment.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

SCHEMA = 1
_CHUNK = 500


class TokenStore:
    """Token counts by (encoding, content key) on disk."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.notes: list[str] = []
        self.hits = 0
        self.misses = 0
        self._conn: sqlite3.Connection | None = None
        self._disabled = False

    def _open(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._disabled:
            return self._conn
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
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
                self._conn = conn
                return conn
            except sqlite3.Error as exc:
                if attempt == 1:
                    self.notes.append(f"token cache {self.path} unusable ({exc}); rebuilt")
                    for suffix in ("", "-wal", "-shm"):
                        Path(str(self.path) + suffix).unlink(missing_ok=True)
                else:
                    self.notes.append(f"token cache {self.path} unusable ({exc}); counting without it")
                    self._disabled = True
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
