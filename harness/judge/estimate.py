"""What judging would cost, before anything is paid: calls and tokens after the cache."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.config import CriteriaConfig, JudgeConfig
from harness.judge.criteria import CRITERIA_MAX_TOKENS, build_messages_criteria
from harness.judge.fewshot import load_examples, render_examples
from harness.judge.grading import cached_pair
from harness.judge.prompts import (
    build_messages,
    build_messages_both,
    build_messages_extract,
    build_messages_graded,
    build_messages_list,
    extract_max_tokens,
)
from harness.llm.client import estimate_tokens, token_cost
from harness.stores import VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE


@dataclass(frozen=True)
class CallEstimate:
    """What judging some (question, chunk) pairs would still cost, before anything is paid.

    `calls_min` counts the calls that must happen (relevance in pointwise mode); "complete"
    is asked only of chunks judged relevant, so pointwise `calls_max` adds one call per
    open pair. Tokens are estimated from the real prompts at 4 characters a token.
    """

    distinct_pairs: int
    open_pairs: int
    """Distinct pairs with a verdict still to pay for."""
    calls_min: int
    calls_max: int
    prompt_tokens_min: int
    prompt_tokens_max: int
    completion_tokens_max: int

    def to_dict(self) -> dict[str, int]:
        """This estimate as plain JSON values."""
        return dict(self.__dict__)


def estimate_calls(
    pairs: Sequence[tuple[str, str]],
    *,
    identity: str,
    criteria: CriteriaConfig,
    mode: str,
    reasons: bool,
    cache: VerdictCache | None,
    extra_prompt_tokens: int = 0,
) -> CallEstimate:
    """The calls and tokens `judge_pairs` would pay for `pairs` with a judge of this
    `identity` and `mode`, after the verdict cache.

    pointwise: relevance for every open pair (calls_min), "complete" for those judged
    relevant (up to one more call each). both, graded, criteria: one call per open pair.
    listwise: one call per question with open pairs, listing only those pairs' chunks.
    `extra_prompt_tokens` are added to every call's prompt (few-shot examples in the
    system message: billed by a hosted endpoint, served by a local server's cache).
    """

    out_tokens = 60 if reasons else 2
    seen: set[tuple[str, str]] = set()
    by_question: dict[str, list[str]] = {}
    calls: list[tuple[bool, int, int]] = []  # (must happen, prompt tokens, max completion)
    n_open = 0
    for q, c in pairs:
        if (q, c) in seen:  # judge_pairs pays a repeated pair once
            continue
        seen.add((q, c))
        rel, comp = cached_pair(cache, identity, criteria, q, c) if cache else (None, None)
        if rel is not None and (not rel.value or comp is not None):
            continue  # nothing left to pay for this pair
        n_open += 1
        if mode == "listwise":
            by_question.setdefault(q, []).append(c)
        elif mode == "both":
            calls.append((True, estimate_tokens(build_messages_both(q, c, criteria)), 12))
        elif mode == "graded":
            calls.append((True, estimate_tokens(build_messages_graded(q, c, criteria)), 4))
        elif mode == "criteria":
            msgs = build_messages_criteria(q, c)
            calls.append((True, estimate_tokens(msgs), CRITERIA_MAX_TOKENS))
        else:  # pointwise, extractive, ensemble: relevance, then "complete" if relevant
            wordings = ("main", "reworded") if mode == "ensemble" else ("main",)
            for variant in wordings if rel is None else ():
                msgs = build_messages(q, c, criteria.relevant, reasons=reasons, variant=variant)
                calls.append((True, estimate_tokens(msgs), out_tokens))
            if mode == "extractive":
                msgs = build_messages_extract(q, c)
                calls.append((False, estimate_tokens(msgs), extract_max_tokens([c])))
                continue
            for variant in wordings:
                msgs = build_messages(q, c, criteria.complete, reasons=reasons, variant=variant)
                calls.append((False, estimate_tokens(msgs), out_tokens))
    for q, chunks in by_question.items():
        msgs = build_messages_list(q, chunks, criteria)
        calls.append((True, estimate_tokens(msgs), 14 * len(chunks) + 8))
    calls = [(m, t + extra_prompt_tokens, o) for m, t, o in calls]
    must = [c for c in calls if c[0]]
    return CallEstimate(
        distinct_pairs=len(seen),
        open_pairs=n_open,
        calls_min=len(must),
        calls_max=len(calls),
        prompt_tokens_min=sum(c[1] for c in must),
        prompt_tokens_max=sum(c[1] for c in calls),
        completion_tokens_max=sum(c[2] for c in calls),
    )


Estimator = Callable[[Sequence[tuple[str, str]], bool], CallEstimate]
"""(pairs, consult the verdict cache?) -> what judging them would cost."""


def lazy_pairs(
    questions: Sequence[Sequence[tuple[str, str]]],
    *,
    identity: str,
    criteria: CriteriaConfig,
    cache: VerdictCache | None,
    target: str,
    k: int,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(pairs lazy judging must pay for, pairs it may pay for), each question's pairs in
    rank order: a question's walk stops at the objective's cut-off `k` or at a cached
    verdict that settles it (`metrics.lazy.is_settled`); the first open pair of a walk
    must be judged, every open pair on it may be (its verdict is unknown, so the walk
    could go on past it)."""
    from harness.metrics.lazy import is_settled

    must: list[tuple[str, str]] = []
    may: list[tuple[str, str]] = []
    for pairs in questions:
        grades: list[int | None] = []
        first = True
        for q, c in pairs:
            if is_settled(grades, target, k):
                break
            rel, comp = cached_pair(cache, identity, criteria, q, c) if cache else (None, None)
            if rel is not None and not rel.value:
                grades.append(0)
            elif rel is not None and comp is not None:
                grades.append(2 if comp.value else 1)
            else:
                may.append((q, c))
                if first:
                    must.append((q, c))
                    first = False
                grades.append(None)
    return must, may


