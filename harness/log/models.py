"""The result log's records: what `header.json`, `questions.jsonl`, `sweep.json` and
`trials.jsonl` hold, field by field.

They are frozen dataclasses, like the records between stages (a `questions.jsonl` line
*is* a `harness.types.QuestionResult`), so the pipeline builds them at no cost and the
CLI, the report and notebooks read the same typed values. Their schema is pydantic's
reading of these classes (`harness.log.io.schema(RunHeader)`): every file is validated
against it when read, so a hand-edited or torn file gives one line naming the file and
the field, never a traceback or a silently wrong value.

LOG_VERSION counts incompatible changes; a reader refuses a log newer than itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.log.status import effective_status
from harness.metrics import headline
from harness.types import LOG_VERSION, ComponentSpec, QuestionResult, plain

TRIAL_STATES = ("complete", "pruned", "failed", "interrupted", "requeued", "repeat")

_PREPARE = (
    "index_cache_hit",
    "index_s",
    "embedded_texts",
    "retrieve_ms_median",
    "rerank_llm_calls",
    "rerank_llm_cache_hits",
    "prepare_s",
)
_POOL = (
    "failure_pool_calls",
    "failure_pool_cache_hits",
    "failure_pool_errors",
    "failure_pool_prompt_tokens",
    "failure_pool_completion_tokens",
)
_JUDGE = (
    "judge_calls",
    "judge_paid_verdicts",
    "judge_cache_hits",
    "judge_errors",
    "judge_retries",
    "judge_failed_attempts",
    "prompt_tokens",
    "completion_tokens",
    "judge_call_median_s",
)


@dataclass(frozen=True)
class RunStats(Mapping[str, Any]):
    """`header.json`'s stats: what a run cost and how long it took.

    Written in groups, each present only once the run got that far: preparation (index,
    embedding, retrieval), the failure pools' share of the judging, the verdict shares,
    judging time, the judge's totals, total time and cost. A field left None was not
    recorded (a null the run did record, such as the median of no calls, is written as
    null within its group). Keys this version does not know are kept in `extra` and
    written back as read. Read-only mapping over the recorded keys, in file order, for
    readers that list every number (the report's table)."""

    index_cache_hit: bool | None = None
    """The index came from the cache (nothing embedded for it)."""
    index_s: float | None = None
    """Seconds to load or build the index."""
    embedded_texts: int | None = None
    """Texts embedded (chunks and questions not in the embedding cache)."""
    retrieve_ms_median: float | None = None
    """Median retrieval time per question, milliseconds."""
    rerank_llm_calls: int | None = None
    """Judge calls the llm reranker made."""
    rerank_llm_cache_hits: int | None = None
    """Verdicts the llm reranker took from the cache."""
    prepare_s: float | None = None
    """Seconds from the start to retrieval done."""
    failure_pool_calls: int | None = None
    """Of the judge's calls, those for the failure pools (with failure analysis on)."""
    failure_pool_cache_hits: int | None = None
    failure_pool_errors: int | None = None
    failure_pool_prompt_tokens: int | None = None
    failure_pool_completion_tokens: int | None = None
    failure_pool_cost_usd: float | None = None
    complete_share: float | None = None
    """Share of judged chunks called complete (a saturating judge calls nearly all)."""
    unsure_share: float | None = None
    """Share of probabilities between 0.4 and 0.6 (a guessing judge)."""
    hits_flagged: int | None = None
    """Retrieved chunks that address the grader or an AI."""
    hits_not_judged: int | None = None
    """Lazy judging: chunks left unjudged once their question was settled."""
    judge_s: float | None = None
    """Seconds spent judging."""
    judge_calls: int | None = None
    """Every request the judge made (retries and failed ones included)."""
    judge_paid_verdicts: int | None = None
    judge_cache_hits: int | None = None
    judge_errors: int | None = None
    judge_retries: int | None = None
    judge_failed_attempts: int | None = None
    """Requests that brought no usable answer (None in older logs)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    judge_call_median_s: float | None = None
    """Median seconds per answered request (null: no calls)."""
    total_s: float | None = None
    """Seconds for the whole run."""
    cost_usd: float | None = None
    """What the judge's tokens cost at the configured prices (None: no prices)."""
    trust: dict[str, Any] | None = None
    """How far the headline numbers can be trusted: the judge's error rates (from an exam
    or labels), raw and corrected complete/relevant rates with intervals, and a one-line
    statement (`harness.judge.calibration.trust_summary`); None in older logs."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Recorded keys this version has no field for, as read."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunStats:
        """The record of a stats mapping (known keys to fields, the rest to `extra`)."""
        known, extra = _split_stats(d)
        return cls(**known, extra=extra)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Read through the dataclass's own checks after the unknown keys go to `extra`."""
        from pydantic_core import core_schema

        def split(obj: Any) -> Any:
            if not isinstance(obj, dict) or "extra" in obj:
                return obj
            known, extra = _split_stats(obj)
            return {**known, "extra": extra}

        return core_schema.no_info_before_validator_function(split, handler(source))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written as header.json's stats (the groups the run recorded,
        in the order it records them)."""
        out: dict[str, Any] = {}
        if self.prepare_s is not None or self.index_s is not None:
            out.update({k: getattr(self, k) for k in _PREPARE})
        if self.failure_pool_calls is not None:
            out.update({k: getattr(self, k) for k in _POOL})
            _put(out, "failure_pool_cost_usd", self.failure_pool_cost_usd)
        if self.hits_flagged is not None or self.complete_share is not None:
            out["complete_share"] = self.complete_share
            out["unsure_share"] = self.unsure_share
            _put(out, "hits_flagged", self.hits_flagged)
            _put(out, "hits_not_judged", self.hits_not_judged)
        _put(out, "judge_s", self.judge_s)
        if self.judge_calls is not None:
            for k in _JUDGE:  # judge_failed_attempts: None in older logs, left out
                if k != "judge_failed_attempts" or self.judge_failed_attempts is not None:
                    out[k] = getattr(self, k)
        _put(out, "total_s", self.total_s)
        _put(out, "cost_usd", self.cost_usd)
        _put(out, "trust", self.trust)
        out.update(self.extra)
        return out

    def __getitem__(self, key: str) -> Any:
        d = self.to_dict()
        if key not in d:
            raise KeyError(key)
        return d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


_STATS_FIELDS = frozenset(f.name for f in fields(RunStats)) - {"extra"}


def _split_stats(d: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    known = {k: v for k, v in d.items() if k in _STATS_FIELDS}
    return known, {k: v for k, v in d.items() if k not in _STATS_FIELDS}


@dataclass(frozen=True)
class RunHeader:
    """`header.json`: one run's identity, settings, metrics and cost. Rewritten
    atomically at the start, after retrieval, and at the end of the run."""

    run_id: str
    """The run folder's name."""
    name: str
    """The experiment's name."""
    status: str
    """running, done, pruned (a sweep stopped it early), interrupted or failed."""
    started_at: str
    """Local time the run started (ISO 8601 with offset)."""
    config: dict[str, Any]
    """The resolved experiment (`ExperimentConfig.to_dict()`), overrides included."""
    components: dict[str, ComponentSpec]
    """splitter, embedder, reranker and judge as {name, args}: enough to rebuild them."""
    data: dict[str, Any]
    """Hashes and counts of the inputs: corpus and questions sha256, files, n_documents,
    n_chunks, n_questions, the index key."""
    ks: tuple[int, ...]
    """The cut-offs every metric is reported at (1..k)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Means over questions by metric id (`mrr@3`), plus the counts failures@k, errors@k."""
    metrics_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    """95% bootstrap interval over questions for each mean of metrics.CI_METRICS."""
    metric_bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Lazy judging: `name@k` -> (least, most) of the metrics that depend on chunks left
    unjudged; such a metric is never in `metrics` (metrics/lazy.py)."""
    stats: RunStats = field(default_factory=RunStats)
    """Cost and timing: judge calls, cache hits, errors, retries, tokens, cost_usd,
    index and judging seconds, texts embedded."""
    finished_at: str | None = None
    """Local time the run ended; None while it runs."""
    error: str | None = None
    """Why the run failed or stopped, in one line."""
    pid: int | None = None
    """The id of the process that ran it (None in logs written before it was recorded): with
    `host`, a reader tells a run still going from one whose process was killed."""
    host: str | None = None
    """The host name of the machine that ran it (None in older logs)."""
    warnings: list[str] = field(default_factory=list)
    """What a reader of the metrics should know, one line each (e.g. a judge that calls
    nearly every chunk complete, so the metrics saturate)."""
    log_version: int = LOG_VERSION
    """The log format this header was written in."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to header.json (key order is part of the file's look)."""
        return {
            "log_version": self.log_version,
            "run_id": self.run_id,
            "name": self.name,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
            # Only where recorded, so an older header reads back to the same JSON.
            **({"pid": self.pid} if self.pid is not None else {}),
            **({"host": self.host} if self.host is not None else {}),
            "config": self.config,
            "components": {k: v.to_dict() for k, v in self.components.items()},
            "data": self.data,
            "ks": list(self.ks),
            "metrics": self.metrics,
            "metrics_ci": {k: list(v) for k, v in self.metrics_ci.items()},
            **(
                {"metric_bounds": {k: list(v) for k, v in self.metric_bounds.items()}}
                if self.metric_bounds
                else {}
            ),
            "stats": self.stats.to_dict(),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }

    @property
    def k(self) -> int:
        """The largest cut-off of the run (0 before it is known)."""
        return max(self.ks) if self.ks else 0


