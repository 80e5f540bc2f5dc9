"""`llm`: pointwise P(relevant) from an OpenAI-compatible model, through the judge's own
code path and verdict cache (the pipeline hands in the grading function)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.errors import HarnessError
from harness.retrieval.rerankers.base import Candidate, RerankContext, top
from harness.types import ComponentSpec


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
