"""`bm25`: lexical BM25 rescoring of the dense candidates (LangChain's BM25Retriever
over the pool, with a tokenizer that lower-cases and splits on words)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.components.contract import RerankCost, RetrieverExport
from harness.config import RetrievalConfig
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


def validate(config: RetrievalConfig, where: str) -> None:
    """No settings of its own (fetch_k is every reranker's)."""


def estimate(config: RetrievalConfig) -> RerankCost:
    """Free: lexical scores over the pool."""
    return RerankCost()


def export(config: RetrievalConfig) -> RetrieverExport:
    """BM25Retriever over the dense top fetch_k, with harness's tokenizer."""
    return RetrieverExport(
        imports=("from langchain_community.retrievers import BM25Retriever",),
        words=True,
        body=(
            f'    dense = store.as_retriever(search_kwargs={{"k": {config.fetch_k!r}}})',
            "",
            "    def retrieve(question):",
            "        # BM25 re-orders the dense candidates only.",
            "        candidates = dense.invoke(question)",
            "        if not candidates:",
            "            return []",
            "        bm25 = BM25Retriever.from_documents(",
            f"            candidates, k={config.k!r}, preprocess_func=words",
            "        )",
            "        return bm25.invoke(question)",
        ),
    )