@dataclass(frozen=True)
class RunLog:
    """A run folder read back: its header and every finished question, in the order
    they finished."""

    run_dir: Path
    header: RunHeader
    questions: tuple[QuestionResult, ...]

    def question(self, question_id: str) -> QuestionResult:
        """The finished question with this id (`questions` is in the order they finished);
        KeyError naming the run when it has none."""
        for q in self.questions:
            if q.question.question_id == question_id:
                return q
        raise KeyError(f"{self.run_dir}: no question with id {question_id!r} in this run")

    def __repr__(self) -> str:
        """One line (a notebook shows it; the whole log runs to megabytes): the folder,
        status (as `harness list` gives it: a run whose process is gone is interrupted),
        questions and the headline metrics at the run's k."""
        h = self.header
        metrics = "".join(f", {key} {v:.3f}" for key, v in headline(h.metrics, h.k).items())
        n = len(self.questions)
        return (
            f"RunLog({str(self.run_dir)!r}: {effective_status(h)}, {n} question{'s' * (n != 1)}, "
            f"k {h.k}{metrics})"
        )


@dataclass(frozen=True)
class TrialRecord:
    """One line of `trials.jsonl`, appended as a trial ends. A trial number listed twice
    (a requeued trial) is read as its last line."""

    number: int
    """Optuna's trial number."""
    state: str
    """complete, pruned, failed, interrupted, requeued (cut short; run again) or repeat
    (the sampler proposed the settings of a complete or pruned trial again: not run, it
    ends as that trial did; `error` names it, `run_dir` is that trial's)."""
    params: dict[str, Any]
    """The trial's settings: chunk_size, chunk_overlap, k, reranker, fetch_k, embedder."""
    values: list[float] | None
    """The objective values of a complete trial, in the order of the sweep's objective."""
    run_dir: str
    """The trial's run folder."""
    error: str | None = None
    """Why it failed or was pruned."""
    questions_done: int = 0
    """Questions judged before it ended (fewer than all when pruned)."""
    duration_s: float = 0.0
    """Wall time of the trial."""

    @property
    def repeat_of(self) -> int | None:
        """For a repeat, the number of the trial that ran its settings (its `run_dir` is
        that trial's folder, `trials/N`); None for any other trial."""
        name = Path(self.run_dir).name if self.state == "repeat" else ""
        return int(name) if name.isdigit() else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of its line."""
        return plain(self)


@dataclass(frozen=True)
class SamplerSpec:
    """How Optuna proposes settings."""

    name: str
    """tpe or grid."""
    seed: int
    """The sampler's seed."""
    reason: str = ""
    """Why the sweep runs another sampler than the experiment's `sweep.sampler` (a space
    no larger than the trials asked runs as a grid); empty when it runs that one."""


