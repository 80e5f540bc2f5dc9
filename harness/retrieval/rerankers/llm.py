"""`llm`: pointwise P(relevant) from an OpenAI-compatible model, through the judge's own
code path and verdict cache (the pipeline hands in the grading function)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.components.contract import RerankCost, RetrieverExport, export_note
from harness.config import RetrievalConfig
from harness.errors import ConfigError, HarnessError
from harness.retrieval.rerankers.base import Candidate, RerankContext, top
from harness.types import ComponentSpec

ENDPOINT = "llm reranker"
"""The endpoint it calls (`harness.components.endpoints`): retrieval.llm_base_url."""


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
        """P(relevant) from the model for each candidate: a call each, unless already cached."""
        scores = [self._grade(question, c.text)[0] for c in candidates]
        return top(candidates, scores, k)


def build(ctx: RerankContext) -> LLMReranker:
    """The reranker for this experiment; the grader comes from the pipeline."""
    if ctx.llm_grader is None:
        raise HarnessError("the llm reranker needs a judge")
    grade, model_spec, same = ctx.llm_grader()
    return LLMReranker(ctx.depth, grade, model_spec, same)


def validate(config: RetrievalConfig, where: str) -> None:
    """`retrieval.llm_*`: an endpoint needs a model; names on one line."""
    for name in ("llm_base_url", "llm_model", "llm_api_key_env"):
        if any(ch in getattr(config, name) for ch in "\r\n\x00"):
            raise ConfigError(where, f"retrieval.{name}", "expected a value on one line")
    if config.llm_base_url and not config.llm_model:
        raise ConfigError(
            where, "retrieval.llm_model", "an llm reranker endpoint needs a model name"
        )


def estimate(config: RetrievalConfig) -> RerankCost:
    """A model call per (question, dense candidate) not in the verdict cache."""
    return RerankCost(free=False, grades_candidates=True)


def export(config: RetrievalConfig) -> RetrieverExport:
    """No stock LangChain retriever: the dense candidates, with a marked step."""
    return RetrieverExport(
        body=(
            f'    dense = store.as_retriever(search_kwargs={{"k": {config.fetch_k!r}}})',
            "",
            "    def retrieve(question):",
            "        candidates = dense.invoke(question)",
            "        # harness's `llm` reranker (an LLM scores each candidate for the question)",
            "        # has no stock LangChain retriever: score `candidates` with your LLM here",
            "        # and keep the best k.",
            f"        return candidates[:{config.k!r}]",
        ),
        note=export_note("reranker", "llm"),
    )
