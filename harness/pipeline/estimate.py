"""What a run would cost the judge, before anything is paid."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import corpus
from harness import judge as judge_stage
from harness.components.registry import load
from harness.config import ExperimentConfig, JudgeConfig, as_experiment
from harness.judge.injection import text_for_judge
from harness.llm.endpoint import reranker_endpoint
from harness.pipeline.failures import pool_pairs
from harness.pipeline.prepare import Inputs, cap_k, default_cache_dir, load_inputs, prepare
from harness.retrieval import index as index_stage
from harness.retrieval.embedders import embedder_spec
from harness.retrieval.rerankers import first_stage_depth


@dataclass(frozen=True)
class Planned:
    """What a run of a config would ask, before anything is paid."""

    pairs: list[tuple[str, str]]
    """(question, chunk text) pairs the judge would grade, each question's in rank order."""
    pool: list[tuple[str, str]]
    """Failure-pool pairs (an upper bound; only when failures are explained)."""
    n_questions: int
    exact: bool
    """Whether `pairs` are the real ones (else stand-ins of the same count)."""
    rerank_pairs: list[tuple[str, str]] = field(default_factory=list)
    """(question, candidate text) pairs a reranker that grades candidates would ask a
    model about (its module's `estimate`: `RerankCost.grades_candidates`)."""


def judged_pairs(
    config: ExperimentConfig, cache_dir: Path
) -> tuple[list[tuple[str, str]], int, bool]:
    """The (question, chunk text) pairs a run of `config` would judge, the number of
    questions, and whether the pairs are the real ones (see `plan`)."""
    p = plan(config, cache_dir, with_pool=False)
    return p.pairs, p.n_questions, p.exact


def plan(config: ExperimentConfig, cache_dir: Path, *, with_pool: bool) -> Planned:
    """The pairs a run of `config` would judge (and rerank, and explain failures with).

    The failure-pool pairs (only `with_pool`, failures.explain and failures.judge_pool)
    are an upper bound:
    every question assumed to fail and every chunk to be relevant (see
    `failures.pool_pairs`).

    Retrieval runs when it costs nothing (an embedder whose module's `estimate` says it
    is free, or an index already cached). With a paid embedder and no cached index
    nothing is embedded: each question gets k stand-in chunks of the corpus's average
    chunk length (an upper bound). A k above the number of chunks is lowered to it, with
    a warning, as a run would. A reranker whose ranking is paid for (its module's `estimate`) is not run: the dense
    candidates stand in for its top k (`exact` is then False), and each candidate is a
    rerank pair when the reranker grades candidates.
    """
    inputs = load_inputs(config)
    config = cap_k(config, len(inputs.chunks))
    cost = load("reranker", config.retrieval.reranker).estimate(config.retrieval)
    k = config.retrieval.k
    if not cost.free:  # rank by the dense order, as deep as the reranker looks
        depth = min(first_stage_depth(config.retrieval), max(1, len(inputs.chunks)))
        config = replace(config, retrieval=replace(config.retrieval, reranker="none", k=depth))
    p = _plan(config, cache_dir, inputs, with_pool=with_pool)
    if cost.free:
        return p
    ranked = [[pair] for pair in p.pairs] if not p.pairs else by_question(p.pairs)
    return Planned(
        pairs=[pair for question in ranked for pair in question[:k]],
        pool=p.pool,
        n_questions=p.n_questions,
        exact=False,
        rerank_pairs=list(p.pairs) if cost.grades_candidates else [],
    )


