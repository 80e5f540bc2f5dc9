"""Caches behind one small storage interface (`KeyValueStore`): SQLite on one machine.

VerdictCache     verdict key -> a paid CriterionVerdict (stores/verdicts.py)
EmbeddingCache   (embedder, kind, text hash) -> vector (stores/embeddings.py)
SQLiteStore      the engine both use by default
SignedStore      over any engine: every value tagged with a per-user key, checked on read
PostgresStore    the engine for sweeps across machines (stores/postgres.py)
SweepDatabase    a sweep's log in PostgreSQL, for workers on many machines (stores/sweeps.py)
open_storage     a cache folder or a postgresql:// URL -> the caches of a run (stores/storage.py)
"""

from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore, cache_secret
from harness.stores.embeddings import EmbeddingCache
from harness.stores.storage import CacheStorage, FolderStorage, PostgresStorage, open_storage
from harness.stores.verdicts import VerdictCache, verdict_key

__all__ = [
    "CacheStorage",
    "EmbeddingCache",
    "FolderStorage",
    "KeyValueStore",
    "PostgresStorage",
    "SQLiteStore",
    "SignedStore",
    "VerdictCache",
    "cache_secret",
    "open_storage",
    "verdict_key",
]
