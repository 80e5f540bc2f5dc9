"""Optuna sweeps: the search space (defined once), the study, bookkeeping and estimates.

run_sweep(config, ...)       run or resume a sweep; one run folder per trial
estimate_sweep(config, ...)  the most a sweep could cost the judge
SearchSpace(config)          suggest / enumerate / baseline / trial_config
"""

from harness.sweep.book import SweepBook, best_trials, directions
from harness.sweep.estimate import estimate_sweep
from harness.sweep.space import SearchSpace, overlap_high
from harness.sweep.study import run_sweep

__all__ = [
    "SearchSpace",
    "SweepBook",
    "best_trials",
    "directions",
    "estimate_sweep",
    "overlap_high",
    "run_sweep",
]
