"""The judge interface: everything its callers use, declared in one place.

`Judge` is the protocol the pipeline, the sweep, the llm reranker and judge-check rely
on; `BaseJudge` gives a judge that can answer one criterion at a time (`grade`) the rest
of the surface for free (both criteria, a list of passages, other options), so a new
backend writes one method. tests/judge/test_contract.py runs the same suite against
every implementation: the scripted judge, the chat judge against a fake endpoint, and
the chat judge against a real llama.cpp server.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from harness.config import JUDGE_MODES, CriteriaConfig
from harness.types import ComponentSpec, CriterionVerdict

MODES = JUDGE_MODES
"""pointwise: a call per criterion; graded: one call per (question, chunk) for a 0-3
grade; extractive: relevance, then the answering sentence or NONE; ensemble: pointwise
over two wordings; both: a call per (question, chunk) for both criteria; listwise: a
call per question for all its open chunks."""

PAIRWISE_MODES = ("both", "graded")
"""Modes that judge both criteria of a (question, chunk) in one call (`grade_both`)."""

VARIANTS = ("main", "reworded")
"""Prompt wordings: the main one, and the same criteria in other words (judge-check)."""


@runtime_checkable
class Judge(Protocol):
    """What every caller may use of a judge."""

    spec: ComponentSpec
    """The judge as written to the log: enough to rebuild it (never a key)."""
    mode: str
    """One of MODES: how `judge_pairs` spends calls."""
    concurrency: int
    """How many calls may be in flight at once (1 for a judge that is not thread-safe)."""

    def identity(self) -> str:
        """Everything that changes an answer apart from the inputs: model, prompt version,
        sampling settings, mode. Part of the verdict cache key."""
        ...

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """One criterion for one (question, chunk). Returns an error verdict for a
        malformed answer; raises JudgeUnavailable when the endpoint cannot serve."""
        ...

    def grade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """(relevant, complete) for one (question, chunk). The cost of a shared call is
        booked on the relevant verdict."""
        ...

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[tuple[CriterionVerdict, CriterionVerdict]]:
        """(relevant, complete) for every passage of a question, in the order given. The
        cost of a shared call is booked on the first passage's relevant verdict."""
        ...

    def with_options(self, *, mode: str | None = None, variant: str | None = None) -> Judge:
        """The same judge (endpoint, model, key) with another mode or prompt variant."""
        ...


class BaseJudge:
    """The Judge surface from one method, `grade`: subclasses set `spec` and implement
    `identity` and `grade`; `grade_both` and `grade_list` ask one criterion at a time
    ("complete" only of a relevant chunk, as pointwise judging does)."""

    spec: ComponentSpec
    mode: str = "pointwise"
    variant: str = "main"
    concurrency: int = 1
    prompt_cache: bool = True
    """Whether the pairs that share a chunk are judged back to back (`judge_pairs`): a
    judge in this process or on a local llama.cpp server keeps the passage it just read;
    a hosted endpoint gains nothing, and a chunk group would become a critical path."""

    def identity(self) -> str:  # pragma: no cover - every subclass defines it
        """See `Judge.identity`; every subclass defines it."""
        raise NotImplementedError

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:  # pragma: no cover - every subclass defines it
        """See `Judge.grade`; every subclass defines it."""
        raise NotImplementedError

    def grade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """Two `grade` calls: "complete" is asked only of a chunk judged relevant; otherwise it
        is False, or an error when relevance failed, at no cost.
        """
        rel = self.grade(question, chunk_text, "relevant", criteria.relevant)
        if rel.value is True:
            comp = self.grade(question, chunk_text, "complete", criteria.complete)
        elif rel.error:
            comp = CriterionVerdict("complete", None, error="not asked: relevance failed")
        else:
            comp = CriterionVerdict("complete", False, reason="not asked: judged not relevant")
        return rel, comp

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[tuple[CriterionVerdict, CriterionVerdict]]:
        """Each passage on its own through `grade_both`: no call is shared."""
        return [self.grade_both(question, t, criteria) for t in chunk_texts]

    def with_options(self, *, mode: str | None = None, variant: str | None = None) -> BaseJudge:
        """A shallow copy with another mode or variant, both recorded in `spec`."""
        other = copy.copy(self)
        other.mode = mode or self.mode
        other.variant = variant or self.variant
        other.spec = ComponentSpec(
            name=self.spec.name,
            args={**self.spec.args, "mode": other.mode, "prompt_variant": other.variant},
        )
        return other
