"""Experiment files (TOML): parsing, `--set` overrides and validation.

Paths inside an experiment file are relative to that file. Every error names the file,
the field (dotted, e.g. `chunking.chunk_overlap`) and what was expected.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ConfigError

DEFAULT_RELEVANT = (
    "The passage is about what the question asks: it shares the question's subject and "
    "topic, even if it does not contain the answer."
)
DEFAULT_COMPLETE = (
    "The passage alone contains the specific information needed to answer the question "
    "fully; a reader would need no other text."
)


@dataclass(frozen=True)
class CorpusConfig:
    sources: tuple[str, ...] = ()
    """Files, folders (.md, .txt, .html) or http(s) URLs."""
    html_classes: tuple[str, ...] = ()
    """Keep only elements with these CSS classes from HTML pages; empty keeps the body."""


@dataclass(frozen=True)
class QuestionsConfig:
    file: str = ""
    """JSONL with {"id", "text"} per line, or a .txt file with one question per line."""
    qrels: str = ""
    """Optional human labels (BEIR qrels.tsv or TREC qrels) that `harness validate` uses."""
    limit: int = 0
    """Use only the first N questions of the file (0: all), e.g. to try a large set cheaply."""


@dataclass(frozen=True)
class ChunkingConfig:
    chunk_size: int = 1000
    chunk_overlap: int = 200


@dataclass(frozen=True)
class RetrievalConfig:
    k: int = 4
    reranker: str = "none"
    """none, bm25, hybrid, mmr, cross-encoder or llm (see harness/rerank.py)."""
    fetch_k: int = 20
    """Candidates the reranker chooses k from (ignored by `none`)."""
    hybrid_weights: tuple[float, ...] = (0.5, 0.5)
    """Weights of dense and BM25 in the reciprocal-rank fusion of `hybrid`."""
    mmr_lambda: float = 0.5
    """1 = pure similarity, 0 = pure diversity."""
    cross_encoder: str = ""
    """A sentence-transformers cross-encoder folder or model name (none ships with harness)."""
    llm_base_url: str = ""
    """Endpoint of the `llm` reranker; empty uses the judge's endpoint and model."""
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"


@dataclass(frozen=True)
class EmbedderConfig:
    name: str = "local-minilm"
    """`local-minilm` (packaged all-MiniLM-L6-v2), `openai`, or `sentence-transformers`."""
    model: str = ""
    """For `openai`: text-embedding-3-small (default) or text-embedding-3-large; for
    `sentence-transformers`: a model folder (or a name in the local Hugging Face cache)."""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = 32


@dataclass(frozen=True)
class CriteriaConfig:
    relevant: str = DEFAULT_RELEVANT
    complete: str = DEFAULT_COMPLETE


@dataclass(frozen=True)
class JudgeConfig:
    base_url: str = ""
    """OpenAI-compatible endpoint; empty (and no model) starts the local judge."""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable that holds the key (the key never goes in a file)."""
    local_model: str = "qwen2.5-coder-1.5b"
    """Packaged model for the local judge: qwen2.5-coder-1.5b or smollm2-135m, or a .gguf path."""
    concurrency: int = 4
    reasons: bool = False
    """Ask for a one-sentence reason with each verdict (slower: ~40 more output tokens)."""
    mode: str = "pointwise"
    """pointwise (a call per criterion), both (a call per chunk for both criteria) or
    listwise (a call per question for all its chunks): fewer calls, lower fidelity."""
    temperature: float = 0.0
    timeout_s: float = 120.0
    max_retries: int = 5
    """Retries of a call after a rate limit (429), timeout, dropped connection or 5xx."""
    requests_per_minute: float = 0
    """Budget for the endpoint (0: none). Shared by every concurrent request."""
    tokens_per_minute: float = 0
    price_prompt_per_mtok: float = 0
    """USD per million prompt tokens; with the completion price, runs report their cost."""
    price_completion_per_mtok: float = 0
    criteria: CriteriaConfig = field(default_factory=CriteriaConfig)


@dataclass(frozen=True)
class OverlapRange:
    """chunk_overlap is searched over low..high in steps, always below the chunk size."""

    low: int = 0
    high: int = 200
    step: int = 50


@dataclass(frozen=True)
class SpaceConfig:
    """The search space of a sweep. An empty list keeps the experiment's own value."""

    chunk_size: tuple[int, ...] = ()
    chunk_overlap: OverlapRange | None = None
    k: tuple[int, ...] = ()
    fetch_k: tuple[int, ...] = ()
    reranker: tuple[str, ...] = ()
    embedder: tuple[str, ...] = ()
    """Embedder ids: local-minilm, openai, openai:<model>, sentence-transformers:<name or folder>."""


