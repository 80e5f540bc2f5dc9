"""Retrieve the top k chunks for each question from a FAISS store."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_community.vectorstores import FAISS

from harness.types import Hit


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
