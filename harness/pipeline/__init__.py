"""One configuration end to end: the only place, with the sweep, that sequences stages.

prepare(config, ...)        load, chunk, index (cached), retrieve and rerank
run_experiment(config, ...) prepare, judge, metrics and the result log
estimate_run(config, ...)   what a run would cost the judge, paying nothing
"""

from harness.pipeline.estimate import estimate_run, judged_pairs
from harness.pipeline.prepare import (
    Inputs,
    JudgeSource,
    Prepared,
    cap_k,
    count_questions,
    default_cache_dir,
    load_corpus,
    load_inputs,
    prepare,
)
from harness.pipeline.progress import LogProgress, ProgressSink
from harness.pipeline.run import AfterBatch, run_experiment

__all__ = [
    "AfterBatch",
    "Inputs",
    "JudgeSource",
    "LogProgress",
    "Prepared",
    "ProgressSink",
    "cap_k",
    "count_questions",
    "default_cache_dir",
    "estimate_run",
    "judged_pairs",
    "load_corpus",
    "load_inputs",
    "prepare",
    "run_experiment",
]
