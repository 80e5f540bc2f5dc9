"""Optuna sweeps: the search space (defined once), the study, bookkeeping and estimates.

run_sweep(config, ...)       run or resume a sweep; one run folder per trial
estimate_sweep(config, ...)  the most a sweep could cost the judge
SearchSpace(config)          suggest / enumerate / baseline / trial_config
export_config(log, out)      the recommended (or a named) trial as an experiment file
langchain_code(config)       the same retrieval as LangChain code
"""

from harness.sweep.book import SweepBook, best_trials, directions
from harness.sweep.estimate import estimate_sweep
from harness.sweep.export import ExportedConfig, export_config, langchain_code
from harness.sweep.space import SearchSpace, overlap_high
from harness.sweep.study import run_sweep

__all__ = [
    "ExportedConfig",
    "SearchSpace",
    "SweepBook",
    "best_trials",
    "directions",
    "estimate_sweep",
    "export_config",
    "langchain_code",
    "overlap_high",
    "run_sweep",
]
