"""The PostgreSQL engine: caches, claims and sweep logs shared by workers on many machines.

A URL `postgresql://user@host:port/db` names the database. The password comes from the
URL, `PGPASSWORD` or `~/.pgpass` (libpq reads the last two itself); it is remembered as a
secret (`harness.secrets`), so no message, log line or result file shows it.

Tables are created on first use, each under a schema version kept in `harness_schema`
(component -> version): a database written by a newer harness is refused with one line
rather than misread. Creation runs under a transaction-level advisory lock, so workers
starting at once do not race on `CREATE TABLE`.

```
harness_schema     component TEXT PK, version INT
harness_verdicts   key TEXT PK, value BYTEA, created DOUBLE PRECISION   (signed rows)
harness_embeddings key TEXT PK, value BYTEA, created DOUBLE PRECISION   (signed rows)
harness_claims     namespace, key PK; owner TEXT, expires DOUBLE PRECISION
```

Claims: before paying for a verdict, a worker inserts a claim row that expires after a
few seconds; while the worker lives a thread of its cache pushes the expiry forward, so
a worker killed with -9 lets go of its claims within one time-to-live. Times are the
database server's clock, so machines with skewed clocks agree.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from harness.errors import HarnessError
from harness.secrets import redact, redact_url, remember_url

SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")
"""URL prefixes this engine accepts."""

SCHEMA_VERSION = 1
"""The version of every table this harness creates; a newer one in the database is refused."""

_NOW = "extract(epoch from clock_timestamp())"
_LOCK_ID = 0x6861726E  # "harn": serialises table creation across workers


def is_postgres(url: str | None) -> bool:
    """Whether `url` names a PostgreSQL database."""
    return bool(url) and str(url).startswith(SCHEMES)


def libpq_url(url: str) -> str:
    """`url` as libpq reads it (SQLAlchemy's driver suffix removed)."""
    for prefix in SCHEMES:
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def sqlalchemy_url(url: str) -> str:
    """`url` for SQLAlchemy (Optuna's RDB storage): the psycopg 3 driver named, since a bare
    postgresql:// makes SQLAlchemy look for psycopg2."""
    return "postgresql+psycopg://" + libpq_url(url)[len("postgresql://") :]


def _one_line(exc: BaseException) -> str:
    """An error's message on one line, secrets removed."""
    return redact(" ".join(str(exc).split()) or type(exc).__name__)


def connect(url: str) -> Any:
    """An autocommit psycopg connection to `url`.

    Raises HarnessError (one line, password masked) when the driver is missing, the
    server cannot be reached or refuses the login."""
    remember_url(url)
    try:
        import psycopg
    except ImportError:
        raise HarnessError(
            f"{redact_url(url)}: the PostgreSQL driver is not installed "
            "(pip install 'psycopg[binary]')"
        ) from None
    try:
        return psycopg.connect(libpq_url(url), autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise HarnessError(
            f"{redact_url(url)}: cannot connect to PostgreSQL ({_one_line(exc)})"
        ) from None


def ensure_schema(conn: Any, url: str, component: str, ddl: Sequence[str]) -> None:
    """Create `component`'s tables (statements `ddl`) if missing, and check its version.

    Raises HarnessError when the database holds a newer version of the component."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS harness_schema "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            row = conn.execute(
                "SELECT version FROM harness_schema WHERE component = %s", (component,)
            ).fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise HarnessError(
                    f"{redact_url(url)}: {component} tables have schema version {row[0]}; "
                    f"this harness reads up to {SCHEMA_VERSION}: upgrade harness"
                )
            for statement in ddl:
                conn.execute(statement)
            if row is None:
                conn.execute(
                    "INSERT INTO harness_schema (component, version) VALUES (%s, %s)",
                    (component, SCHEMA_VERSION),
                )
    except psycopg.Error as exc:
        raise HarnessError(
            f"{redact_url(url)}: cannot create the {component} tables ({_one_line(exc)})"
        ) from None


class PostgresStore:
    """One table `(key TEXT PRIMARY KEY, value BYTEA, created DOUBLE PRECISION)` in a
    PostgreSQL database, and claims on its keys (`harness_claims`, namespace = table).

    One connection per store, used under a lock: the grading threads of a run share it.
    Every write commits on return (autocommit, one statement per call)."""

    def __init__(self, url: str, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"bad table name: {table!r}")
        self.url = url
        self.path = f"{redact_url(url)} table {table}"
        """Where the rows are, for messages (the name `path` is what SignedStore shows)."""
        self._table = table
        self._lock = threading.Lock()
        self._db = connect(url)
        ensure_schema(
            self._db,
            url,
            table,
            [
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(key TEXT PRIMARY KEY, value BYTEA NOT NULL, created DOUBLE PRECISION)",
                "CREATE TABLE IF NOT EXISTS harness_claims (namespace TEXT NOT NULL, "
                "key TEXT NOT NULL, owner TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL, "
                "PRIMARY KEY (namespace, key))",
            ],
        )

    @contextmanager
    def _guard(self, doing: str) -> Iterator[Any]:
        import psycopg

        with self._lock:
            try:
                yield self._db
            except psycopg.Error as exc:
                raise HarnessError(f"{self.path}: cannot {doing} ({_one_line(exc)})") from None

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The stored values of those keys that have one (one query)."""
        if not keys:
            return {}
        with self._guard("read this cache") as db:
            rows = db.execute(
                f"SELECT key, value FROM {self._table} WHERE key = ANY(%s)", (list(keys),)
            ).fetchall()
        return {k: bytes(v) for k, v in rows}

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Insert or replace every item in one transaction, stamped with the server's time."""
        if not items:
            return
        with self._guard("write to this cache") as db, db.transaction(), db.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self._table} (key, value, created) VALUES (%s, %s, {_NOW}) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, "
                "created = EXCLUDED.created",
                [(k, bytes(v)) for k, v in items.items()],
            )

    def count(self) -> int:
        """Rows in this store's table."""
        with self._guard("count this cache") as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {self._table}").fetchone()[0])

    # ------------------------------------------------------------ claims (see module doc)

    def claim(self, key: str, owner: str, ttl_s: float) -> bool:
        """Take the claim on `key` for `ttl_s` seconds: True if it was free, expired or
        already `owner`'s; False while another live owner holds it."""
        with self._guard("claim a cache key") as db:
            row = db.execute(
                "INSERT INTO harness_claims (namespace, key, owner, expires) "
                f"VALUES (%s, %s, %s, {_NOW} + %s) ON CONFLICT (namespace, key) DO UPDATE "
                "SET owner = EXCLUDED.owner, expires = EXCLUDED.expires "
                f"WHERE harness_claims.expires < {_NOW} "
                "OR harness_claims.owner = EXCLUDED.owner RETURNING owner",
                (self._table, key, owner, ttl_s),
            ).fetchone()
        return row is not None

    def claim_many(self, keys: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        """`claim` of every key in one statement; the keys `owner` holds after it."""
        if not keys:
            return set()
        with self._guard("claim cache keys") as db:
            rows = db.execute(
                "INSERT INTO harness_claims (namespace, key, owner, expires) "
                f"SELECT %s, k, %s, {_NOW} + %s FROM unnest(%s::text[]) AS k "
                "ON CONFLICT (namespace, key) DO UPDATE "
                "SET owner = EXCLUDED.owner, expires = EXCLUDED.expires "
                f"WHERE harness_claims.expires < {_NOW} "
                "OR harness_claims.owner = EXCLUDED.owner RETURNING key",
                (self._table, owner, ttl_s, list(dict.fromkeys(keys))),
            ).fetchall()
        return {str(r[0]) for r in rows}

    def release_many(self, keys: Sequence[str], owner: str) -> None:
        """Give up `owner`'s claims on `keys`, in one statement."""
        if not keys:
            return
        with self._guard("release cache claims") as db:
            db.execute(
                "DELETE FROM harness_claims WHERE namespace = %s AND owner = %s "
                "AND key = ANY(%s::text[])",
                (self._table, owner, list(keys)),
            )

    def release(self, key: str, owner: str) -> None:
        """Give up `owner`'s claim on `key` (nothing if it holds none)."""
        with self._guard("release a cache claim") as db:
            db.execute(
                "DELETE FROM harness_claims WHERE namespace = %s AND key = %s AND owner = %s",
                (self._table, key, owner),
            )

    def renew(self, owner: str, ttl_s: float) -> None:
        """Push the expiry of every claim `owner` holds `ttl_s` seconds past now."""
        with self._guard("renew cache claims") as db:
            db.execute(
                f"UPDATE harness_claims SET expires = {_NOW} + %s "
                "WHERE namespace = %s AND owner = %s",
                (ttl_s, self._table, owner),
            )

    def holder(self, key: str) -> str | None:
        """The owner of the claim row of `key`, or None."""
        with self._guard("read cache claims") as db:
            row = db.execute(
                "SELECT owner FROM harness_claims WHERE namespace = %s AND key = %s",
                (self._table, key),
            ).fetchone()
        return str(row[0]) if row else None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