@dataclass(frozen=True)
class SweepConfig:
    trials: int = 20
    seed: int = 0
    sampler: str = "tpe"
    """`tpe` (Optuna's TPE, seeded) or `grid` (every combination, for small spaces)."""
    objective: tuple[str, ...] = ("mrr@k",)
    """One or two metric ids; `@k` means at each trial's own k, `@3` at a fixed k. Two ids
    (e.g. mrr@k and context_chars@k) give a Pareto front."""
    pruner: str = "median"
    """`median` (Optuna's MedianPruner on the running objective) or `none`."""
    batches: tuple[float, ...] = (0.25, 0.5, 1.0)
    """Growing shares of the questions after which a trial reports and may be pruned."""
    baseline: bool = True
    """Enqueue the experiment's own settings as trial 0."""
    space: SpaceConfig = field(default_factory=SpaceConfig)


@dataclass(frozen=True)
class ExperimentConfig:
    name: str
    path: str
    """The experiment file this came from ("" when built in code)."""
    corpus: CorpusConfig
    questions: QuestionsConfig
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)

    @property
    def base_dir(self) -> Path:
        return Path(self.path).parent if self.path else Path.cwd()

    def resolve_path(self, p: str) -> str:
        """A path from the file, made absolute against the file's folder; URLs unchanged."""
        if p.startswith(("http://", "https://")):
            return p
        path = Path(os.path.expanduser(p))
        return str(path if path.is_absolute() else (self.base_dir / path).resolve())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SECTIONS = ("corpus", "questions", "chunking", "retrieval", "embedder", "judge", "sweep")


