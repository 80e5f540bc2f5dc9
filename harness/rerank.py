"""Second-stage ranking: turn a candidate pool (`fetch_k` chunks) into the top k.

Rerankers, each logged as {name, args}:

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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harness.config import RetrievalConfig
from harness.errors import ConfigError, HarnessError
from harness.types import Chunk, ComponentSpec, Hit

_WORD = re.compile(r"\w+", re.UNICODE)
RRF_C = 60


def tokenize(text: str) -> list[str]:
    """Lower-cased words: what BM25 matches on ("Leave," and "leave" are one term)."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    text: str
    score: float
    """First-stage cosine similarity to the question."""


class Reranker(Protocol):
    spec: ComponentSpec
    pool: str
    """"dense": rerank the dense top fetch_k; "corpus": rank the whole corpus itself."""

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """The top k candidates, best first, each with its rerank score (or None)."""
        ...


def _top(
    cands: Sequence[Candidate], scores: Sequence[float], k: int
) -> list[tuple[Candidate, float | None]]:
    order = sorted(range(len(cands)), key=lambda i: (-scores[i], -cands[i].score, i))
    return [(cands[i], float(scores[i])) for i in order[:k]]


class NoReranker:
    pool = "dense"

    def __init__(self) -> None:
        self.spec = ComponentSpec(name="none", args={})

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        return [(c, None) for c in candidates[:k]]


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
        from langchain_community.retrievers import BM25Retriever

        if not candidates:
            return []
        retriever = BM25Retriever.from_texts([c.text for c in candidates], preprocess_func=tokenize)
        scores = retriever.vectorizer.get_scores(tokenize(question))
        return _top(candidates, list(scores), k)


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
        if not candidates:
            return []
        vecs = self._vectors([c.chunk_id for c in candidates])
        picks = mmr_select(self._query(question), vecs, k, self.lambda_mult)
        return [(candidates[i], s) for i, s in picks]


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


class CrossEncoderReranker:
    pool = "dense"

    def __init__(self, fetch_k: int, model: str) -> None:
        if not model:
            raise ConfigError(
                "",
                "retrieval.cross_encoder",
                "the cross-encoder reranker needs a model folder or name (no weights ship with harness)",
            )
        self.spec = ComponentSpec(name="cross-encoder", args={"fetch_k": fetch_k, "model": model})
        try:
            from langchain_community.cross_encoders import HuggingFaceCrossEncoder

            self.model = HuggingFaceCrossEncoder(model_name=model, model_kwargs={"device": "cpu"})
        except Exception as exc:  # missing folder, hub unreachable, not a cross-encoder
            raise HarnessError(
                f"retrieval.cross_encoder: cannot load {model!r} as a cross-encoder "
                f"({type(exc).__name__}: {str(exc)[:200]}); give a local model folder"
            ) from None

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        if not candidates:
            return []
        scores = [float(s) for s in self.model.score([(question, c.text) for c in candidates])]
        return _top(candidates, scores, k)


class LLMReranker:
    """Pointwise: P(relevant) for each candidate from an OpenAI-compatible model, through
    the judge's code path (so its answers are cached like verdicts)."""

    pool = "dense"

    def __init__(
        self,
        fetch_k: int,
        grade: Callable[[str, str], tuple[float, bool]],
        model_spec: ComponentSpec,
        same_as_judge: bool,
    ) -> None:
        self.spec = ComponentSpec(
            name="llm",
            args={
                "fetch_k": fetch_k,
                "model": model_spec.to_dict(),
                "same_model_as_judge": same_as_judge,
            },
        )
        self._grade = grade

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        scores = [self._grade(question, c.text)[0] for c in candidates]
        return _top(candidates, scores, k)


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
