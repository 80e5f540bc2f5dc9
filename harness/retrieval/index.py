"""FAISS vector index through langchain_community, cached on disk.

The cache key is (corpus content hash, splitter spec, embedder spec): k and anything
downstream of retrieval never force a rebuild. On disk an entry is `index.faiss` (written
by faiss.write_index), `chunks.json` and, written last, `meta.json`; an entry without
meta.json is incomplete and rebuilt. Nothing is ever unpickled: the docstore is rebuilt
from the chunks just made from the corpus, so a file placed in the cache by someone else
cannot run code.

A cache folder is shared and received like any other, so an entry is used only when it
checks out against the run's own chunks and embedder (`_load_entry`); anything else is
a warning naming the entry and what was wrong, and a rebuild, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_community.vectorstores.utils import DistanceStrategy
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from loguru import logger

from harness.types import Chunk, ComponentSpec

INDEX_FORMAT = 1
_META_MAX_BYTES = 1 << 16
_PROBE_MIN_COSINE = 0.995  # an embedder may not return bit-identical vectors twice
# faiss.write_index of an IndexFlatIP: b"IxFI", d (int32), ntotal (int64), 2 x int64,
# is_trained (1 byte), metric (int32, 0 = inner product), the number of floats (int64),
# then the floats
_FLAT_IP_MAGIC = b"IxFI"
_FLAT_IP_HEADER = 45


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


class _Untrusted(Exception):
    """Why a cache entry is not used (caught in `load_or_build_index`)."""


def _chunks_json(chunks: Sequence[Chunk]) -> bytes:
    """chunks.json exactly as this module writes it."""
    return json.dumps([c.to_dict() for c in chunks]).encode()


def _first_difference(path: Path, chunks: Sequence[Chunk]) -> str:
    """Which chunk of chunks.json differs from the corpus's, as far as it can be told."""
    try:
        stored = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return "is not the JSON this harness writes"
    if not isinstance(stored, list):
        return f"holds a JSON {type(stored).__name__}, not a list of chunks"
    for i, c in enumerate(chunks):
        if i >= len(stored):
            return f"ends after {len(stored)} chunks, the corpus gives {len(chunks)}"
        if stored[i] != json.loads(json.dumps(c.to_dict())):
            return f"differs from the corpus at chunk {i + 1} ({c.chunk_id})"
    return f"holds {len(stored)} chunks, the corpus gives {len(chunks)}"


def _file_size(path: Path) -> int:
    """The size of a regular file (a FIFO or a device would block or never end)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise _Untrusted(f"{path.name} unreadable ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise _Untrusted(f"{path.name} is not a regular file")
    return st.st_size


def _read_small(path: Path, limit: int) -> bytes:
    """A file of at most `limit` bytes."""
    if _file_size(path) > limit:
        raise _Untrusted(f"{path.name} is larger than {limit} bytes")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _Untrusted(f"{path.name} unreadable ({exc.strerror or exc})") from None


def _check_meta(folder: Path, key: str, n: int) -> None:
    """meta.json is an object naming this key and the corpus's chunk count."""
    try:
        meta: Any = json.loads(_read_small(folder / "meta.json", _META_MAX_BYTES))
    except (ValueError, RecursionError):
        raise _Untrusted("meta.json is not JSON") from None
    if not isinstance(meta, dict):
        raise _Untrusted(f"meta.json holds a JSON {type(meta).__name__}, not an object")
    if meta.get("key") != key:
        raise _Untrusted(f"meta.json names key {str(meta.get('key'))[:40]!r}, not {key!r}")
    stored_n = meta.get("n_chunks")
    if type(stored_n) is not int or stored_n != n:
        raise _Untrusted(f"meta.json says {str(stored_n)[:20]} chunks, the corpus gives {n}")


def _check_chunks(folder: Path, chunks: Sequence[Chunk]) -> None:
    """chunks.json is, byte for byte, the chunks just made from the corpus."""
    path = folder / "chunks.json"
    want = _chunks_json(chunks)
    try:
        same = _file_size(path) == len(want) and path.read_bytes() == want
    except OSError as exc:
        raise _Untrusted(f"chunks.json unreadable ({exc.strerror or exc})") from None
    if not same:
        raise _Untrusted(f"chunks.json {_first_difference(path, chunks)}")