@dataclass(frozen=True)
class TrialCounts:
    """Finished trials by state."""

    complete: int = 0
    pruned: int = 0
    failed: int = 0
    repeats: int = 0
    """Proposals of settings a complete or pruned trial had taken: not run, and not counted
    against the budget (up to as many as the budget)."""


@dataclass(frozen=True)
class BestTrial:
    """The best trial (one objective) or one trial of the Pareto front (two)."""

    number: int
    params: dict[str, Any]
    values: list[float] | None
    run_dir: str
    indistinguishable: list[int] | None = None
    """For one objective: complete trials whose paired bootstrap interval of the
    difference to the best contains 0 (None for a Pareto front)."""
    confidence: float | None = None
    """The confidence of those intervals."""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object; the tie fields only where they were computed."""
        d = plain(self)
        if self.indistinguishable is None:
            d.pop("indistinguishable")
            d.pop("confidence")
        return d


@dataclass(frozen=True)
class TrialTest:
    """A complete trial compared with the best on the questions both answered."""

    trial: int
    """The trial's number."""
    value: float
    """Its objective value (the mean over its questions)."""
    questions: int
    """Questions both it and the best have a value for (the pairs tested)."""
    p_value: float
    """Two-sided p-value of the paired test of its per-question difference to the best."""
    p_holm: float
    """`p_value` adjusted by Holm's method for the number of trials compared."""


