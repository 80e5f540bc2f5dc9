"""Caches behind one small storage interface (`KeyValueStore`): SQLite on one machine.

VerdictCache     verdict key -> a paid CriterionVerdict (stores/verdicts.py)
EmbeddingCache   (embedder, kind, text hash) -> vector (stores/embeddings.py)
SQLiteStore      the engine both use by default
SignedStore      over any engine: every value tagged with a per-user key, checked on read
"""

from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore, cache_secret
from harness.stores.embeddings import EmbeddingCache
from harness.stores.verdicts import VerdictCache, verdict_key

__all__ = [
    "EmbeddingCache",
    "KeyValueStore",
    "SQLiteStore",
    "SignedStore",
    "VerdictCache",
    "cache_secret",
    "verdict_key",
]
