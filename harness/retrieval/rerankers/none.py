"""`none`: the dense order, cut to k."""

from __future__ import annotations

from collections.abc import Sequence

from harness.components.contract import RerankCost, RetrieverExport
from harness.config import RetrievalConfig
from harness.retrieval.rerankers.base import Candidate, RerankContext
from harness.types import ComponentSpec


class NoReranker:
    """No reranking: the dense order, cut to k."""

    pool = "dense"

    def __init__(self) -> None:
        self.spec = ComponentSpec(name="none", args={})

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """The first k candidates as they came, with no rerank score (None)."""
        return [(c, None) for c in candidates[:k]]


def build(ctx: RerankContext) -> NoReranker:
    """The reranker for this experiment."""
    return NoReranker()


def validate(config: RetrievalConfig, where: str) -> None:
    """No settings of its own."""


def estimate(config: RetrievalConfig) -> RerankCost:
    """Free: the dense order."""
    return RerankCost()


def export(config: RetrievalConfig) -> RetrieverExport:
    """The plain top k of the FAISS store."""
    return RetrieverExport(
        body=(
            f'    retriever = store.as_retriever(search_kwargs={{"k": {config.k!r}}})',
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        )
    )
