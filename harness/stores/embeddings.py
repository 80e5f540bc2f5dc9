"""The embedding cache: vectors keyed by (embedder spec key, kind, sha256 of the text)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from harness.stores.base import KeyValueStore, SQLiteStore

FILE = "embeddings.sqlite"


class EmbeddingCache:
    """(spec key, "doc" or "query", text sha256) -> float32 vector, over any KeyValueStore."""

    def __init__(self, where: str | os.PathLike[str] | KeyValueStore) -> None:
        if isinstance(where, (str, os.PathLike)):
            where = SQLiteStore(where, "embeddings")
        self.store: KeyValueStore = where

    @staticmethod
    def _key(spec: str, kind: str, sha: str) -> str:
        return f"{spec}:{kind}:{sha}"

    def get_many(self, spec: str, kind: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those texts (by sha256) that have one."""
        keys = {self._key(spec, kind, s): s for s in shas}
        found = self.store.get_many(list(keys))
        return {keys[k]: np.frombuffer(v, dtype=np.float32) for k, v in found.items()}

    def put_many(self, spec: str, kind: str, items: dict[str, np.ndarray]) -> None:
        """Keep vectors by text sha256."""
        self.store.put_many(
            {
                self._key(spec, kind, sha): np.asarray(v, dtype=np.float32).tobytes()
                for sha, v in items.items()
            }
        )

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()
