"""Caches behind one small storage interface (`KeyValueStore`): SQLite on one machine.

VerdictCache     verdict key -> a paid CriterionVerdict (stores/verdicts.py)
EmbeddingCache   (embedder, kind, text hash) -> vector (stores/embeddings.py)
SQLiteStore      the engine both use by default
"""

from harness.stores.base import KeyValueStore, SQLiteStore
from harness.stores.embeddings import EmbeddingCache
from harness.stores.verdicts import VerdictCache, verdict_key

__all__ = ["EmbeddingCache", "KeyValueStore", "SQLiteStore", "VerdictCache", "verdict_key"]
