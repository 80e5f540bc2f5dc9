"""What a sweep could cost the judge, before anything is paid."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.config import ExperimentConfig
from harness.judge import check_endpoint, judge_cost, judge_estimator
from harness.judge.estimate import lazy_pairs
from harness.pipeline import default_cache_dir, judged_pairs
from harness.pipeline.estimate import by_question
from harness.pipeline.run import lazy_plan
from harness.sweep.space import SearchSpace
from harness.sweep.study import with_lazy_default


def estimate_sweep(
    config: ExperimentConfig,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    trials: int | None = None,
) -> dict[str, Any]:
    """The most a sweep of `trials` trials could cost the judge, before anything is paid.

    Every setting of the space is retrieved (free with the local embedder or a cached
    index, see `judged_pairs`) and its open verdicts counted against the verdict cache.
    Optuna picks which settings run, so the figure is a bound, the smaller of:
    the `trials` most expensive settings each paying all their open pairs, and (pointwise
    or both modes, real pairs) every open pair of the whole space paid once, since the
    cache never pays a verdict twice. Pruning only lowers it. `no_cache_calls_max` is
    the same trials' calls without a verdict cache. With prices set, `batch_cost_usd_max`
    is what judging the whole space through a batch API would cost (judge.batch: every
    open pair of every setting, at judge.batch_discount of the online price).
    """
    check_endpoint(config.judge, config.path or "<experiment>")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    n_trials = trials if trials is not None else config.sweep.trials
    space = SearchSpace(config)
    settings_list = space.enumerate()
    keys = ("calls_max", "prompt_tokens_max", "completion_tokens_max")
    settings: list[dict[str, Any]] = []
    union: dict[tuple[str, str], None] = {}
    lazy_union: dict[tuple[str, str], None] = {}
    exact = True
    with judge_estimator(config.judge, cache) as estimate:
        for params in settings_list:
            tconfig = with_lazy_default(space.trial_config(params))
            pairs, _, real = judged_pairs(tconfig, cache)
            e = estimate(pairs, real)
            plan = lazy_plan(tconfig, tconfig.judge.effective_mode)
            lazy = {}
            if plan is not None:
                # lazy judging: at most the open pairs of each question's walk in rank order
                _, may = lazy_pairs(
                    by_question(pairs),
                    identity=estimate.identity,
                    criteria=config.judge.criteria,
                    cache=estimate.vc if real else None,
                    target=plan[0],
                    k=plan[1],
                )
                lazy = {"lazy_calls_max": estimate(may, real).calls_max}
                lazy_union.update(dict.fromkeys(may))
            settings.append(
                {
                    "params": params,
                    "pairs": len(pairs),
                    "open_pairs": e.open_pairs,
                    **{k: getattr(e, k) for k in keys},
                    "no_cache_calls_max": estimate(pairs, False).calls_max,
                    **lazy,
                }
            )
            exact = exact and real
            union.update(dict.fromkeys(pairs))
        # Each figure over its own costliest settings: the most calls and the most tokens
        # need not come from the same settings.
        bound = {k: sum(sorted((d[k] for d in settings), reverse=True)[:n_trials]) for k in keys}
        if exact and config.judge.effective_mode != "listwise":
            whole = estimate(list(union), True)
            bound = {k: min(bound[k], getattr(whole, k)) for k in keys}
        # A batch judges every pair of the space, each question's chunks all (no lazy walk)
        batched = estimate(list(union), True) if exact else None
        lazy_max = None
        if lazy_union:
            lazy_max = sum(
                sorted((d.get("lazy_calls_max", 0) for d in settings), reverse=True)[:n_trials]
            )
            if exact:
                lazy_max = min(lazy_max, estimate(list(lazy_union), True).calls_max)
    est: dict[str, Any] = {
        "trials": n_trials,
        "sampler": config.sweep.sampler,
        "mode": config.judge.effective_mode,
        "exact_pairs": exact,
        "settings_in_space": len(settings_list),
        "judge_calls_max": bound["calls_max"],
        "prompt_tokens_max": bound["prompt_tokens_max"],
        "completion_tokens_max": bound["completion_tokens_max"],
        "one_trial_calls_max": max((d["calls_max"] for d in settings), default=0),
        "no_cache_calls_max": sum(
            sorted((d["no_cache_calls_max"] for d in settings), reverse=True)[:n_trials]
        ),
        "settings": settings,
        **({"lazy": True, "lazy_judge_calls_max": lazy_max} if lazy_max is not None else {}),
    }
    cost = judge_cost(config.judge, bound["prompt_tokens_max"], bound["completion_tokens_max"])
    if cost is not None:
        est["cost_usd_max"] = cost
        if batched is not None:
            space_usd = judge_cost(
                config.judge, batched.prompt_tokens_max, batched.completion_tokens_max
            )
            est["batch_cost_usd_max"] = round((space_usd or 0.0) * config.judge.batch_discount, 6)
    est["batch"] = config.judge.batch
    return est
