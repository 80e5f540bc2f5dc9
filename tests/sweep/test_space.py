"""The search space is defined once: suggest, enumerate and baseline agree."""

from __future__ import annotations

import optuna
import pytest

from harness.config import load_experiment
from harness.errors import ConfigError
from harness.sweep import SearchSpace
from tests.conftest import DATA

SWEEP = DATA / "sweep.toml"


def _key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def test_a_grid_visits_exactly_what_enumerate_lists():
    config = load_experiment(
        SWEEP,
        [
            "sweep.space.chunk_size=[40, 120, 200]",
            "sweep.space.reranker=['none', 'bm25']",
            "sweep.space.fetch_k=[5, 8]",
        ],
    )
    space = SearchSpace(config)
    listed = space.enumerate()
    # overlap 0..60 step 20 below each size (40: 0, 20), k 2|3, reranker none | bm25 x fetch_k
    assert len(listed) == (2 + 4 + 4) * 2 * (1 + 2)
    assert len({_key(p) for p in listed}) == len(listed)
    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    seen: list[dict] = []
    study.optimize(lambda t: seen.append(space.suggest(t)) or 0.0, n_trials=len(listed) + 5)
    assert {_key(p) for p in seen} == {_key(p) for p in listed}
    for p in listed:
        assert p["chunk_overlap"] < p["chunk_size"]
        assert ("fetch_k" in p) == (p["reranker"] != "none")


def test_baseline_is_the_experiments_own_setting_or_none():
    config = load_experiment(SWEEP)
    base = SearchSpace(config).baseline()
    assert base == {"chunk_size": 200, "chunk_overlap": 20, "k": 3}
    assert (
        base | {"reranker": "none", "embedder": "local-minilm"} in SearchSpace(config).enumerate()
    )
    outside = load_experiment(SWEEP, ["chunking.chunk_overlap=30"])  # not on the 20-step grid
    assert SearchSpace(outside).baseline() is None


def test_trial_config_puts_the_settings_in_place():
    config = load_experiment(SWEEP)
    space = SearchSpace(config)
    t = space.trial_config(
        {"chunk_size": 120, "chunk_overlap": 40, "k": 2, "reranker": "bm25", "fetch_k": 9,
         "embedder": "openai:text-embedding-3-large"}
    )  # fmt: skip
    assert (t.chunking.chunk_size, t.chunking.chunk_overlap) == (120, 40)
    assert (t.retrieval.k, t.retrieval.reranker, t.retrieval.fetch_k) == (2, "bm25", 9)
    assert (t.embedder.name, t.embedder.model) == ("openai", "text-embedding-3-large")


def test_grid_trials_count_each_chunk_size_no_overlap_fits_once():
    # 40: overlaps 0, 20; 10: none of 20..60 lies below it (a grid prunes it once)
    config = load_experiment(
        SWEEP,
        ["sweep.space.chunk_size=[10, 40]", "sweep.space.chunk_overlap={low=20, high=60, step=20}"],
    )
    space = SearchSpace(config)
    assert len(space.enumerate()) == 1 * 2  # overlap 20 below 40, k 2 | 3
    assert space.grid_trials() == 3
    study = optuna.create_study(sampler=optuna.samplers.BruteForceSampler(seed=0))
    study.optimize(lambda t: space.suggest(t) and 0.0, n_trials=10)  # the grid stops itself
    assert len(study.trials) == space.grid_trials()


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (
            [
                "sweep.space.chunk_size=[200]",
                "sweep.space.k=[3]",
                "sweep.space.chunk_overlap={low=20, high=20, step=20}",
            ],
            "searches nothing",
        ),
        (["sweep.space.chunk_size=[10]", "sweep.space.k=[3]"], "searches nothing"),  # overlap 0
        (
            [
                "sweep.space.chunk_size=[10, 15]",
                "sweep.space.chunk_overlap={low=20, high=60, step=20}",
            ],
            "no setting fits",
        ),
    ],
)
def test_a_space_of_fewer_than_two_settings_is_refused_naming_the_file(overrides, expected):
    config = load_experiment(SWEEP, overrides)
    with pytest.raises(ConfigError) as err:
        SearchSpace(config).check()
    assert err.value.field == "sweep.space" and expected in str(err.value)
    assert str(err.value).startswith(str(SWEEP))


def test_check_returns_the_grid_trials_of_a_space_that_searches():
    config = load_experiment(SWEEP)
    assert SearchSpace(config).check() == SearchSpace(config).grid_trials() == 24
