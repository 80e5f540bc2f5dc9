"""The storage interface every cache is written against, and its SQLite engine.

A store is a map from text keys to byte values in one named table, safe to share
between threads and processes. The verdict and embedding caches are thin typed layers
over it, so a second engine (PostgreSQL, for sweeps across machines) implements these
four methods and every cache works on it unchanged.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

_BATCH = 500  # SQLite's default limit on bound parameters is 999


class KeyValueStore(Protocol):
    """Text key -> bytes, shared by threads and processes; a write is durable on return."""

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The stored values of those keys that have one."""
        ...

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Insert or replace every item, in one transaction."""
        ...

    def count(self) -> int:
        """How many keys the store holds."""
        ...

    def close(self) -> None:
        """Release the connection; the store is unusable afterwards."""
        ...


class SQLiteStore:
    """One table `(key TEXT PRIMARY KEY, <value> BLOB, created REAL)` of a SQLite file.

    WAL lets readers and one writer work at once, across processes; synchronous=NORMAL
    keeps a committed row through a crash of this process (not a power cut) without an
    fsync per row, which serialised concurrent judging. `value_column` keeps the column
    name of caches written before this interface existed.
    """

    def __init__(
        self, path: str | os.PathLike[str], table: str, *, value_column: str = "value"
    ) -> None:
        if not (table.isidentifier() and value_column.isidentifier()):
            raise ValueError(f"bad table or column name: {table!r}, {value_column!r}")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self._table, self._value = table, value_column
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {table} "
            f"(key TEXT PRIMARY KEY, {value_column} BLOB, created REAL)"
        )
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Looks keys up in batches of 500, under SQLite's limit on bound parameters."""
        out: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(keys), _BATCH):
                part = list(keys[i : i + _BATCH])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, {self._value} FROM {self._table} WHERE key IN ({marks})", part
                ).fetchall()
                for key, value in rows:
                    out[key] = value.encode() if isinstance(value, str) else bytes(value)
        return out

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """One committed transaction; each row is stamped with the time it was written."""
        now = time.time()
        with self._lock:
            self._db.executemany(
                f"INSERT OR REPLACE INTO {self._table} (key, {self._value}, created) "
                "VALUES (?, ?, ?)",
                [(k, v, now) for k, v in items.items()],
            )
            self._db.commit()

    def count(self) -> int:
        """Rows in this store's table."""
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._db.close()
