"""Embedders behind a vector cache keyed by (embedder spec, text hash).

Vectors are L2-normalised so that inner product is cosine. Which embedders exist is the
registry's business (`harness.components.registry.EMBEDDERS`); each lives in its own module.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence

import numpy as np
from langchain_core.embeddings import Embeddings
from loguru import logger

from harness.stores import EmbeddingCache
from harness.types import ComponentSpec

SLICE = 512
"""Texts sent to the model between two writes to the cache (and progress lines): a
crash, Ctrl-C or kill loses one slice's vectors at most, and a rerun embeds only the
texts not yet cached (a hosted embedder's are paid for)."""


def spec_key(spec: ComponentSpec) -> str:
    """A short hash of the embedder spec: vectors are cached under it, so any change to the
    spec's name or args embeds again.
    """
    return hashlib.sha256(json.dumps(spec.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def _normalise(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


class CachedEmbedder(Embeddings):
    """LangChain Embeddings that embed each distinct text once per embedder spec.

    `embedded_texts` counts texts actually sent to the model (the cost), across calls.
    """

    _inner: Embeddings | Callable[[], Embeddings]

    @property
    def inner(self) -> Embeddings:
        """The wrapped model, built from its factory on first use."""
        if not isinstance(self._inner, Embeddings):
            self._inner = self._inner()
        return self._inner

    def __init__(
        self,
        inner: Embeddings | Callable[[], Embeddings],
        spec: ComponentSpec,
        cache: EmbeddingCache | None = None,
    ) -> None:
        # A factory defers loading the model (seconds) until a text is not in the cache.
        self._inner = inner
        self.spec = spec
        self.cache = cache
        self._key = spec_key(spec)
        self.embedded_texts = 0

    def _embed(self, texts: Sequence[str], kind: str) -> list[list[float]]:
        shas = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = self.cache.get_many(self._key, kind, shas) if self.cache is not None else {}
        todo = list(
            {sha: t for sha, t in zip(shas, texts, strict=True) if sha not in found}.items()
        )
        if todo:
            logger.info("embedding {} texts with {}", len(todo), self.spec.name)
        t0 = time.monotonic()
        for start in range(0, len(todo), SLICE):
            part = todo[start : start + SLICE]
            if kind == "query":
                vectors = [self.inner.embed_query(t) for _, t in part]
            else:
                vectors = self.inner.embed_documents([t for _, t in part])
            self.embedded_texts += len(part)
            new = {
                sha: _normalise(np.asarray(v, dtype=np.float32))
                for (sha, _), v in zip(part, vectors, strict=True)
            }
            if self.cache is not None:  # kept slice by slice: a stop loses one slice at most
                self.cache.put_many(self._key, kind, new)
            found.update(new)
            done = start + len(part)
            if done < len(todo):
                spent = time.monotonic() - t0
                logger.info(
                    "embedded {} of {} texts ({:.0f} s, about {:.0f} s left)",
                    done,
                    len(todo),
                    spent,
                    spent / done * (len(todo) - done),
                )
        return [found[sha].tolist() for sha in shas]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Unit document vectors; only texts not in the cache go to the model, SLICE at
        a time, each slice cached as it is done."""
        return self._embed(texts, "doc")

    def embed_query(self, text: str) -> list[float]:
        """A unit query vector, cached apart from documents (a model may embed them differently)."""
        return self._embed([text], "query")[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Many queries at once: one cache lookup, then `embed_query` for each one not cached."""
        return self._embed(texts, "query")