@dataclass(frozen=True)
class RankingStability:
    """How reproducible the complete trials' ranking is over the sweep's questions:
    `harness.metrics.split_half_taus` of their per-question objective values."""

    trials: int
    """Complete trials ranked, one per distinct setting."""
    questions: int
    """Questions every one of them has a value for (the ones split)."""
    draws: int
    """Random splits of those questions into two halves."""
    tau: float
    """Median Kendall tau between the two halves' rankings of the trials."""
    tau_low: float
    """Its 10th percentile over the splits."""
    tau_high: float
    """Its 90th percentile over the splits."""
    same_winner: float | None = None
    """Share of the splits whose two halves put the same setting first (None: recorded
    before it was)."""


@dataclass(frozen=True)
class Recommendation:
    """The configuration to pick, and why: the cheapest trial that a paired test cannot
    separate from the best (single-objective sweeps only)."""

    trial: int
    """The recommended trial's number."""
    params: dict[str, Any]
    """Its settings."""
    reason: str
    """Why it is recommended, in one sentence."""
    best: int
    """The best trial's number (by the objective)."""
    objective: str
    """The metric id the trials were compared on."""
    alpha: float
    """The level below which a Holm-adjusted p-value separates a trial from the best."""
    test: str
    """The paired test used, in words (name, resamples, seed)."""
    indistinguishable: list[int]
    """Complete trials whose Holm-adjusted p-value is >= alpha: not separable from the best."""
    comparisons: list[TrialTest]
    """Every complete trial tested against the best, with raw and adjusted p-values."""
    context_chars: float | None = None
    """Mean characters the recommended trial hands a generator (context_chars at its k)."""
    runner_up: int | None = None
    """The second-best complete trial (None with fewer than two)."""
    more_questions: int | None = None
    """Questions beyond those used that a paired test at alpha with 80% power would need to
    separate the best from the runner-up (normal approximation); None when their mean
    difference is 0 (nothing to separate) or there is no runner-up."""
    stability: RankingStability | None = None
    """How far another set of questions of half the size would rank the trials alike
    (None with fewer than 3 distinct settings or 4 shared questions)."""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object."""
        return dict(plain(self))


@dataclass(frozen=True)
class SweepStats:
    """What the sweep's judging cost, summed over its trials."""

    judge_calls: int = 0
    judge_cache_hits: int = 0
    judge_errors: int = 0
    judge_retries: int = 0
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    distinct_verdicts: int = 0
    """Distinct (question, chunk text, criterion) any trial asked about: the floor for a
    sweep that pays once per distinct verdict."""
    naive_calls: int = 0
    """What a tool without a cache would make: for every trial, questions x k x 2."""
    batch_verdicts: int = 0
    """Verdicts paid through a batch API before the trials ran (judge.batch); the trials
    read them from the cache."""
    batch_cost_usd: float = 0.0
    """What those batch jobs cost (at judge.batch_discount of the online price), included
    in cost_usd."""


