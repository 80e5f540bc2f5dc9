"""Where a run's caches live: a folder of SQLite files (one machine) or a PostgreSQL
database (workers on many machines).

`open_storage(url, cache_dir)` picks the engine from the URL: None or anything that is
not `postgresql://` keeps the verdict and embedding caches in `cache_dir` as before; a
PostgreSQL URL puts them in that database (tables `harness_verdicts`,
`harness_embeddings`, with claims in `harness_claims`). Either way the values are
signed (`SignedStore`) with the user's cache key, so every worker needs the same
`HARNESS_CACHE_KEY` (or key file) to read what the others paid for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.secrets import redact_url, remember_url
from harness.stores.embeddings import FILE as EMBEDDINGS_FILE
from harness.stores.embeddings import EmbeddingCache
from harness.stores.verdicts import CLAIM_TTL_S, VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE


class CacheStorage(Protocol):
    """Opens the caches of one run; each call gives a new cache the caller closes."""

    @property
    def where(self) -> str:
        """The folder or the database (password masked), for messages."""
        ...

    def verdict_cache(self) -> VerdictCache:
        """The verdict cache, with claims across workers."""
        ...

    def embedding_cache(self) -> EmbeddingCache:
        """The embedding cache."""
        ...


@dataclass(frozen=True)
class FolderStorage:
    """The default: SQLite files in the cache folder (verdicts.sqlite, embeddings.sqlite),
    with claims in verdicts.sqlite so processes of one machine pay for a verdict once."""

    cache_dir: Path
    claim_ttl_s: float = CLAIM_TTL_S

    @property
    def where(self) -> str:
        """The cache folder."""
        return str(self.cache_dir)

    def verdict_cache(self) -> VerdictCache:
        """verdicts.sqlite in the cache folder."""
        return VerdictCache(self.cache_dir / VERDICTS_FILE, claim_ttl_s=self.claim_ttl_s)

    def embedding_cache(self) -> EmbeddingCache:
        """embeddings.sqlite in the cache folder."""
        return EmbeddingCache(self.cache_dir / EMBEDDINGS_FILE)


@dataclass(frozen=True)
class PostgresStorage:
    """Caches in a PostgreSQL database, shared by every worker that can reach it."""

    url: str
    claim_ttl_s: float = CLAIM_TTL_S

    @property
    def where(self) -> str:
        """The database URL with its password masked."""
        return redact_url(self.url)

    def verdict_cache(self) -> VerdictCache:
        """Table harness_verdicts; its store's connection also holds the claims."""
        from harness.stores.postgres import PostgresStore

        store = PostgresStore(self.url, "harness_verdicts")
        return VerdictCache(store, claims=store, claim_ttl_s=self.claim_ttl_s)

    def embedding_cache(self) -> EmbeddingCache:
        """Table harness_embeddings."""
        from harness.stores.postgres import PostgresStore

        return EmbeddingCache(PostgresStore(self.url, "harness_embeddings"))


def open_storage(
    url: str | None, cache_dir: Path, *, claim_ttl_s: float = CLAIM_TTL_S
) -> CacheStorage:
    """The caches for `url`: PostgreSQL for a postgresql:// URL, else the cache folder.

    Only the PostgreSQL engine connects here (to fail early, with one line, on a wrong
    password or an unreachable server); the folder's files are opened per run."""
    from harness.stores.postgres import connect, ensure_schema, is_postgres

    if url is not None and is_postgres(url):
        remember_url(url)
        conn = connect(url)
        try:
            ensure_schema(conn, url, "harness", [])
        finally:
            conn.close()
        return PostgresStorage(url, claim_ttl_s)
    return FolderStorage(Path(cache_dir), claim_ttl_s)
