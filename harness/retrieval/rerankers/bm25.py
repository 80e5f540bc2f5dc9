"""`bm25`: lexical BM25 rescoring of the dense candidates (LangChain's BM25Retriever
over the pool, with a tokenizer that lower-cases and splits on words)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.retrieval.rerankers.base import Candidate, RerankContext, tokenize, top
from harness.types import ComponentSpec


class BM25Reranker:
    """BM25 over the candidate pool only: lexical evidence re-orders what dense found."""

    pool = "dense"

    def __init__(self, fetch_k: int) -> None:
        self.spec = ComponentSpec(
            name="bm25", args={"fetch_k": fetch_k, "tokenizer": "lower-words"}
        )

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """BM25 scores over the candidate pool only; an empty pool gives []."""
        from langchain_community.retrievers import BM25Retriever

        if not candidates:
            return []
        retriever = BM25Retriever.from_texts([c.text for c in candidates], preprocess_func=tokenize)
        scores = retriever.vectorizer.get_scores(tokenize(question))
        return top(candidates, list(scores), k)


def build(ctx: RerankContext) -> BM25Reranker:
    """The reranker for this experiment."""
    return BM25Reranker(ctx.depth)
