"""The storage interface every cache is written against, and its SQLite engine.

A store is a map from text keys to byte values in one named table, safe to share
between threads and processes. The verdict and embedding caches are thin typed layers
over it, so a second engine (PostgreSQL, for sweeps across machines) implements these
four methods and every cache works on it unchanged.

A cache folder is something people copy, share and receive, so what is read from it is
not trusted: `SignedStore` wraps any engine and stores each value with an HMAC-SHA256
tag over (cache name, key, value), keyed by a per-user secret kept outside the cache
folder (`cache_secret`). A row whose tag is missing or wrong (forged, copied under
another key, corrupt, or written by another user) reads as absent, so it is paid for
again; engines only ever see opaque bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from loguru import logger

from harness.errors import HarnessError

_BATCH = 500  # SQLite's default limit on bound parameters is 999

KEY_ENV = "HARNESS_CACHE_KEY"
"""The environment variable that, when set and not empty, is the cache secret itself."""


class KeyValueStore(Protocol):
    """Text key -> bytes, shared by threads and processes; a write is durable on return.

    An engine stores the bytes it is given and nothing else: the caches wrap it in a
    `SignedStore`, which tags and checks every value, so an engine need not.
    """

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
        self.path = Path(path)
        self._table, self._value = table, value_column
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                f"(key TEXT PRIMARY KEY, {value_column} BLOB, created REAL)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            # a read-only folder, or a file that is not a SQLite database: one line
            corrupt = isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                exc, sqlite3.OperationalError
            )
            hint = "; move it away to start a fresh one" if corrupt else ""
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise HarnessError(
                f"{self.path}: cannot open this cache ({_one_line(reason)}){hint}"
            ) from None

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """Looks keys up in batches of 500, under SQLite's limit on bound parameters."""
        out: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(keys), _BATCH):
                part = list(keys[i : i + _BATCH])
                marks = ",".join("?" * len(part))
                try:
                    rows = self._db.execute(
                        f"SELECT key, {self._value} FROM {self._table} WHERE key IN ({marks})",
                        part,
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise HarnessError(
                        f"{self.path}: cannot read this cache ({_one_line(exc)})"
                    ) from None
                for key, value in rows:
                    out[key] = _as_bytes(value)
        return out

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """One committed transaction; each row is stamped with the time it was written."""
        now = time.time()
        with self._lock:
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO {self._table} (key, {self._value}, created) "
                    "VALUES (?, ?, ?)",
                    [(k, v, now) for k, v in items.items()],
                )
                self._db.commit()
            except sqlite3.Error as exc:
                self._db.rollback()
                raise HarnessError(
                    f"{self.path}: cannot write to this cache ({_one_line(exc)})"
                ) from None

    def connection(self) -> tuple[sqlite3.Connection, threading.Lock]:
        """This store's connection and the lock every use of it holds, for a table
        beside this one in the same file (the claims of the verdict cache)."""
        return self._db, self._lock

    def count(self) -> int:
        """Rows in this store's table."""
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._db.close()


def _one_line(reason: object) -> str:
    """An exception's message (or any reason) on one line."""
    return " ".join(str(reason).split()) or type(reason).__name__


def _as_bytes(value: object) -> bytes:
    """A value column as bytes; anything SQLite holds that is neither text nor blob (a
    number or NULL written into the file by hand) becomes bytes that fail every check."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return b""


# ---------------------------------------------------------------- tamper-evident rows


def key_file() -> Path:
    """Where the generated cache secret lives: $XDG_CONFIG_HOME/harness/cache.key, by
    default ~/.config/harness/cache.key. A config folder, not the cache folder: a cache
    travels between people, the secret must not travel with it."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "harness" / "cache.key"


def _read_key(path: Path) -> bytes:
    data = path.read_bytes().strip()
    if len(data) < 16:
        raise HarnessError(
            f"{path}: the cache key is empty or shorter than 16 bytes; delete the file to "
            f"have a new one made (cached rows are then paid for again), or set {KEY_ENV}"
        )
    return data