def _plan(config: ExperimentConfig, cache_dir: Path, inputs: Inputs, *, with_pool: bool) -> Planned:
    """`plan` for a config whose reranker ranks for free."""
    r = config.retrieval
    explain = with_pool and config.failures.explain and config.failures.judge_pool
    if not explain:  # nothing of the pool is built or searched (spans judge nothing)
        config = replace(config, failures=replace(config.failures, explain=False))

    def retrieved() -> Planned:
        prepared = prepare(config, cache_dir=cache_dir, inputs=inputs)
        pairs = [
            (q.text, text_for_judge(prepared.chunks[h.chunk_id].text, config.judge.injection))
            for q, hits in zip(prepared.questions, prepared.hits, strict=True)
            for h in hits
        ]
        pool = (
            pool_pairs(
                [q.text for q in prepared.questions],
                [[h.chunk_id for h in hits] for hits in prepared.hits],
                prepared.pool,
                lambda text: text_for_judge(text, config.judge.injection),
                [q.source for q in prepared.questions],
            )
            if prepared.pool is not None
            else []
        )
        return Planned(pairs, pool, len(prepared.questions), True)

    if load("embedder", config.embedder.name).estimate(config.embedder).free:
        return retrieved()
    key = index_stage.index_key(
        corpus.corpus_hash(inputs.docs),
        corpus.splitter_spec(config.chunking.chunk_size, config.chunking.chunk_overlap),
        embedder_spec(config.embedder),
    )
    if index_stage.is_cached(key, cache_dir):
        return retrieved()
    questions, chunks = inputs.questions, inputs.chunks
    avg = sum(len(c.text) for c in chunks) // max(1, len(chunks))
    stand_ins = [f"(stand-in {i}) " + "x" * avg for i in range(r.k)]  # distinct: none dedupes
    pool: list[tuple[str, str]] = []
    if explain:
        f = config.failures
        n_pool = min(f.pool_dense + f.pool_bm25, len(chunks))
        # each chunk of the top k and the pool joined with up to two neighbours
        n_joined = 2 * min(r.k + n_pool, len(chunks))
        pool_ins = [f"(pool stand-in {i}) " + "x" * avg for i in range(n_pool)]
        pool_ins += [f"(joined stand-in {i}) " + "x" * (2 * avg) for i in range(n_joined)]
        pool = [(q.text, c) for q in questions for c in pool_ins]
    return Planned([(q.text, c) for q in questions for c in stand_ins], pool, len(questions), False)


