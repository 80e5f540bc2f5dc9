"""Claims: "I am paying for this key right now", so other workers wait instead of paying.

A claim is a row (key, owner, expires). Taking it succeeds when no row exists, the row
has expired (its owner died: nothing renews it) or the row is the taker's own. The owner
renews its claims while it lives (`VerdictCache` runs a thread for that) and deletes a
claim once the value is stored. The PostgreSQL engine implements the same three methods
on its own connection (`PostgresStore`); this module holds the protocol and the SQLite
engine, a table beside the cache's own in the same file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from harness.errors import HarnessError
from harness.stores.base import SQLiteStore

_BATCH = 500  # under SQLite's default limit of 999 bound parameters


class Claims(Protocol):
    """Claims on cache keys with expiry; see the module docstring."""

    def claim(self, key: str, owner: str, ttl_s: float) -> bool:
        """True if `owner` now holds the claim on `key` for `ttl_s` seconds."""
        ...

    def claim_many(self, keys: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        """`claim` for many keys in one statement: the keys `owner` holds now."""
        ...

    def release(self, key: str, owner: str) -> None:
        """Drop `owner`'s claim on `key`, if it holds one."""
        ...

    def release_many(self, keys: Sequence[str], owner: str) -> None:
        """`release` for many keys in one statement."""
        ...

    def renew(self, owner: str, ttl_s: float) -> None:
        """Extend every claim of `owner` to `ttl_s` seconds from now."""
        ...

    def holder(self, key: str) -> str | None:
        """Who holds the claim on `key` (expired or not), or None."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


class SQLiteClaims:
    """Claims in the table `<table>_claims` of a SQLite file (the cache's own file), so
    processes on one machine that share a cache folder pay for a key once."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        table: str = "verdict",
        *,
        share: SQLiteStore | None = None,
    ) -> None:
        """`share`: the store of the same file whose connection (and lock) to use, so a
        claim in this process waits on a lock instead of SQLite's busy back-off (it
        sleeps milliseconds at a time) while the cache commits its rows."""
        if not table.isidentifier():
            raise ValueError(f"bad table name: {table!r}")
        self.path = Path(path)
        self._table = f"{table}_claims"
        self._shared = share is not None
        try:
            if share is not None:
                self._db, self._lock = share.connection()
            else:
                self._lock = threading.Lock()
                self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            with self._lock:
                self._db.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._table} "
                    "(key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)"
                )
                self._db.commit()
        except sqlite3.Error as exc:
            raise HarnessError(f"{self.path}: cannot open the claims table ({exc})") from None

    def _run(self, sql: str, args: tuple[object, ...]) -> int:
        with self._lock:
            try:
                cur = self._db.execute(sql, args)
                self._db.commit()
                return cur.rowcount
            except sqlite3.Error as exc:
                self._db.rollback()
                raise HarnessError(f"{self.path}: cannot update cache claims ({exc})") from None

    def claim(self, key: str, owner: str, ttl_s: float) -> bool:
        """Insert, or take over an expired or own claim; True if `owner` holds it now."""
        now = time.time()
        changed = self._run(
            f"INSERT INTO {self._table} (key, owner, expires) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
            f"WHERE {self._table}.expires < ? OR {self._table}.owner = excluded.owner",
            (key, owner, now + ttl_s, now),
        )
        return changed > 0

    def claim_many(self, keys: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        """`claim` of every key in one transaction; the keys `owner` holds after it."""
        if not keys:
            return set()
        now = time.time()
        got: set[str] = set()
        with self._lock:
            try:
                self._db.executemany(
                    f"INSERT INTO {self._table} (key, owner, expires) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, "
                    f"expires = excluded.expires WHERE {self._table}.expires < ? "
                    f"OR {self._table}.owner = excluded.owner",
                    [(k, owner, now + ttl_s, now) for k in keys],
                )
                for i in range(0, len(keys), _BATCH):
                    part = list(keys[i : i + _BATCH])
                    marks = ",".join("?" * len(part))
                    rows = self._db.execute(
                        f"SELECT key FROM {self._table} WHERE owner = ? AND key IN ({marks})",
                        [owner, *part],
                    ).fetchall()
                    got.update(str(r[0]) for r in rows)
                self._db.commit()
            except sqlite3.Error as exc:
                self._db.rollback()
                raise HarnessError(f"{self.path}: cannot update cache claims ({exc})") from None
        return got

    def release(self, key: str, owner: str) -> None:
        """Delete `owner`'s claim on `key`."""
        self._run(f"DELETE FROM {self._table} WHERE key = ? AND owner = ?", (key, owner))

    def release_many(self, keys: Sequence[str], owner: str) -> None:
        """Delete `owner`'s claims on `keys`, in one transaction."""
        if not keys:
            return
        with self._lock:
            try:
                self._db.executemany(
                    f"DELETE FROM {self._table} WHERE key = ? AND owner = ?",
                    [(k, owner) for k in keys],
                )
                self._db.commit()
            except sqlite3.Error as exc:
                self._db.rollback()
                raise HarnessError(f"{self.path}: cannot update cache claims ({exc})") from None

    def renew(self, owner: str, ttl_s: float) -> None:
        """Push `owner`'s claims `ttl_s` seconds past now."""
        self._run(
            f"UPDATE {self._table} SET expires = ? WHERE owner = ?", (time.time() + ttl_s, owner)
        )

    def holder(self, key: str) -> str | None:
        """The owner of the claim row of `key`, or None."""
        with self._lock:
            try:
                row = self._db.execute(
                    f"SELECT owner FROM {self._table} WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise HarnessError(f"{self.path}: cannot read cache claims ({exc})") from None
        return str(row[0]) if row else None

    def close(self) -> None:
        """Close the SQLite connection (a shared one is closed by its store)."""
        if self._shared:
            return
        with self._lock:
            self._db.close()
