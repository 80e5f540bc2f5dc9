"""Second-stage ranking: rerankers built from the registry by name, and the hit list.

build_reranker(ctx)         the experiment's reranker (registry name -> module.build)
rerank_hits(r, q, cands, k) hits 1..k with first-stage and rerank scores
first_stage_depth(config)   how many dense candidates to fetch
"""

from __future__ import annotations

from harness.components.registry import RERANKERS, component
from harness.retrieval.rerankers.base import (
    Candidate,
    LLMGrader,
    RerankContext,
    Reranker,
    first_stage_depth,
    rerank_hits,
    tokenize,
)

__all__ = [
    "Candidate",
    "LLMGrader",
    "RerankContext",
    "Reranker",
    "build_reranker",
    "first_stage_depth",
    "rerank_hits",
    "tokenize",
]


def build_reranker(ctx: RerankContext) -> Reranker:
    """The reranker `ctx.config.reranker` names, built by its registered module."""
    return component(RERANKERS, ctx.config.reranker).build(ctx)