def _coerce(value: Any, tp: Any, where: str, name: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is tuple:
        item = typing.get_args(tp)[0]
        if isinstance(value, tuple):  # a config dict built in process, not read from JSON
            value = list(value)
        if not isinstance(value, list):
            value = [value]
        return tuple(_coerce(v, item, where, name) for v in value)
    if origin in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(where, name, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(where, name, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(where, name, f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(where, name, f"expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported config type {tp}")


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _build(cls: type, data: Any, where: str, prefix: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(where, prefix, f"expected a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.name != "path"}
    unknown = sorted(set(data) - fields)
    if unknown:
        key = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(where, key, f"unknown key; expected one of {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        dotted = f"{prefix}.{name}" if prefix else name
        tp = _unwrap_optional(hints[name])
        if dataclasses.is_dataclass(tp):
            kwargs[name] = tp(**_build(tp, value, where, dotted))
        else:
            kwargs[name] = _coerce(value, tp, where, dotted)
    return kwargs


def _leaf_keys() -> dict[str, list[str]]:
    """Leaf name -> dotted keys, so `--set k=3` can stand for `retrieval.k=3`."""
    out: dict[str, list[str]] = {}

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            tp = _unwrap_optional(typing.get_type_hints(cls)[f.name])
            dotted = f"{prefix}.{f.name}" if prefix else f.name
            if dataclasses.is_dataclass(tp):
                walk(tp, dotted)
            else:
                out.setdefault(f.name, []).append(dotted)

    for section in _SECTIONS:
        if section != "sweep":  # sweep settings shadow leaf names; they take dotted keys
            walk(typing.get_type_hints(ExperimentConfig)[section], section)
    return out


def _parse_override_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def apply_overrides(data: dict[str, Any], overrides: typing.Sequence[str]) -> dict[str, Any]:
    """Return a copy of `data` with `key=value` overrides applied (dotted keys or unique leaf
    names; values parsed as TOML, falling back to a plain string)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    leaves = _leaf_keys()
    for item in overrides:
        if "=" not in item:
            raise ConfigError("--set", item, "expected key=value, e.g. chunking.chunk_size=500")
        key, raw = item.split("=", 1)
        key = key.strip()
        if "." not in key and key not in ("name",):
            matches = leaves.get(key, [])
            if len(matches) != 1:
                raise ConfigError(
                    "--set", key, "unknown key; use a dotted key such as chunking.chunk_size"
                )
            key = matches[0]
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part, {})
            if not isinstance(child, dict):
                raise ConfigError("--set", key, f"{part} is not a table")
            node[part] = child = dict(child)
            node = child
        node[parts[-1]] = _parse_override_value(raw)
    return out


def parse_experiment(
    data: dict[str, Any], path: str = "", overrides: typing.Sequence[str] = ()
) -> ExperimentConfig:
    """Validate a parsed TOML mapping (plus overrides) into an ExperimentConfig."""
    where = path or "<experiment>"
    data = apply_overrides(data, overrides)
    kwargs = _build(ExperimentConfig, data, where, "")
    kwargs.setdefault("name", Path(path).stem if path else "experiment")
    for section in ("corpus", "questions"):
        if section not in kwargs:
            raise ConfigError(where, section, f"missing [{section}] table")
    config = ExperimentConfig(path=str(Path(path).resolve()) if path else "", **kwargs)
    validate(config)
    return config


def validate(config: ExperimentConfig) -> None:
    """Checks that span fields; raises ConfigError naming the field."""
    where = config.path or "<experiment>"
    if not config.corpus.sources:
        raise ConfigError(where, "corpus.sources", "expected at least one file, folder or URL")
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
    if config.embedder.name not in EMBEDDERS:
        raise ConfigError(
            where, "embedder.name", f"expected local-minilm or openai, got {config.embedder.name!r}"
        )
    if config.retrieval.reranker not in RERANKERS:
        raise ConfigError(
            where,
            "retrieval.reranker",
            f"expected one of {list(RERANKERS)}, got {config.retrieval.reranker!r}",
        )
    r = config.retrieval
    if r.fetch_k < 1:
        raise ConfigError(where, "retrieval.fetch_k", f"expected >= 1, got {r.fetch_k}")
    if (
        len(r.hybrid_weights) != 2
        or any(w < 0 for w in r.hybrid_weights)
        or not sum(r.hybrid_weights)
    ):
        raise ConfigError(
            where,
            "retrieval.hybrid_weights",
            f"expected two weights >= 0, got {list(r.hybrid_weights)}",
        )
    if not 0 <= r.mmr_lambda <= 1:
        raise ConfigError(where, "retrieval.mmr_lambda", f"expected 0..1, got {r.mmr_lambda}")
    if config.embedder.name == "sentence-transformers" and not config.embedder.model:
        raise ConfigError(
            where, "embedder.model", "sentence-transformers needs a model folder or name"
        )
    _validate_sweep(config.sweep, where)
    j = config.judge
    if j.mode not in ("pointwise", "both", "listwise"):
        raise ConfigError(
            where, "judge.mode", f"expected pointwise, both or listwise, got {j.mode!r}"
        )
    if j.concurrency < 1:
        raise ConfigError(where, "judge.concurrency", "expected an integer >= 1")
    for name in ("timeout_s",):
        if getattr(j, name) <= 0:
            raise ConfigError(where, f"judge.{name}", "expected a number > 0")
    for name in (
        "max_retries",
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


RERANKERS = ("none", "bm25", "hybrid", "mmr", "cross-encoder", "llm")
EMBEDDERS = ("local-minilm", "openai", "sentence-transformers")


def parse_embedder_id(value: str) -> tuple[str, str]:
    """("openai", "text-embedding-3-large") for "openai:text-embedding-3-large"."""
    name, _, model = value.partition(":")
    return name, model


_OBJECTIVE = re.compile(r"^([a-z_]+)@(k|[1-9][0-9]*)$")


def parse_objective(metric_id: str) -> tuple[str, int | None]:
    """("mrr", None) for "mrr@k" (the trial's own k); ("mrr", 3) for "mrr@3"."""
    m = _OBJECTIVE.match(metric_id)
    if not m:
        raise ValueError(metric_id)
    return m.group(1), None if m.group(2) == "k" else int(m.group(2))


def _validate_sweep(sweep: SweepConfig, where: str) -> None:
    from harness.metrics import METRIC_NAMES

    names = (*METRIC_NAMES, "failures")
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
            name, _ = parse_objective(metric_id)
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


def experiment_from_dict(
    d: dict[str, Any], overrides: typing.Sequence[str] = ()
) -> ExperimentConfig:
    """An ExperimentConfig back from `ExperimentConfig.to_dict()` (as a run header or
    sweep.json holds it), with optional `key=value` overrides on top."""

    def drop_none(x: Any) -> Any:  # an unset optional table is written as null
        return (
            {k: drop_none(v) for k, v in x.items() if v is not None} if isinstance(x, dict) else x
        )

    data = drop_none({k: v for k, v in d.items() if k != "path"})
    return parse_experiment(data, d.get("path", ""), overrides)


def load_experiment(
    path: str | os.PathLike[str], overrides: typing.Sequence[str] = ()
) -> ExperimentConfig:
    """Read and validate an experiment file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "", "experiment file not found")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), "", f"not valid TOML ({exc})") from None
    return parse_experiment(data, str(p), overrides)