def _check_faiss_file(path: Path, n: int, dim: int) -> None:
    """index.faiss is a flat inner-product index of n vectors of `dim` floats, checked
    from its header and size before faiss parses it (so faiss never reads, or allocates
    for, a file of any other shape)."""
    size = _file_size(path)
    try:
        with open(path, "rb") as f:
            head = f.read(_FLAT_IP_HEADER)
    except OSError as exc:
        raise _Untrusted(f"index.faiss unreadable ({exc.strerror or exc})") from None
    if len(head) < _FLAT_IP_HEADER or head[:4] != _FLAT_IP_MAGIC or head[33:37] != bytes(4):
        raise _Untrusted("index.faiss is not a flat inner-product FAISS index")
    stored_dim = int.from_bytes(head[4:8], "little", signed=True)
    stored_n = int.from_bytes(head[8:16], "little", signed=True)
    if stored_dim != dim:
        raise _Untrusted(f"index.faiss has dimension {stored_dim}, the embedder gives {dim}")
    if stored_n != n:
        raise _Untrusted(f"index.faiss holds {stored_n} vectors, the corpus gives {n} chunks")
    if int.from_bytes(head[37:45], "little") != n * dim or size != _FLAT_IP_HEADER + 4 * n * dim:
        raise _Untrusted(f"index.faiss has {size} bytes, not {_FLAT_IP_HEADER + 4 * n * dim}")


def _load_entry(folder: Path, key: str, chunks: Sequence[Chunk], embedder: Embeddings) -> Any:
    """The entry's faiss index, if it checks out against `chunks` and `embedder`: the
    meta.json of this key and chunk count, chunks.json equal to `chunks`, an index.faiss
    of that many vectors of the embedder's dimension, whose first and last vectors are the
    embedder's for those chunks (from the embedding cache, usually: this also catches an
    index swapped in from another corpus or embedder). Raises _Untrusted otherwise."""
    import faiss

    if not (folder / "meta.json").is_file():
        raise _Untrusted("no meta.json (an incomplete or foreign entry)")
    n = len(chunks)
    _check_meta(folder, key, n)
    _check_chunks(folder, chunks)
    probes = sorted({0, n - 1})
    want = np.asarray(embedder.embed_documents([chunks[i].text for i in probes]), np.float32)
    _check_faiss_file(folder / "index.faiss", n, want.shape[1])
    try:
        faiss_index = faiss.read_index(str(folder / "index.faiss"))
    except RuntimeError as exc:
        raise _Untrusted(f"index.faiss unreadable ({str(exc).splitlines()[0]})") from None
    if faiss_index.ntotal != n or faiss_index.d != want.shape[1]:
        raise _Untrusted("index.faiss does not hold the vectors its header announces")
    for i, vec in zip(probes, want, strict=True):
        got = np.asarray(faiss_index.reconstruct(i), np.float32)
        norms = float(np.linalg.norm(got) * np.linalg.norm(vec))
        cosine = float(got @ vec) / norms if norms > 0 else 0.0
        if not cosine >= _PROBE_MIN_COSINE:  # also false for NaN
            raise _Untrusted(
                f"index.faiss holds another vector for chunk {chunks[i].chunk_id} "
                "(an index of another corpus or embedder)"
            )
    return faiss_index


def load_or_build_index(
    chunks: Sequence[Chunk], embedder: Embeddings, *, key: str, cache_dir: str | os.PathLike[str]
) -> Index:
    """Load the index for `key` from the cache, or embed `chunks` and build it.

    `chunks` are the ones just made from the corpus: a cached entry is used only when it
    holds exactly these chunks and the embedder's vectors for them (`_load_entry`);
    otherwise it is rebuilt, with a warning naming the entry and what was wrong.
    """
    import faiss

    folder = Path(cache_dir) / "index" / key
    if chunks and (folder.exists() or folder.is_symlink()):
        try:
            faiss_index = _load_entry(folder, key, chunks, embedder)
        except _Untrusted as why:
            logger.warning("index cache entry {}: {}; rebuilding", folder, why)
        else:
            logger.info("index {} loaded from cache ({} chunks)", key, len(chunks))
            return Index(
                key, _store(embedder, faiss_index, chunks), {c.chunk_id: c for c in chunks}, True
            )

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
        (tmp / "chunks.json").write_bytes(_chunks_json(chunks))
        (tmp / "meta.json").write_text(json.dumps({"key": key, "n_chunks": len(chunks)}))
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Index(key, store, {c.chunk_id: c for c in chunks}, False)