def by_question(pairs: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Pairs in rank order per question: the runs of equal question text of a list that
    holds each question's hits together (as `judged_pairs` gives them)."""
    out: list[list[tuple[str, str]]] = []
    for pair in pairs:
        if out and out[-1][0][0] == pair[0]:
            out[-1].append(pair)
        else:
            out.append([pair])
    return out


def _lazy_plan(config: ExperimentConfig) -> tuple[str, int] | None:
    from harness.pipeline.run import lazy_plan

    return lazy_plan(config, config.judge.effective_mode)


@dataclass(frozen=True)
class _Estimates:
    """What the judge's estimator says of a plan: the top k's pairs, and (None when the
    run asks none) lazy judging's (must, may), the failure pools' and the reranker's."""

    top: judge_stage.CallEstimate
    lazy: tuple[judge_stage.CallEstimate, judge_stage.CallEstimate] | None
    pool: judge_stage.CallEstimate | None
    rerank: judge_stage.CallEstimate | None
    rerank_own_model: bool
    """Whether the reranker asks its own model (then nothing of the judge's cache or price
    applies to it)."""


def estimate_run(
    config: ExperimentConfig | str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """What a run would cost the judge, before anything is paid.

    The pairs are the real ones when retrieval is free (see `plan`), and then the
    verdict cache is consulted: `judge_calls_min` is exact (in pointwise mode "complete"
    is asked only of chunks judged relevant, so the calls lie between min and max).
    Tokens are estimated at 4 characters a token from the real prompts. With
    failures.explain, `failure_pool_*` bound what explaining the failures could add: an
    upper bound, as if every question failed and every judged chunk were relevant (each
    question's pool judged, every chunk joined with its neighbours). `config` is an
    experiment (`load_experiment`) or its file's path.
    """
    config = as_experiment(config)
    judge_stage.check_endpoint(config.judge, config.path or "<experiment>")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    planned = plan(config, cache, with_pool=True)
    e = _estimate(config, planned, cache)
    est = _priced(
        config.judge,
        {
            "exact_pairs": planned.exact,
            "questions": planned.n_questions,
            "pairs": len(planned.pairs),
            "mode": config.judge.effective_mode,
            "open_pairs": e.top.open_pairs,
            "judge_calls_min": e.top.calls_min,
            "judge_calls_max": e.top.calls_max,
            "prompt_tokens_min": e.top.prompt_tokens_min,
            "prompt_tokens_max": e.top.prompt_tokens_max,
            "completion_tokens_max": e.top.completion_tokens_max,
        },
        "cost_usd_max",
        e.top.prompt_tokens_max,
        e.top.completion_tokens_max,
    )
    if e.rerank is not None:
        n_rerank = len(planned.rerank_pairs)
        est.update(_rerank_estimate(config.judge, n_rerank, e.rerank, e.rerank_own_model))
    if e.lazy is not None:
        est.update(_lazy_estimate(config.judge, *e.lazy))
    if e.pool is not None:
        est.update(_pool_estimate(config.judge, len(planned.pool), e.pool))
    return est


def _estimate(config: ExperimentConfig, planned: Planned, cache: Path) -> _Estimates:
    """Ask the judge's estimator about every kind of pair the plan holds (the verdict
    cache consulted only for pairs that are the real ones)."""
    lazy_plan = _lazy_plan(config)
    exact = planned.exact
    with judge_stage.judge_estimator(config.judge, cache) as estimate:
        top = estimate(planned.pairs, exact)
        pool = estimate(planned.pool, exact) if planned.pool else None
        lazy = estimate.lazy(by_question(planned.pairs), exact, *lazy_plan) if lazy_plan else None
        # the reranker's model is the judge's unless it has its own (then nothing of the
        # judge's cache counts): relevance only, one call per open pair (calls_min)
        own_model = reranker_endpoint(config.retrieval) is not None
        rerank = (
            estimate(planned.rerank_pairs, exact and not own_model)
            if planned.rerank_pairs
            else None
        )
    return _Estimates(top, lazy, pool, rerank, own_model)


def _rerank_estimate(
    config: JudgeConfig, n_pairs: int, rr: judge_stage.CallEstimate, own_model: bool
) -> dict[str, Any]:
    """The estimate's rerank_* fields: relevance only, one call per open pair; priced as
    the judge's unless the reranker asks its own model."""
    fields = {
        "rerank_pairs": n_pairs,
        "rerank_calls_max": rr.calls_min,
        "rerank_prompt_tokens_max": rr.prompt_tokens_min,
    }
    if own_model:
        return fields
    return _priced(config, fields, "rerank_cost_usd_max", rr.prompt_tokens_min, rr.calls_min * 2)


def _lazy_estimate(
    config: JudgeConfig, must: judge_stage.CallEstimate, may: judge_stage.CallEstimate
) -> dict[str, Any]:
    """The estimate's lazy_* fields (judge.lazy): each question stops once its objective
    is settled, somewhere between its first open pair (`must`) and every open pair up to
    the objective's cut-off (`may`)."""
    return _priced(
        config,
        {
            "lazy": True,
            "lazy_judge_calls_min": must.calls_min,
            "lazy_judge_calls_max": may.calls_max,
            "lazy_prompt_tokens_max": may.prompt_tokens_max,
        },
        "lazy_cost_usd_max",
        may.prompt_tokens_max,
        may.completion_tokens_max,
    )


def _pool_estimate(
    config: JudgeConfig, n_pairs: int, p: judge_stage.CallEstimate
) -> dict[str, Any]:
    """The estimate's failure_pool_* fields: an upper bound, apart from the top k's
    (every question could fail)."""
    return _priced(
        config,
        {
            "failure_pool_pairs": n_pairs,
            "failure_pool_open_pairs": p.open_pairs,
            "failure_pool_calls_max": p.calls_max,
            "failure_pool_prompt_tokens_max": p.prompt_tokens_max,
            "failure_pool_completion_tokens_max": p.completion_tokens_max,
        },
        "failure_pool_cost_usd_max",
        p.prompt_tokens_max,
        p.completion_tokens_max,
    )


def _priced(
    config: JudgeConfig,
    fields: dict[str, Any],
    key: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """`fields`, and under `key` what these tokens would cost when the judge has a price."""
    cost = judge_stage.judge_cost(config, prompt_tokens, completion_tokens)
    return {**fields, key: cost} if cost is not None else fields
