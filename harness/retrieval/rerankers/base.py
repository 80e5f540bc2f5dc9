"""The reranker interface: turn a candidate pool (`fetch_k` chunks) into the top k.

Rerankers, each in its own module of this package, registered in
`harness.components.registry`, and logged as {name, args}:

- `none`: the dense order, cut to k.
- `bm25`: lexical BM25 rescoring of the dense candidates (LangChain's BM25Retriever over
  the pool, with a tokenizer that lower-cases and splits on words).
- `hybrid`: dense and BM25 each retrieve `fetch_k` from the whole corpus; the lists are
  fused by weighted reciprocal rank (LangChain's EnsembleRetriever, c = 60).
- `mmr`: maximal marginal relevance over the dense candidates, trading similarity to the
  question against similarity to chunks already picked (lambda).
- `cross-encoder`: a sentence-transformers cross-encoder (LangChain's
  HuggingFaceCrossEncoder) from a local folder or model name the user gives.
- `llm`: pointwise P(relevant) from an OpenAI-compatible model, through the judge's own
  code path and verdict cache.

Every hit keeps its first-stage score (cosine similarity to the question, whatever
the reranker) and the reranker's own score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harness.config import RetrievalConfig
from harness.types import Chunk, ComponentSpec, Hit
from harness.words import words


def tokenize(text: str) -> list[str]:
    """Lower-cased words: what BM25 matches on ("Leave," and "leave" are one term; a run
    of Chinese or Japanese characters reads as its character pairs, `harness.words`)."""
    return words(text)


@dataclass(frozen=True)
class Candidate:
    """A chunk in the pool a reranker chooses from."""

    chunk_id: str
    text: str
    score: float
    """First-stage cosine similarity to the question."""


class Reranker(Protocol):
    """What the retrieval stage needs of a reranker: its logged spec, its pool and `rerank`."""

    spec: ComponentSpec
    pool: str
    """"dense": rerank the dense top fetch_k; "corpus": rank the whole corpus itself."""

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """The top k candidates, best first, each with its rerank score (or None)."""
        ...


def top(
    cands: Sequence[Candidate], scores: Sequence[float], k: int
) -> list[tuple[Candidate, float | None]]:
    """The k best candidates by `scores`, each with its score; ties go to the higher dense
    score, then to the earlier candidate.
    """
    order = sorted(range(len(cands)), key=lambda i: (-scores[i], -cands[i].score, i))
    return [(cands[i], float(scores[i])) for i in order[:k]]


LLMGrader = Callable[[], tuple[Callable[[str, str], tuple[float, bool]], ComponentSpec, bool]]
"""Gives (grade(question, text) -> (P(relevant), relevant), the model's spec, whether it
is the judge's own model); called only when an llm reranker is built."""


@dataclass(frozen=True)
class RerankContext:
    """What a reranker's `build` may draw on: the experiment's retrieval settings and the
    index it reranks over. Each reranker takes only what it needs."""

    config: RetrievalConfig
    depth: int
    """Dense candidates fetched per question (see `first_stage_depth`)."""
    chunks: Sequence[Chunk]
    store: Any
    """The FAISS vector store (LangChain), for rerankers that search the corpus themselves."""
    vectors: Callable[[Sequence[str]], np.ndarray]
    """Stored unit vectors of chunks, by id."""
    query_vector: Callable[[str], np.ndarray]
    """The unit vector of a question (cached)."""
    llm_grader: LLMGrader | None = None


def rerank_hits(
    reranker: Reranker, question: str, candidates: Sequence[Candidate], k: int
) -> list[Hit]:
    """Hits 1..k from a reranker's output, with both scores."""
    out = reranker.rerank(question, candidates, k)
    return [
        Hit(chunk_id=c.chunk_id, rank=r, score=c.score, rerank_score=s)
        for r, (c, s) in enumerate(out, start=1)
    ]


def first_stage_depth(config: RetrievalConfig) -> int:
    """How many dense candidates to fetch: k without a reranker, else max(fetch_k, k)."""
    return config.k if config.reranker == "none" else max(config.fetch_k, config.k)
