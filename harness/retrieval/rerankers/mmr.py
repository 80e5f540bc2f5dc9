"""`mmr`: maximal marginal relevance over the dense candidates, trading similarity to
the question against similarity to chunks already picked (lambda)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.components.contract import RerankCost, RetrieverExport
from harness.config import RetrievalConfig
from harness.errors import ConfigError
from harness.retrieval.rerankers.base import Candidate, RerankContext
from harness.types import ComponentSpec


def mmr_select(
    query: np.ndarray, vectors: np.ndarray, k: int, lambda_mult: float
) -> list[tuple[int, float]]:
    """Maximal marginal relevance: (index, MMR score) of k picks, in pick order.

    With unit vectors, sim = dot product. Each step picks the unpicked i maximising
    MMR(i) = lambda * sim(q, d_i) - (1 - lambda) * max_{j picked} sim(d_i, d_j)
    (the max term is 0 for the first pick). lambda = 1 is the dense order.
    Edge cases: k >= n returns every index; n = 0 returns [].
    """
    n = len(vectors)
    if n == 0:
        return []
    rel = vectors @ query
    sims = vectors @ vectors.T
    picked: list[tuple[int, float]] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for step in range(min(k, n)):
        red = np.where(np.isinf(redundancy), 0.0, redundancy) if step else np.zeros(n)
        score = lambda_mult * rel - (1 - lambda_mult) * red
        score[~available] = -np.inf
        i = int(np.argmax(score))
        picked.append((i, float(score[i])))
        available[i] = False
        redundancy = np.maximum(redundancy, sims[i])
    return picked


class MMRReranker:
    """Maximal marginal relevance over the dense candidates, with their stored vectors."""

    pool = "dense"

    def __init__(
        self,
        fetch_k: int,
        lambda_mult: float,
        vectors: Callable[[Sequence[str]], np.ndarray],
        query_vector: Callable[[str], np.ndarray],
    ) -> None:
        self.spec = ComponentSpec(name="mmr", args={"fetch_k": fetch_k, "lambda": lambda_mult})
        self.lambda_mult = lambda_mult
        self._vectors = vectors
        self._query = query_vector

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """The candidates in MMR pick order, each with its MMR score; an empty pool gives []."""
        if not candidates:
            return []
        vecs = self._vectors([c.chunk_id for c in candidates])
        picks = mmr_select(self._query(question), vecs, k, self.lambda_mult)
        return [(candidates[i], s) for i, s in picks]


def build(ctx: RerankContext) -> MMRReranker:
    """The reranker for this experiment."""
    return MMRReranker(ctx.depth, ctx.config.mmr_lambda, ctx.vectors, ctx.query_vector)


def validate(config: RetrievalConfig, where: str) -> None:
    """`retrieval.mmr_lambda`: 0..1."""
    if not 0 <= config.mmr_lambda <= 1:
        raise ConfigError(where, "retrieval.mmr_lambda", f"expected 0..1, got {config.mmr_lambda}")


def estimate(config: RetrievalConfig) -> RerankCost:
    """Free: stored vectors."""
    return RerankCost()


def export(config: RetrievalConfig) -> RetrieverExport:
    """The FAISS store's own MMR search."""
    kwargs = {"k": config.k, "fetch_k": config.fetch_k, "lambda_mult": float(config.mmr_lambda)}
    return RetrieverExport(
        body=(
            "    retriever = store.as_retriever(",
            '        search_type="mmr",',
            f"        search_kwargs={kwargs!r},",
            "    )",
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        )
    )
