"""The judge interface: everything its callers use, declared in one place.

`Judge` is the protocol the pipeline, the sweep, the llm reranker and judge-check rely
on. Judges are asynchronous first: `judge_pairs` awaits `agrade`, `agrade_both` and
`agrade_list` on one event loop. `BaseJudge` gives a backend the rest of the surface
from one method: an `async agrade` (preferred: no thread per call), or a blocking
`grade` (run on a worker thread); both criteria and a list of passages are then asked
one criterion at a time, and the blocking methods wait for the asynchronous ones.
tests/judge/test_contract.py runs the same suite against every implementation: the
scripted judge, the chat judge against a fake endpoint, and the chat judge against a
real llama.cpp server.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from harness.config import CriteriaConfig
from harness.llm import aio
from harness.types import ComponentSpec, CriterionVerdict

PAIRWISE_MODES = ("both", "graded", "criteria")
"""Modes that judge both criteria of a (question, chunk) in one call (`agrade_both`)."""

QUESTION_FIRST_MODES = ("criteria",)
"""Modes whose prompt puts the question before the passage: against a server with a
prompt cache, `judge_pairs` judges a question's pairs back to back (others: a chunk's)."""

VARIANTS = ("main", "reworded")
"""Prompt wordings: the main one, and the same criteria in other words (judge-check)."""

Pair = tuple[CriterionVerdict, CriterionVerdict]
"""(relevant, complete) for one (question, chunk)."""


@runtime_checkable
class Judge(Protocol):
    """What every caller may use of a judge."""

    spec: ComponentSpec
    """The judge as written to the log: enough to rebuild it (never a key)."""
    mode: str
    """One of harness.config.JUDGE_MODES: how `judge_pairs` spends calls."""
    concurrency: int
    """How many calls may be in flight at once (1 for a judge that is not thread-safe)."""
    prompt_cache: bool
    """Whether the pairs that share a chunk are judged back to back (`judge_pairs`)."""

    def identity(self) -> str:
        """Everything that changes an answer apart from the inputs: model, prompt version,
        sampling settings, mode. Part of the verdict cache key."""
        ...

    async def agrade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """One criterion for one (question, chunk). Returns an error verdict for a
        malformed answer; raises JudgeUnavailable when the endpoint cannot serve."""
        ...

    async def agrade_both(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """(relevant, complete) for one (question, chunk). The cost of a shared call is
        booked on the relevant verdict."""
        ...

    async def agrade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[Pair]:
        """(relevant, complete) for every passage of a question, in the order given. The
        cost of a shared call is booked on the first passage's relevant verdict."""
        ...

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """`agrade`, waited for (from a thread without an event loop)."""
        ...

    def grade_both(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """`agrade_both`, waited for."""
        ...

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[Pair]:
        """`agrade_list`, waited for."""
        ...

    def with_options(self, *, mode: str | None = None, variant: str | None = None) -> Judge:
        """The same judge (endpoint, model, key) with another mode or prompt variant."""
        ...

    def warm(self, calls: int) -> None:
        """On the event loop of `harness.llm.aio`, before up to `calls` calls in flight:
        get ready for them without waiting (a judge over HTTP starts opening as many
        connections); nothing for a judge that needs no preparing."""
        ...


NOT_ASKED = "not asked: judged not relevant"
"""The reason of the implied "no" for "complete" of a chunk judged not relevant."""


def not_asked() -> CriterionVerdict:
    """The "complete" of a chunk judged not relevant: implied "no", never paid for."""
    return CriterionVerdict(criterion="complete", value=False, reason=NOT_ASKED)


async def relevant_first(
    ask: Callable[[str, str], Awaitable[CriterionVerdict]], criteria: CriteriaConfig
) -> Pair:
    """(relevant, complete) from `ask(criterion, criterion text)`, asking "complete" only
    of a chunk judged relevant (`complete_after`)."""
    rel = await ask("relevant", criteria.relevant)
    return rel, await complete_after(rel, lambda: ask("complete", criteria.complete))


async def complete_after(
    rel: CriterionVerdict, ask_complete: Callable[[], Awaitable[CriterionVerdict]]
) -> CriterionVerdict:
    """The "complete" verdict of a chunk whose relevance is `rel`: asked only of a chunk
    judged relevant, since a complete but irrelevant chunk grades 0 anyway, so the answer
    could not change a metric. Otherwise the implied "no" (`not_asked`), or an error when
    relevance failed, at no cost."""
    if rel.value is True:
        return await ask_complete()
    if rel.error:
        return CriterionVerdict("complete", None, error="not asked: relevance failed")
    return not_asked()


class BaseJudge:
    """The Judge surface from one method: subclasses set `spec`, implement `identity`, and
    either `async agrade` (preferred) or a blocking `grade` (then run on a worker thread:
    one per `judge_pairs` worker, so a judge that is not thread-safe sets concurrency 1).
    `agrade_both` and `agrade_list` ask one criterion at a time (`relevant_first`) unless
    overridden; a blocking `grade_both` or `grade_list` of a subclass is used likewise.
    The blocking methods wait for the asynchronous ones on the shared event loop."""

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

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(BaseJudge, name)

    async def agrade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """See `Judge.agrade`: the subclass's blocking `grade` on a worker thread, unless
        the subclass defines `agrade` itself."""
        if not self._overrides("grade"):
            raise NotImplementedError(f"{type(self).__name__} defines neither agrade nor grade")
        return await aio.in_thread(self.grade, question, chunk_text, criterion, criterion_text)

    async def agrade_both(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """See `Judge.agrade_both`: two `agrade` calls, "complete" only of a relevant chunk."""
        if self._overrides("grade_both"):
            return await aio.in_thread(self.grade_both, question, chunk_text, criteria)

        async def ask(criterion: str, text: str) -> CriterionVerdict:
            return await self.agrade(question, chunk_text, criterion, text)

        return await relevant_first(ask, criteria)

    async def agrade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[Pair]:
        """See `Judge.agrade_list`: each passage on its own through `agrade_both`."""
        if self._overrides("grade_list"):
            return await aio.in_thread(self.grade_list, question, chunk_texts, criteria)
        return [await self.agrade_both(question, t, criteria) for t in chunk_texts]

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """See `Judge.grade`: the subclass's `agrade`, waited for."""
        if not self._overrides("agrade"):
            raise NotImplementedError(f"{type(self).__name__} defines neither agrade nor grade")
        return aio.run(self.agrade(question, chunk_text, criterion, criterion_text))

    def grade_both(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """See `Judge.grade_both`."""
        return aio.run(self.agrade_both(question, chunk_text, criteria))

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[Pair]:
        """See `Judge.grade_list`."""
        return aio.run(self.agrade_list(question, chunk_texts, criteria))

    def warm(self, calls: int) -> None:
        """See `Judge.warm`: nothing to prepare."""

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
