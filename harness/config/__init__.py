"""Experiment configuration: the schema, reading TOML with `--set` overrides, validation.

load_experiment(path, overrides)    a validated ExperimentConfig from a file
as_experiment(config_or_path)       the config itself, or the file it names loaded
parse_experiment(data, path, ...)   the same from a parsed mapping
experiment_from_dict(d, overrides)  back from `ExperimentConfig.to_dict()` (a log)
rebase_on_user(recorded, user, ...) a results folder's config, its endpoints the user's
"""

from harness.config.parse import (
    Overrides,
    apply_overrides,
    as_experiment,
    experiment_from_dict,
    load_experiment,
    parse_experiment,
)
from harness.config.recorded import (
    check_recorded_endpoints,
    check_recorded_sources,
    rebase_on_user,
)
from harness.config.schema import (
    CRITERIA_PRESETS,
    DEFAULT_COMPLETE,
    DEFAULT_RELEVANT,
    FEW_SHOT_MODES,
    GENERATE_STYLES,
    JUDGE_MODES,
    QUESTION_TYPES,
    STANDALONE_CRITIC,
    ChunkingConfig,
    CorpusConfig,
    CriteriaConfig,
    EmbedderConfig,
    ExperimentConfig,
    FailuresConfig,
    GenerateConfig,
    JudgeConfig,
    OverlapRange,
    QuestionsConfig,
    RetrievalConfig,
    SettingsTables,
    SpaceConfig,
    SweepConfig,
    embedder_id,
    parse_embedder_id,
)
from harness.config.validate import validate

__all__ = [
    "CRITERIA_PRESETS",
    "DEFAULT_COMPLETE",
    "DEFAULT_RELEVANT",
    "FEW_SHOT_MODES",
    "GENERATE_STYLES",
    "JUDGE_MODES",
    "QUESTION_TYPES",
    "STANDALONE_CRITIC",
    "ChunkingConfig",
    "CorpusConfig",
    "CriteriaConfig",
    "EmbedderConfig",
    "ExperimentConfig",
    "FailuresConfig",
    "GenerateConfig",
    "JudgeConfig",
    "OverlapRange",
    "Overrides",
    "QuestionsConfig",
    "RetrievalConfig",
    "SettingsTables",
    "SpaceConfig",
    "SweepConfig",
    "apply_overrides",
    "as_experiment",
    "check_recorded_endpoints",
    "check_recorded_sources",
    "embedder_id",
    "experiment_from_dict",
    "load_experiment",
    "parse_embedder_id",
    "parse_experiment",
    "rebase_on_user",
    "validate",
]
