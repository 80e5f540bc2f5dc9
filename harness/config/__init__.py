"""Experiment configuration: the schema, reading TOML with `--set` overrides, validation.

load_experiment(path, overrides)    a validated ExperimentConfig from a file
parse_experiment(data, path, ...)   the same from a parsed mapping
experiment_from_dict(d, overrides)  back from `ExperimentConfig.to_dict()` (a log)
"""

from harness.config.parse import (
    apply_overrides,
    experiment_from_dict,
    load_experiment,
    parse_experiment,
)
from harness.config.schema import (
    DEFAULT_COMPLETE,
    DEFAULT_RELEVANT,
    ChunkingConfig,
    CorpusConfig,
    CriteriaConfig,
    EmbedderConfig,
    ExperimentConfig,
    JudgeConfig,
    OverlapRange,
    QuestionsConfig,
    RetrievalConfig,
    SpaceConfig,
    SweepConfig,
    embedder_id,
    parse_embedder_id,
)
from harness.config.validate import validate

__all__ = [
    "DEFAULT_COMPLETE",
    "DEFAULT_RELEVANT",
    "ChunkingConfig",
    "CorpusConfig",
    "CriteriaConfig",
    "EmbedderConfig",
    "ExperimentConfig",
    "JudgeConfig",
    "OverlapRange",
    "QuestionsConfig",
    "RetrievalConfig",
    "SpaceConfig",
    "SweepConfig",
    "apply_overrides",
    "embedder_id",
    "experiment_from_dict",
    "load_experiment",
    "parse_embedder_id",
    "parse_experiment",
    "validate",
]
