"""FAISS vector index through langchain_community, cached on disk.

The cache key is (corpus content hash, splitter spec, embedder spec): k and anything
downstream of retrieval never force a rebuild. On disk an entry is `index.faiss` (written
by faiss.write_index), `chunks.json` and, written last, `meta.json`; an entry without
meta.json is incomplete and rebuilt. Nothing is ever unpickled: the docstore is rebuilt
from our own JSON, so a file placed in the cache by someone else cannot run code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_community.vectorstores.utils import DistanceStrategy
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from loguru import logger

from harness.types import Chunk, ComponentSpec

INDEX_FORMAT = 1


def index_key(corpus_sha: str, splitter: ComponentSpec, embedder: ComponentSpec) -> str:
    """The index cache key: a hash of the corpus, splitter, embedder and INDEX_FORMAT, so a
    change to any of them builds a new index.
    """
    payload = json.dumps(
        {
            "format": INDEX_FORMAT,
            "corpus": corpus_sha,
            "splitter": splitter.to_dict(),
            "embedder": embedder.to_dict(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def is_cached(key: str, cache_dir: str | os.PathLike[str]) -> bool:
    """Whether a complete index entry for `key` is in the cache (meta.json is written last)."""
    return (Path(cache_dir) / "index" / key / "meta.json").is_file()


@dataclass
class Index:
    """A built or loaded index and the chunks it holds, by id."""

    key: str
    store: FAISS
    chunks: dict[str, Chunk]
    from_cache: bool

    def vectors(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """The stored (unit) vectors of these chunks, one row each."""
        if not hasattr(self, "_positions"):
            self._positions = {cid: pos for pos, cid in self.store.index_to_docstore_id.items()}
        return np.vstack([self.store.index.reconstruct(self._positions[c]) for c in chunk_ids])


def _store(embedder: Embeddings, faiss_index: object, chunks: Sequence[Chunk]) -> FAISS:
    docstore = InMemoryDocstore(
        {
            c.chunk_id: LCDocument(
                page_content=c.text, metadata={"chunk_id": c.chunk_id}, id=c.chunk_id
            )
            for c in chunks
        }
    )
    return FAISS(
        embedding_function=embedder,
        index=faiss_index,
        docstore=docstore,
        index_to_docstore_id={i: c.chunk_id for i, c in enumerate(chunks)},
        distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
    )


def load_or_build_index(
    chunks: Sequence[Chunk], embedder: Embeddings, *, key: str, cache_dir: str | os.PathLike[str]
) -> Index:
    """Load the index for `key` from the cache, or embed `chunks` and build it.

    The cached entry is trusted only when it was written by this function (meta.json
    carries the key and the chunk count).
    """
    import faiss

    folder = Path(cache_dir) / "index" / key
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
            stored = [Chunk.from_dict(d) for d in json.loads((folder / "chunks.json").read_text())]
            if meta.get("key") == key and meta.get("n_chunks") == len(stored):
                faiss_index = faiss.read_index(str(folder / "index.faiss"))
                if faiss_index.ntotal == len(stored):
                    logger.info("index {} loaded from cache ({} chunks)", key, len(stored))
                    return Index(
                        key,
                        _store(embedder, faiss_index, stored),
                        {c.chunk_id: c for c in stored},
                        True,
                    )
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            logger.warning("index cache entry {} unreadable ({}); rebuilding", key, exc)

    if not chunks:
        raise ValueError("cannot build an index from zero chunks")
    logger.info("building index {} from {} chunks", key, len(chunks))
    vectors = embedder.embed_documents([c.text for c in chunks])
    store = FAISS.from_embeddings(
        text_embeddings=[(c.text, v) for c, v in zip(chunks, vectors, strict=True)],
        embedding=embedder,
        metadatas=[{"chunk_id": c.chunk_id} for c in chunks],
        ids=[c.chunk_id for c in chunks],
        distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
    )
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
    try:
        faiss.write_index(store.index, str(tmp / "index.faiss"))
        (tmp / "chunks.json").write_text(json.dumps([c.to_dict() for c in chunks]))
        (tmp / "meta.json").write_text(json.dumps({"key": key, "n_chunks": len(chunks)}))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Index(key, store, {c.chunk_id: c for c in chunks}, False)
