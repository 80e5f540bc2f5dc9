"""Retrieve the top k chunks for each question from a FAISS store."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_community.vectorstores import FAISS

from harness.retrieval.rerankers.base import tokenize
from harness.types import Chunk, Hit


def retrieve(store: FAISS, query_vectors: Sequence[Sequence[float]], k: int) -> list[list[Hit]]:
    """Top-k hits per query vector, best first; `score` is cosine similarity.

    Fewer than k hits come back when the index holds fewer than k chunks.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    out: list[list[Hit]] = []
    for vec in query_vectors:
        pairs = store.similarity_search_with_score_by_vector(list(vec), k=k)
        out.append(
            [
                Hit(chunk_id=str(doc.metadata["chunk_id"]), rank=rank, score=float(score))
                for rank, (doc, score) in enumerate(pairs, start=1)
            ]
        )
    return out


def bm25_search(chunks: Sequence[Chunk], k: int) -> Callable[[str], list[str]]:
    """BM25 over every chunk given (LangChain's BM25Retriever, with the tokenizer the bm25
    and hybrid rerankers use): a function from a question to the ids of its top k chunks,
    best first. k = 0 or no chunks gives a function that returns []."""
    if k < 1 or not chunks:
        return lambda question: []
    from langchain_community.retrievers import BM25Retriever

    retriever = BM25Retriever.from_texts(
        [c.text for c in chunks],
        metadatas=[{"chunk_id": c.chunk_id} for c in chunks],
        preprocess_func=tokenize,
        k=min(k, len(chunks)),
    )
    return lambda question: [str(d.metadata["chunk_id"]) for d in retriever.invoke(question)]