def cache_secret() -> bytes:
    """The secret that signs cache rows: $HARNESS_CACHE_KEY if set, else `key_file()`,
    created on first use (64 random hex characters, mode 0600).

    Raises HarnessError (one line) when the key file cannot be read or created."""
    env = os.environ.get(KEY_ENV, "")
    if env:
        return env.encode("utf-8", "surrogateescape")
    path = key_file()
    try:
        try:
            return _read_key(path)
        except FileNotFoundError:
            pass
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                # link, not rename: when two processes race, the first key stays and both
                # read it back, so no row is ever signed with a key that is then replaced
                os.link(tmp, path)
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links
                if not path.exists():
                    os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        logger.info("created the cache key {} (signs cached verdicts and vectors)", path)
        return _read_key(path)
    except OSError as exc:
        raise HarnessError(
            f"{path}: cannot read or create the cache key ({exc.strerror or exc}); "
            f"set {KEY_ENV}, or make {path.parent} writable"
        ) from None


_MAGIC = b"hm1:"  # format of a signed value: magic, 32-byte tag, value
_TAG_LEN = 32
_warn_lock = threading.Lock()
_warned = False


def _warn_rejected(where: str, n: int, why: str) -> None:
    """Warn about rejected rows once per process; later rejections are only counted."""
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    logger.warning(
        "{}: {} cached row(s) {}; treated as absent, so they are judged or embedded again "
        "(a forged, corrupt or copied row, a cache signed with another key, or one written "
        "by a harness before rows were signed); further ones are counted, not logged",
        where,
        n,
        why,
    )


class SignedStore:
    """Any KeyValueStore whose values carry an HMAC-SHA256 tag over (namespace, key,
    value), keyed by `cache_secret()`.

    `get_many` returns only values whose tag checks out; the others are counted in
    `rejected` and read as absent (the first time in a process, with a warning). The tag
    covers the key, so a genuine row copied under another key fails too, and the
    namespace, so a row moved from one cache to another fails. Rows written by harness
    versions before this one carry no tag: each is paid for (judged or embedded) again,
    once, and then stored signed. The caches on top also call `reject` for a signed value
    that does not parse as their record.
    """

    def __init__(
        self, inner: KeyValueStore, namespace: str, *, secret: bytes | None = None
    ) -> None:
        self.inner = inner
        self.namespace = namespace
        self._secret = cache_secret() if secret is None else secret
        self._lock = threading.Lock()
        self.rejected = 0

    @property
    def where(self) -> str:
        """The engine's file (or its kind), for messages."""
        return str(getattr(self.inner, "path", type(self.inner).__name__))

    def _tag(self, key: str, value: bytes) -> bytes:
        k = key.encode("utf-8", "surrogatepass")
        mac = hmac.new(self._secret, digestmod=hashlib.sha256)
        mac.update(self.namespace.encode() + b"\0" + len(k).to_bytes(8, "big") + k)
        mac.update(value)
        return mac.digest()

    def seal(self, key: str, value: bytes) -> bytes:
        """`value` as stored under `key`: the format marker, its tag, then the value."""
        return _MAGIC + self._tag(key, value) + value

    def open(self, key: str, stored: bytes) -> bytes | None:
        """The value sealed in `stored` if its tag is right for `key`, else None."""
        head = len(_MAGIC) + _TAG_LEN
        if len(stored) < head or not stored.startswith(_MAGIC):
            return None
        value = stored[head:]
        ok = hmac.compare_digest(stored[len(_MAGIC) : head], self._tag(key, value))
        return value if ok else None

    def reject(self, n: int, why: str) -> None:
        """Count `n` rows read as absent because of `why`, and warn once per process."""
        if n <= 0:
            return
        with self._lock:
            self.rejected += n
        _warn_rejected(self.where, n, why)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The verified values of those keys that have one; bad rows count as rejected."""
        wanted = set(keys)
        out: dict[str, bytes] = {}
        bad = 0
        for key, stored in self.inner.get_many(keys).items():
            if key not in wanted:
                continue
            value = self.open(key, stored)
            if value is None:
                bad += 1
            else:
                out[key] = value
        self.reject(bad, "failed their integrity check")
        return out

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Seal and store every item, in one transaction of the engine."""
        self.inner.put_many({k: self.seal(k, v) for k, v in items.items()})

    def count(self) -> int:
        """How many keys the engine holds (signed or not)."""
        return self.inner.count()

    def close(self) -> None:
        """Close the engine."""
        self.inner.close()
