"""The embedding cache: vectors keyed by (embedder spec key, kind, sha256 of the text).

Rows are signed (`SignedStore`): a forged, copied or garbled vector reads as absent and
the text is embedded again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore

FILE = "embeddings.sqlite"
MAX_DIM = 1 << 16
"""The largest vector the cache returns; a longer row is corrupt (models stop near 4k)."""


class EmbeddingCache:
    """(spec key, "doc" or "query", text sha256) -> float32 vector, over any KeyValueStore.

    The store is wrapped in a `SignedStore` unless it is one. A row that fails its tag or
    is not 1 to MAX_DIM finite float32 values reads as absent and is counted in
    `rejected`; rows written by a harness before rows were signed carry no tag, so those
    texts are embedded once more.
    """

    def __init__(self, where: str | os.PathLike[str] | KeyValueStore) -> None:
        if isinstance(where, (str, os.PathLike)):
            where = SQLiteStore(where, "embeddings")
        self.store: SignedStore = (
            where if isinstance(where, SignedStore) else SignedStore(where, "embeddings")
        )

    @property
    def rejected(self) -> int:
        """Rows read as absent so far because they failed a check."""
        return self.store.rejected

    @staticmethod
    def _key(spec: str, kind: str, sha: str) -> str:
        return f"{spec}:{kind}:{sha}"

    def get_many(self, spec: str, kind: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those texts (by sha256) that have one (and a sane row)."""
        keys = {self._key(spec, kind, s): s for s in shas}
        out: dict[str, np.ndarray] = {}
        bad = 0
        for k, v in self.store.get_many(list(keys)).items():
            vec = _vector(v)
            if vec is None:
                bad += 1
            else:
                out[keys[k]] = vec
        self.store.reject(bad, "are not a float32 vector")
        return out

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


def _vector(raw: bytes) -> np.ndarray | None:
    """`raw` as a float32 vector if it has a sane length and only finite values."""
    if not raw or len(raw) % 4 or len(raw) > 4 * MAX_DIM:
        return None
    vec = np.frombuffer(raw, dtype=np.float32)
    return vec if bool(np.isfinite(vec).all()) else None