class _Estimator:
    """An Estimator that also bounds lazy judging (`lazy`)."""

    def __init__(self, config: JudgeConfig, identity: str, vc: VerdictCache) -> None:
        self.config, self.identity, self.vc = config, identity, vc
        examples = render_examples(load_examples(config), config.effective_mode)
        # the examples' share of every prompt (estimate_tokens' 4 characters a token)
        self.extra_prompt_tokens = len(examples) // 4

    def __call__(self, pairs: Sequence[tuple[str, str]], use_cache: bool) -> CallEstimate:
        return estimate_calls(
            pairs,
            identity=self.identity,
            criteria=self.config.criteria,
            mode=self.config.effective_mode,
            reasons=self.config.reasons,
            cache=self.vc if use_cache else None,
            extra_prompt_tokens=self.extra_prompt_tokens,
        )

    def lazy(
        self,
        questions: Sequence[Sequence[tuple[str, str]]],
        use_cache: bool,
        target: str,
        k: int,
    ) -> tuple[CallEstimate, CallEstimate]:
        """(what lazy judging must pay, what it may pay) for these questions' pairs, each
        in rank order (see `lazy_pairs`); the first's calls_min and the second's
        calls_max bound the calls."""
        must, may = lazy_pairs(
            questions,
            identity=self.identity,
            criteria=self.config.criteria,
            cache=self.vc if use_cache else None,
            target=target,
            k=k,
        )
        return self(must, use_cache), self(may, use_cache)


@contextlib.contextmanager
def judge_estimator(config: JudgeConfig, cache_dir: Path) -> Iterator[_Estimator]:
    """An Estimator for the configured judge (with `.lazy` for lazy judging's bounds),
    with the verdict cache open for as long as the context lasts. Nothing is called and
    no server is started."""
    from harness.judge.factory import judge_identity

    identity = judge_identity(config, cache_dir)
    vc = VerdictCache(cache_dir / VERDICTS_FILE)
    try:
        yield _Estimator(config, identity, vc)
    finally:
        vc.close()


def judge_cost(config: JudgeConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for these tokens at the judge's configured prices (None: no price set)."""
    return token_cost(
        config.price_prompt_per_mtok,
        config.price_completion_per_mtok,
        prompt_tokens,
        completion_tokens,
    )
