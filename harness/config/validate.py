"""Checks that span fields of an experiment; each failure names the file and the field.

A component's own settings are checked by its module (`validate(config, where)`, see
`harness.components.contract`): every registered reranker's, the chosen embedder's and
the chosen judge backend's.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from harness.components.endpoints import URL_EXPECTED, endpoint_fields, is_http_url
from harness.components.registry import EMBEDDERS, JUDGES, RERANKERS, load
from harness.config.schema import (
    CRITERIA_PRESETS,
    FEW_SHOT_MODES,
    GENERATE_STYLES,
    JUDGE_MODES,
    QUESTION_TYPES,
    STANDALONE_CRITIC,
    ExperimentConfig,
    GenerateConfig,
    SweepConfig,
    parse_embedder_id,
)
from harness.errors import ConfigError
from harness.metrics.ids import OBJECTIVE_NAMES, parse_metric_id
from harness.secrets import redact_url

OVERSAMPLE_MAX = 100.0
"""The largest `generate.oversample`: n x oversample candidates are generated."""


def _validate_lazy(config: ExperimentConfig, where: str) -> None:
    """judge.lazy = true needs an objective that a prefix of the ranking settles, and a
    mode that judges chunk by chunk."""
    from harness.metrics.lazy import lazy_target

    if config.judge.effective_mode == "listwise":
        raise ConfigError(
            where,
            "judge.lazy",
            'expected false with judge.mode = "listwise", which asks for all of a '
            "question's chunks in one call",
        )
    if lazy_target(config.sweep.objective) is None:
        raise ConfigError(
            where,
            "judge.lazy",
            f"expected false with sweep.objective = {list(config.sweep.objective)}: lazy "
            "judging serves objectives settled by the first relevant (and complete) chunk "
            "(mrr, hit_rate, relevancy_mrr, failures, context_chars)",
        )


def _validate_few_shot(config: ExperimentConfig, where: str) -> None:
    """judge.few_shot: a count >= 0, with an exam file and a mode that shows examples.
    The exam itself is read when the judge is checked or built (`harness.judge.fewshot`),
    so a run header read back later does not need the file."""
    j = config.judge
    if j.few_shot < 0:
        raise ConfigError(where, "judge.few_shot", f"expected 0 (none) or more, got {j.few_shot}")
    if j.few_shot == 0:
        return
    if not j.exam:
        raise ConfigError(
            where,
            "judge.exam",
            f"expected the judge exam file (harness generate writes <out>.exam.jsonl) with "
            f"judge.few_shot = {j.few_shot}",
        )
    if j.effective_mode not in FEW_SHOT_MODES:
        raise ConfigError(
            where,
            "judge.few_shot",
            f"expected 0 with judge.mode = {j.effective_mode!r}: examples are shown in "
            f"{', '.join(FEW_SHOT_MODES)} judging",
        )


def validate(config: ExperimentConfig) -> None:
    """Checks that span fields; raises ConfigError naming the field."""
    where = config.path or "<experiment>"
    _check_finite(config, where, "")
    if not config.corpus.sources:
        raise ConfigError(where, "corpus.sources", "expected at least one file, folder or URL")
    if config.corpus.timeout_s <= 0:
        raise ConfigError(where, "corpus.timeout_s", "expected a number of seconds > 0")
    if not config.questions.file:
        raise ConfigError(where, "questions.file", "expected the path of a questions file")
    c = config.chunking
    if c.chunk_size < 1:
        raise ConfigError(where, "chunking.chunk_size", f"expected >= 1, got {c.chunk_size}")
    if c.chunk_overlap < 0 or c.chunk_overlap >= c.chunk_size:
        raise ConfigError(
            where,
            "chunking.chunk_overlap",
            f"expected 0 <= chunk_overlap < chunk_size ({c.chunk_size}), got {c.chunk_overlap}",
        )
    if config.questions.limit < 0:
        raise ConfigError(where, "questions.limit", "expected 0 (all) or a positive count")
    if config.retrieval.k < 1:
        raise ConfigError(where, "retrieval.k", f"expected k >= 1, got {config.retrieval.k}")
    _validate_components(config, where)
    _validate_sweep(config.sweep, where)
    _check_objective_k(config, where)
    j = config.judge
    if j.mode and j.mode not in JUDGE_MODES:
        raise ConfigError(
            where, "judge.mode", f"expected one of {', '.join(JUDGE_MODES)}, got {j.mode!r}"
        )
    if j.injection not in ("mask", "flag", "off"):
        raise ConfigError(
            where, "judge.injection", f"expected mask, flag or off, got {j.injection!r}"
        )
    if not 0 <= j.relevant_grade <= j.complete_grade <= 3:
        raise ConfigError(
            where,
            "judge.complete_grade",
            "expected 0 <= judge.relevant_grade <= judge.complete_grade <= 3, got "
            f"{j.relevant_grade} and {j.complete_grade}",
        )
    if j.concurrency < 1:
        raise ConfigError(where, "judge.concurrency", "expected an integer >= 1")
    if j.local_slots < 1:
        raise ConfigError(where, "judge.local_slots", "expected an integer >= 1")
    _validate_few_shot(config, where)
    if not 0 < j.batch_discount <= 1:
        raise ConfigError(where, "judge.batch_discount", "expected a share > 0 and <= 1")
    for name in ("batch_poll_s", "batch_max_requests", "batch_max_bytes"):
        if getattr(j, name) <= 0:
            raise ConfigError(where, f"judge.{name}", "expected a number > 0")
    for name in ("timeout_s", "max_reply_bytes"):
        if getattr(j, name) <= 0:
            raise ConfigError(where, f"judge.{name}", "expected a number > 0")
    for name in (
        "max_retries",
        "max_retry_after_s",
        "requests_per_minute",
        "tokens_per_minute",
        "price_prompt_per_mtok",
        "price_completion_per_mtok",
    ):
        if getattr(j, name) < 0:
            raise ConfigError(where, f"judge.{name}", "expected a number >= 0")
    for name in ("relevant", "complete"):
        if not getattr(config.judge.criteria, name).strip():
            raise ConfigError(where, f"judge.criteria.{name}", "expected a non-empty text")
    if j.criteria_preset:
        texts = CRITERIA_PRESETS.get(j.criteria_preset)
        if texts is None:
            raise ConfigError(
                where,
                "judge.criteria_preset",
                f"expected one of {', '.join(map(repr, ('', *CRITERIA_PRESETS)))}, "
                f"got {j.criteria_preset!r}",
            )
        if (j.criteria.relevant, j.criteria.complete) != texts:
            # parse_experiment resolves presets; a config built in code must match them
            raise ConfigError(
                where,
                "judge.criteria",
                f"expected the texts of judge.criteria_preset = {j.criteria_preset!r}",
            )
    if j.effective_mode != "extractive" and any(
        o.startswith("relevant_share@") for o in config.sweep.objective
    ):
        # only extractive judging marks the answer's characters; elsewhere it is absent
        raise ConfigError(
            where,
            "sweep.objective",
            f'relevant_share needs judge.mode = "extractive", got {j.mode!r}',
        )
    if j.lazy:
        _validate_lazy(config, where)
    _validate_endpoint_urls(config, where)
    f = config.failures
    for name in ("pool_dense", "pool_bm25"):
        if getattr(f, name) < 0:
            raise ConfigError(where, f"failures.{name}", "expected an integer >= 0")
    _validate_generate(config.generate, where)


def _validate_generate(g: GenerateConfig, where: str) -> None:
    """The [generate] table: counts, types, scores and thresholds in range."""
    if g.n < 1:
        raise ConfigError(where, "generate.n", f"expected >= 1, got {g.n}")
    bad = [t for t in g.types if t not in QUESTION_TYPES]
    if not g.types or bad:
        raise ConfigError(
            where,
            "generate.types",
            f"expected some of {', '.join(QUESTION_TYPES)}, got {list(g.types)}",
        )
    if g.phrasings not in (1, 2):
        raise ConfigError(where, "generate.phrasings", f"expected 1 or 2, got {g.phrasings}")
    if not 1 <= g.min_score <= 5:
        raise ConfigError(where, "generate.min_score", f"expected 1..5, got {g.min_score}")
    if not 0 < g.dedup_threshold <= 1:
        raise ConfigError(
            where, "generate.dedup_threshold", f"expected 0 < cosine <= 1, got {g.dedup_threshold}"
        )
    if g.passage_chars < 100:
        raise ConfigError(where, "generate.passage_chars", "expected at least 100 characters")
    if not 1 <= g.oversample <= OVERSAMPLE_MAX:
        raise ConfigError(
            where,
            "generate.oversample",
            f"expected a factor from 1 to {OVERSAMPLE_MAX:g}, got {g.oversample:g}",
        )
    if g.max_tokens < 32:
        raise ConfigError(where, "generate.max_tokens", "expected at least 32 tokens")
    for name in ("model", "base_url", "api_key_env"):
        if any(ch in getattr(g, name) for ch in "\r\n\x00"):
            raise ConfigError(where, f"generate.{name}", "expected a value on one line")
    if g.base_url and not g.model:
        raise ConfigError(where, "generate.model", "a generation endpoint needs a model name")
    if g.style not in GENERATE_STYLES:
        raise ConfigError(
            where,
            "generate.style",
            f"expected one of {', '.join(GENERATE_STYLES)}, got {g.style!r}",
        )
    if g.standalone_critic not in STANDALONE_CRITIC:
        raise ConfigError(
            where,
            "generate.standalone_critic",
            f"expected one of {', '.join(STANDALONE_CRITIC)}, got {g.standalone_critic!r}",
        )
    if not 0 < g.max_overlap <= 1:
        raise ConfigError(
            where, "generate.max_overlap", f"expected a share 0 < x <= 1, got {g.max_overlap:g}"
        )


def check_endpoint_url(url: str, where: str, field: str) -> None:
    """Refuse a base URL that is set but is no http(s) URL with a host (`is_http_url`):
    a ConfigError naming `where` and `field` (a setting, or the environment variable it
    came from), the URL shown with its credentials masked."""
    if url and not is_http_url(url):
        raise ConfigError(where, field, f"{URL_EXPECTED}, got {redact_url(url)!r}")


def _validate_endpoint_urls(config: ExperimentConfig, where: str) -> None:
    """Every component's base URL (`endpoint_fields`) that is set is an http(s) URL: a
    mistyped one ("localhost:8000/v1") is refused here, before anything is loaded or
    paid, rather than failing the first request."""
    for fields in endpoint_fields():
        section = getattr(config, fields.table, None)
        url = getattr(section, fields.url, "") if section is not None else ""
        if isinstance(url, str):
            check_endpoint_url(url, where, fields.dotted)


def _validate_sweep(sweep: SweepConfig, where: str) -> None:
    names = OBJECTIVE_NAMES
    if sweep.trials < 1:
        raise ConfigError(where, "sweep.trials", f"expected >= 1, got {sweep.trials}")
    if sweep.sampler not in ("tpe", "grid"):
        raise ConfigError(where, "sweep.sampler", f"expected tpe or grid, got {sweep.sampler!r}")
    if sweep.pruner not in ("median", "none"):
        raise ConfigError(where, "sweep.pruner", f"expected median or none, got {sweep.pruner!r}")
    if not 1 <= len(sweep.objective) <= 2:
        raise ConfigError(where, "sweep.objective", "expected one or two metric ids")
    for metric_id in sweep.objective:
        try:
            name, _ = parse_metric_id(metric_id)
        except ValueError:
            name = ""
        if name not in names:
            raise ConfigError(
                where,
                "sweep.objective",
                f"expected metric ids like mrr@k or context_chars@3 (metrics: {', '.join(names)}), "
                f"got {metric_id!r}",
            )
    b = sweep.batches
    if not b or any(not 0 < x <= 1 for x in b) or list(b) != sorted(set(b)):
        raise ConfigError(
            where, "sweep.batches", f"expected increasing shares in (0, 1], got {list(b)}"
        )
    sp = sweep.space
    if any(v < 1 for v in sp.chunk_size):
        raise ConfigError(where, "sweep.space.chunk_size", "expected sizes >= 1")
    if any(v < 1 for v in sp.k):
        raise ConfigError(where, "sweep.space.k", "expected values of k >= 1")
    o = sp.chunk_overlap
    if o is not None and (o.low < 0 or o.step < 1 or o.high < o.low):
        raise ConfigError(
            where, "sweep.space.chunk_overlap", "expected 0 <= low <= high and step >= 1"
        )
    if any(v < 1 for v in sp.fetch_k):
        raise ConfigError(where, "sweep.space.fetch_k", "expected values >= 1")
    for name, allowed in (("reranker", RERANKERS), ("embedder", EMBEDDERS)):
        values = getattr(sp, name)
        if name == "embedder":
            values = [parse_embedder_id(v)[0] for v in values]
        bad = [v for v in values if v not in allowed]
        if bad:
            raise ConfigError(
                where, f"sweep.space.{name}", f"expected values in {list(allowed)}, got {bad}"
            )


def _validate_components(config: ExperimentConfig, where: str) -> None:
    """The chosen components exist, and their modules accept their settings."""
    for dotted, name, table in (
        ("embedder.name", config.embedder.name, EMBEDDERS),
        ("retrieval.reranker", config.retrieval.reranker, RERANKERS),
        ("judge.backend", config.judge.backend, JUDGES),
    ):
        if name not in table:
            raise ConfigError(where, dotted, f"expected {' or '.join(table)}, got {name!r}")
    if config.retrieval.fetch_k < 1:
        raise ConfigError(
            where, "retrieval.fetch_k", f"expected >= 1, got {config.retrieval.fetch_k}"
        )
    # every reranker's: a sweep may choose any, and their settings sit in [retrieval]
    for name in RERANKERS:
        load("reranker", name).validate(config.retrieval, where)
    load("embedder", config.embedder.name).validate(config.embedder, where)
    load("judge", config.judge.backend).validate(config.judge, where)


def _check_finite(node: Any, where: str, prefix: str) -> None:
    """Refuse nan and infinity in every number of the config: a comparison with nan is
    always false, so `timeout_s = nan` would pass every range check below."""
    for f in dataclasses.fields(node):
        if f.name == "path":
            continue
        value = getattr(node, f.name)
        dotted = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(value):
            _check_finite(value, where, dotted)
            continue
        _check_finite_value(value, where, dotted)


def _check_finite_value(value: Any, where: str, dotted: str) -> None:
    """A value of the config (a number, a tuple, a settings table) holds no nan or inf."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite_value(v, where, f"{dotted}.{k}")
    elif isinstance(value, (tuple, list)):
        for v in value:
            _check_finite_value(v, where, dotted)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, dotted, f"expected a finite number, got {value}")


def _check_objective_k(config: ExperimentConfig, where: str) -> None:
    """An objective at a fixed k (`mrr@9`) needs every trial to retrieve at least that
    many chunks; otherwise every trial has no value and the sweep finds nothing."""
    space_k = config.sweep.space.k
    smallest = min(space_k) if space_k else config.retrieval.k
    source = "sweep.space.k" if space_k else "retrieval.k"
    for metric_id in config.sweep.objective:
        _, fixed = parse_metric_id(metric_id)
        if fixed is not None and fixed > smallest:
            raise ConfigError(
                where,
                "sweep.objective",
                f"{metric_id!r} needs k >= {fixed}, but a run may retrieve only {smallest} "
                f"chunks ({source}); use {metric_id.split('@')[0]}@k or a fixed k <= {smallest}",
            )
