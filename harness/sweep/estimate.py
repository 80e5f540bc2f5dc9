"""What a sweep could cost the judge, before anything is paid."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import ExperimentConfig, as_experiment
from harness.judge import check_endpoint, judge_cost, judge_estimator
from harness.judge.estimate import lazy_pairs
from harness.pipeline import default_cache_dir, judged_pairs
from harness.pipeline.estimate import by_question
from harness.pipeline.run import lazy_plan
from harness.sweep.space import SearchSpace
from harness.sweep.study import plan_sampler, with_lazy_default


def estimate_sweep(
    config: ExperimentConfig | str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    trials: int | None = None,
) -> dict[str, Any]:
    """The most a sweep of `trials` trials could cost the judge, before anything is paid.

    Every setting of the space is retrieved (free with the local embedder or a cached
    index, see `judged_pairs`) and its open verdicts counted against the verdict cache.
    `trials` is what the sweep would run (`plan_sampler`: a space no larger than the
    trials asked runs as a grid, each setting once). Optuna picks which settings run, so
    the figure is a bound, the smaller of:
    the `trials` most expensive settings each paying all their open pairs, and (pointwise
    or both modes, real pairs) every open pair of the whole space paid once, since the
    cache never pays a verdict twice. Pruning only lowers it. `no_cache_calls_max` is
    the same trials' calls without a verdict cache. With prices set, `batch_cost_usd_max`
    is what judging the whole space through a batch API would cost (judge.batch: every
    open pair of every setting, at judge.batch_discount of the online price). `config` is
    an experiment (`load_experiment`) or its file's path.
    """
    config = as_experiment(config)
    grid_trials = SearchSpace(config).check()
    check_endpoint(config.judge, config.path or "<experiment>")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    config, n_trials, reason = plan_sampler(
        config, trials if trials is not None else config.sweep.trials, grid_trials
    )
    space = SearchSpace(config)
    settings_list = space.enumerate()
    with judge_estimator(config.judge, cache) as estimate:
        costs = [
            _setting_cost(config, with_lazy_default(space.trial_config(p)), p, estimate, cache)
            for p in settings_list
        ]
        settings = [c.row for c in costs]
        exact = all(c.real for c in costs)
        bound = _bound(config, costs, estimate, n_trials, exact)
        lazy_max = _lazy_bound(costs, estimate, n_trials, exact)
        # A batch judges every pair of the space, each question's chunks all (no lazy walk)
        batched = _space_cost(costs, estimate) if exact else None
    est: dict[str, Any] = {
        "trials": n_trials,
        "sampler": config.sweep.sampler,
        **({"sampler_reason": reason} if reason else {}),
        "mode": config.judge.effective_mode,
        "exact_pairs": exact,
        "settings_in_space": len(settings_list),
        "judge_calls_max": bound["calls_max"],
        "prompt_tokens_max": bound["prompt_tokens_max"],
        "completion_tokens_max": bound["completion_tokens_max"],
        "one_trial_calls_max": max((d["calls_max"] for d in settings), default=0),
        "no_cache_calls_max": _top(settings, "no_cache_calls_max", n_trials),
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


_KEYS = ("calls_max", "prompt_tokens_max", "completion_tokens_max")


@dataclass(frozen=True)
class _SettingCost:
    """One setting of the space: its row of the estimate, its judged pairs, and those lazy
    judging may ask (None when the setting is not judged lazily)."""

    row: dict[str, Any]
    pairs: list[tuple[str, str]]
    lazy_pairs: list[tuple[str, str]] | None
    real: bool
    """The pairs are the ones a run would judge (retrieval ran), not a stand-in."""


def _setting_cost(
    config: ExperimentConfig,
    tconfig: ExperimentConfig,
    params: dict[str, Any],
    estimate: Any,
    cache: Path,
) -> _SettingCost:
    """What one setting could cost: its open pairs against the verdict cache."""
    pairs, _, real = judged_pairs(tconfig, cache)
    e = estimate(pairs, real)
    plan = lazy_plan(tconfig, tconfig.judge.effective_mode)
    lazy: dict[str, Any] = {}
    may = None
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
    row = {
        "params": params,
        "pairs": len(pairs),
        "open_pairs": e.open_pairs,
        **{k: getattr(e, k) for k in _KEYS},
        "no_cache_calls_max": estimate(pairs, False).calls_max,
        **lazy,
    }
    return _SettingCost(row, list(pairs), None if may is None else list(may), real)


def _top(rows: list[dict[str, Any]], key: str, n: int) -> int:
    """The sum of `key` over the `n` rows with the most of it."""
    return sum(sorted((d.get(key, 0) for d in rows), reverse=True)[:n])


def _bound(
    config: ExperimentConfig, costs: list[_SettingCost], estimate: Any, n: int, exact: bool
) -> dict[str, int]:
    """Calls and tokens at most: each figure over its own costliest settings (the most
    calls and the most tokens need not come from the same settings), and never more than
    every open pair of the space paid once (real pairs, not listwise)."""
    rows = [c.row for c in costs]
    bound = {k: _top(rows, k, n) for k in _KEYS}
    if exact and config.judge.effective_mode != "listwise":
        whole = _space_cost(costs, estimate)
        bound = {k: min(bound[k], getattr(whole, k)) for k in _KEYS}
    return bound


def _space_cost(costs: list[_SettingCost], estimate: Any) -> Any:
    """What every open pair of the space costs, each paid once: what a batch judges."""
    return estimate(list(dict.fromkeys(p for c in costs for p in c.pairs)), True)


def _lazy_bound(costs: list[_SettingCost], estimate: Any, n: int, exact: bool) -> int | None:
    """The calls lazy judging could make at most (None: no setting is judged lazily)."""
    union = dict.fromkeys(p for c in costs for p in (c.lazy_pairs or []))
    if not union:
        return None
    most = _top([c.row for c in costs], "lazy_calls_max", n)
    return min(most, estimate(list(union), True).calls_max) if exact else most
