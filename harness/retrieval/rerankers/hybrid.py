"""`hybrid`: dense and BM25 each retrieve `fetch_k` from the whole corpus; the lists are
fused by weighted reciprocal rank (LangChain's EnsembleRetriever, c = 60)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.components.contract import RerankCost, RetrieverExport
from harness.config import RetrievalConfig
from harness.errors import ConfigError
from harness.retrieval.rerankers.base import Candidate, RerankContext, tokenize
from harness.types import Chunk, ComponentSpec

RRF_C = 60


class HybridReranker:
    """Dense + BM25 over the whole corpus, fused by weighted reciprocal rank."""

    pool = "corpus"

    def __init__(
        self,
        fetch_k: int,
        weights: tuple[float, float],
        chunks: Sequence[Chunk],
        dense_retriever: Any,
        cosine: Callable[[str, Sequence[str]], list[float]],
    ) -> None:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever

        self.spec = ComponentSpec(
            name="hybrid",
            args={
                "fetch_k": fetch_k,
                "weights": list(weights),
                "c": RRF_C,
                "tokenizer": "lower-words",
            },
        )
        bm25 = BM25Retriever.from_texts(
            [c.text for c in chunks],
            metadatas=[{"chunk_id": c.chunk_id} for c in chunks],
            preprocess_func=tokenize,
            k=fetch_k,
        )
        self.weights = weights
        self.ensemble = EnsembleRetriever(
            retrievers=[dense_retriever, bm25], weights=list(weights), c=RRF_C, id_key="chunk_id"
        )
        self._dense, self._bm25 = dense_retriever, bm25
        self._texts = {c.chunk_id: c.text for c in chunks}
        self._cosine = cosine

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """Ignores `candidates`: retrieves from the whole corpus itself. The rerank score is the
        fused score; `score` stays the cosine similarity to the question.
        """
        lists = [r.invoke(question) for r in (self._dense, self._bm25)]
        fused = self.ensemble.weighted_reciprocal_rank(lists)[:k]
        ids = [d.metadata["chunk_id"] for d in fused]
        # The fused score as EnsembleRetriever computes it: sum_i w_i / (rank_i + c).
        score = dict.fromkeys(ids, 0.0)
        for docs, w in zip(lists, self.weights, strict=True):
            for rank, d in enumerate(docs, start=1):
                if d.metadata["chunk_id"] in score:
                    score[d.metadata["chunk_id"]] += w / (rank + RRF_C)
        cos = self._cosine(question, ids)
        return [
            (Candidate(cid, self._texts[cid], c), score[cid])
            for cid, c in zip(ids, cos, strict=True)
        ]


def build(ctx: RerankContext) -> HybridReranker:
    """The reranker for this experiment."""
    w = ctx.config.hybrid_weights
    return HybridReranker(
        ctx.depth,
        (w[0], w[1]),
        list(ctx.chunks),
        ctx.store.as_retriever(search_kwargs={"k": ctx.depth}),
        lambda q, ids: [float(v) for v in ctx.vectors(ids) @ ctx.query_vector(q)],
    )


def validate(config: RetrievalConfig, where: str) -> None:
    """`retrieval.hybrid_weights`: two weights >= 0, not both 0."""
    w = config.hybrid_weights
    if len(w) != 2 or any(x < 0 for x in w) or not sum(w):
        raise ConfigError(
            where, "retrieval.hybrid_weights", f"expected two weights >= 0, got {list(w)}"
        )


def estimate(config: RetrievalConfig) -> RerankCost:
    """Free: dense and BM25 over the corpus."""
    return RerankCost()


def export(config: RetrievalConfig) -> RetrieverExport:
    """EnsembleRetriever of dense and BM25 over the corpus (weighted reciprocal rank)."""
    weights = [float(w) for w in config.hybrid_weights]
    return RetrieverExport(
        imports=(
            "from langchain_classic.retrievers import EnsembleRetriever",
            "from langchain_community.retrievers import BM25Retriever",
        ),
        words=True,
        body=(
            f'    dense = store.as_retriever(search_kwargs={{"k": {config.fetch_k!r}}})',
            "    bm25 = BM25Retriever.from_documents(",
            f"        chunks, k={config.fetch_k!r}, preprocess_func=words",
            "    )",
            "    ensemble = EnsembleRetriever(",
            f"        retrievers=[dense, bm25], weights={weights!r}, c={RRF_C!r}",
            "    )",
            "",
            "    def retrieve(question):",
            "        # Weighted reciprocal-rank fusion of dense and BM25 over the whole corpus.",
            f"        return ensemble.invoke(question)[:{config.k!r}]",
        ),
    )