@dataclass(frozen=True)
class SweepSummary:
    """`sweep.json`: the sweep's settings, progress, best trial(s) and cost. Rewritten
    atomically after every trial."""

    sweep_id: str
    """The sweep folder's name, also the Optuna study's name."""
    status: str
    """running, done, interrupted or failed."""
    updated_at: str
    """Local time of the last rewrite."""
    config: dict[str, Any]
    """The resolved experiment the sweep started with, overrides included."""
    objective: list[str]
    """One or two metric ids (`mrr@k`: at each trial's own k)."""
    directions: list[str]
    """maximize or minimize, per objective."""
    sampler: SamplerSpec
    pruner: str
    """median or none."""
    space: dict[str, Any]
    """The search space (`SpaceConfig` as a mapping)."""
    storage: str
    """The Optuna storage URL, its password replaced by ***."""
    study_name: str
    n_trials_requested: int
    """The finished trials the sweep was asked for (sweep.trials, or --trials), no more
    than a grid holds."""
    counts: TrialCounts
    best: list[BestTrial]
    stats: SweepStats
    error: str | None = None
    """Why the sweep stopped, in one line."""
    experiment: str = ""
    """The experiment file the sweep was started from."""
    pid: int | None = None
    """The id of the process running the sweep (None in older logs): with `host`, a reader
    tells a sweep still going from one whose process was killed."""
    host: str | None = None
    """The host name of the machine running the sweep (None in older logs)."""
    recommendation: Recommendation | None = None
    """The cheapest trial a paired test cannot separate from the best, with the reason
    (None for a Pareto front, before any trial completed, and in older logs)."""
    importances: dict[str, float] = field(default_factory=dict)
    """Parameter -> its share (summing to 1) of the objective's variation over the
    complete trials (Optuna's PED-ANOVA), computed when the sweep ends; empty before."""
    importances_note: str | None = None
    """Why `importances` is empty at the end of a sweep (too few trials, one parameter)."""
    warnings: list[str] = field(default_factory=list)
    """What a reader of the sweep should know, one line each, written when it ends (e.g.
    on generated questions: their source labels and the judge pick different winners)."""
    log_version: int = LOG_VERSION
    """The log format sweep.json was written in."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to sweep.json (pid, host, recommendation, importances
        and their note, warnings, the batch stats and the sampler's reason only where
        recorded, so an older sweep.json reads back the same)."""
        d = plain(self)
        d["best"] = [b.to_dict() for b in self.best]
        for key in ("pid", "host", "recommendation", "importances_note"):
            if d[key] is None:
                d.pop(key)
        for key in ("importances", "warnings"):
            if not d[key]:
                d.pop(key)
        for key in ("batch_verdicts", "batch_cost_usd"):  # only a batch sweep's
            if not d["stats"][key]:
                d["stats"].pop(key)
        if not d["sampler"]["reason"]:
            d["sampler"].pop("reason")
        if not d["counts"]["repeats"]:
            d["counts"].pop("repeats")
        order = ("log_version", "sweep_id", "status", "updated_at", "error", "experiment")
        return {**{k: d[k] for k in order}, **{k: v for k, v in d.items() if k not in order}}


@dataclass(frozen=True)
class SweepLog:
    """A sweep folder read back: its summary and the last line of every trial."""

    sweep_dir: Path
    summary: SweepSummary
    trials: tuple[TrialRecord, ...]

    def __repr__(self) -> str:
        """One line: the folder, status (a sweep whose process is gone is interrupted),
        finished trials, the best trial (or the Pareto front's size) and the
        recommendation."""
        s, c = self.summary, self.summary.counts
        out = (
            f"SweepLog({str(self.sweep_dir)!r}: {effective_status(s)}, {c.complete} complete, "
            f"{c.pruned} pruned, {c.failed} failed"
        )
        values = s.best[0].values if len(s.best) == 1 else None
        if values:
            b = s.best[0]
            out += f", best trial {b.number} {s.objective[0]} {values[0]:.3f} {b.params}"
        elif s.best:
            out += f", {len(s.best)} trials on the Pareto front"
        if s.recommendation is not None and s.recommendation.trial != s.recommendation.best:
            out += f", recommended trial {s.recommendation.trial}"
        return out + ")"
