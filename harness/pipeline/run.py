"""One configuration end to end: prepare, judge, metrics, result log.

It writes the result log as work finishes: a question's line is appended the moment its
last verdict is in, and the header is rewritten at the start and at the end, so a crash
or Ctrl-C keeps every finished question, and the verdict cache keeps every paid verdict."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loguru import logger

from harness import judge as judge_stage
from harness import metrics as metrics_stage
from harness.config import ExperimentConfig, JudgeConfig, SweepConfig, as_experiment
from harness.errors import HarnessError, os_error_message
from harness.judge.calibration import Calibration, judge_key, read_calibration, trust_summary
from harness.judge.injection import injection_flags, text_for_judge
from harness.log import (
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_PRUNED,
    STATUS_RUNNING,
    RunHeader,
    RunLog,
    RunStats,
    RunWriter,
    new_run_id,
    now_iso,
    read_run,
    this_host,
)
from harness.metrics.lazy import (
    aggregate_partial,
    is_settled,
    lazy_cutoff,
    lazy_target,
    question_metrics_partial,
)
from harness.metrics.overlap import overlap_warning, source_overlaps
from harness.metrics.source import source_metrics
from harness.pipeline.failures import explain_failures
from harness.pipeline.prepare import Prepared, cap_k, default_cache_dir, load_inputs, prepare
from harness.pipeline.progress import LogProgress, ProgressSink
from harness.stores import CacheStorage, VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE
from harness.types import (
    Chunk,
    CriterionVerdict,
    Hit,
    JudgedHit,
    Question,
    QuestionResult,
    Verdict,
)


def run_experiment(
    config: ExperimentConfig | str | os.PathLike[str],
    *,
    results_dir: str | os.PathLike[str] = "results",
    cache_dir: str | os.PathLike[str] | None = None,
    judge: judge_stage.Judge | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    batches: Sequence[int] = (),
    after_batch: AfterBatch | None = None,
    progress: ProgressSink | None = None,
    storage: CacheStorage | None = None,
) -> RunLog:
    """Run one configuration and return its result log, read back from disk.

    `config` is an experiment (`load_experiment`) or its file's path. `judge` replaces the
    configured judge (a sweep shares one; tests pass a scripted one). The verdict cache
    lives in `cache_dir` (default: `default_cache_dir()`), so a rerun after a crash pays
    only for what was never judged. With `batches` (cumulative question counts) and
    `after_batch`, questions are judged batch by batch and the callback may stop the run
    after any batch: its status is then "pruned", with the questions it did finish in the
    log and metrics over those. `storage` puts the verdict and embedding caches elsewhere
    (a PostgreSQL database shared by a sweep's workers).
    """
    t_start = time.perf_counter()
    config = as_experiment(config)
    if judge is None:
        judge_stage.check_endpoint(config.judge, config.path or "<experiment>")
    # Bad documents or questions stop the run here, before it has a folder to leave behind.
    inputs = load_inputs(config)
    if config.judge.calibration:  # a bad calibration file stops the run before its folder
        read_calibration(config.resolve_path(config.judge.calibration))
    config = cap_k(config, len(inputs.chunks))
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    folder = Path(run_dir) if run_dir else Path(results_dir) / new_run_id(config.name)
    writer = RunWriter(folder)
    header = _new_header(config, folder.name)
    writer.write_header(header)
    cost = _RunCost(config.judge, t_start)
    try:
        with contextlib.ExitStack() as stack:
            verdict_cache = (
                storage.verdict_cache() if storage else VerdictCache(cache / VERDICTS_FILE)
            )
            stack.callback(verdict_cache.close)
            judges = _JudgeOnDemand(stack, config, cache, folder, judge)
            prepared = prepare(
                config,
                cache_dir=cache,
                judge=judges.get,
                verdict_cache=verdict_cache,
                inputs=inputs,
                storage=storage,
            )
            cost.run.update(prepared.stats)
            header = replace(header, components=dict(prepared.components), data=prepared.data)
            writer.write_header(header)
            t_judge = time.perf_counter()
            the_judge = judges.get()
            header, calibration = _with_judge(header, config, the_judge)
            writer.write_header(header)
            grading = _Grading(
                config,
                prepared,
                the_judge,
                verdict_cache,
                cost.judge,
                writer,
                progress or LogProgress(),
                calibration,
                cost.pool,
            )
            judged, trust_note = _judge_run(grading, cost, batches, after_batch)
            # every run on generated questions is checked for copied wording (#24)
            bias = overlap_warning(source_overlaps(inputs.questions, inputs.docs))
            if bias:
                logger.warning(bias)
            header = replace(
                header,
                warnings=[
                    *inputs.warnings,
                    *judged.tally.warnings(),
                    *trust_note,
                    *([bias] if bias else []),
                ],
            )
        cost.run["judge_s"] = round(time.perf_counter() - t_judge, 3)
        header = _finished(header, judged, config.retrieval.k, cost.stats())
        writer.write_header(header)
    except KeyboardInterrupt:
        writer.write_header(_ended(header, STATUS_INTERRUPTED, "interrupted", cost.stats()))
        raise
    except Exception as exc:
        _write_failed(writer, _ended(header, STATUS_FAILED, _failure(exc), cost.stats()))
        raise
    finally:
        writer.close()
    return read_run(folder)


def _new_header(config: ExperimentConfig, run_id: str) -> RunHeader:
    """The header a run starts with: what it runs, nothing measured yet."""
    return RunHeader(
        run_id=run_id,
        name=config.name,
        status=STATUS_RUNNING,
        started_at=now_iso(),
        config=config.to_dict(),
        components={},
        data={},
        ks=tuple(range(1, config.retrieval.k + 1)),
        # Who writes it: a reader on this host then sees a run killed with -9 as interrupted.
        pid=os.getpid(),
        host=this_host(),
    )


class _JudgeOnDemand:
    """The run's judge: the one given, else the configured one, opened on first use (a run
    whose questions are all cached never starts a local judge server) and closed with
    the run's exit stack."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        config: ExperimentConfig,
        cache: Path,
        folder: Path,
        judge: judge_stage.Judge | None,
    ) -> None:
        self._stack, self._config, self._cache, self._folder = stack, config, cache, folder
        self._judge = judge

    def get(self) -> judge_stage.Judge:
        """The judge, opened now if it was not yet."""
        if self._judge is None:
            self._judge = self._stack.enter_context(
                judge_stage.open_judge(
                    self._config.judge, cache_dir=self._cache, log_dir=self._folder
                )
            )
        return self._judge


@dataclass
class _RunCost:
    """What a run has cost so far: the judge's totals, the failure pools' share of them
    (failure_pool_*; judge_calls is every call the judge made, as the endpoint counts
    them), and the other recorded numbers (`run`: preparation, shares, timings)."""

    config: JudgeConfig
    started: float
    judge: judge_stage.JudgeStats = field(default_factory=judge_stage.JudgeStats)
    pool: _TeeStats = field(init=False)
    run: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pool = _TeeStats(total=self.judge)

    def stats(self) -> RunStats:
        """The header's stats as they stand."""
        return _stats(self.run, self.judge, self.started, self.config)


def _with_judge(
    header: RunHeader, config: ExperimentConfig, the_judge: judge_stage.Judge
) -> tuple[RunHeader, Calibration | None]:
    """The header with the run's judge (and its calibration, if any) among its components."""
    components = {**header.components, "judge": the_judge.spec}
    calibration = load_calibration(config, the_judge)
    if calibration is not None:
        components["calibration"] = calibration.spec()
    return replace(header, components=components), calibration


def _judge_run(
    grading: _Grading, cost: _RunCost, batches: Sequence[int], after_batch: AfterBatch | None
) -> tuple[Judged, list[str]]:
    """Judge the prepared run, booking the failure pools, the verdict shares and the
    trust summary in the run's stats and logging its warnings; also returns the trust
    summary's warning (none when the judge's error rates are known)."""
    try:
        judged = _judge_all(grading, batches, after_batch)
    finally:
        grading.progress.stop()
        if grading.prepared.pool is not None:
            cost.run.update(_pool_stats(cost.pool, grading.config.judge))
    tally = judged.tally
    cost.run.update(tally.to_stats())
    for w in tally.warnings():
        logger.warning(w)
    cost.run["trust"], note = trust_summary(
        tally.per_question, grading.calibration, lazy=tally.lazy, guessing=tally.guessing()
    )
    return judged, [note] if note else []


def _finished(header: RunHeader, judged: Judged, k: int, stats: RunStats) -> RunHeader:
    """The header of a run that ran to its end (or was pruned): its metrics. With lazy
    judging a metric that needs unjudged chunks is bounds, never a mean."""
    ks = range(1, k + 1)
    means, bounds = aggregate_partial(judged.per_question, judged.bounds, ks)
    ci = metrics_stage.aggregate_ci(judged.per_question, ks)
    return replace(
        header,
        status=STATUS_PRUNED if judged.stopped else STATUS_DONE,
        finished_at=now_iso(),
        metrics=means,
        metrics_ci={key: v for key, v in ci.items() if key not in bounds},
        metric_bounds=bounds,
        stats=stats,
    )


def _ended(header: RunHeader, status: str, error: str, stats: RunStats) -> RunHeader:
    """The header of a run stopped by Ctrl-C or an error."""
    return replace(header, status=status, finished_at=now_iso(), stats=stats, error=error)


def _failure(exc: Exception) -> str:
    """Why a run failed, in one line."""
    if isinstance(exc, HarnessError):
        return str(exc)
    if isinstance(exc, OSError):  # a full disk, a read-only folder: name the file
        return os_error_message(exc)
    return f"{type(exc).__name__}: {exc}"


def _write_failed(writer: RunWriter, failed: RunHeader) -> None:
    try:
        writer.write_header(failed)
    except OSError as write_exc:  # the disk that failed the run may refuse this too
        logger.warning("could not mark the run failed: {}", os_error_message(write_exc))


def _stats(
    run_stats: dict[str, Any],
    judge_stats: judge_stage.JudgeStats,
    t_start: float,
    config: JudgeConfig,
) -> RunStats:
    out = {
        **run_stats,
        **judge_stats.to_dict(),
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    cost = judge_stage.judge_cost(config, judge_stats.prompt_tokens, judge_stats.completion_tokens)
    if cost is not None:
        out["cost_usd"] = cost
    return RunStats.from_dict(out)


@dataclass
class _TeeStats(judge_stage.JudgeStats):
    """JudgeStats that also book every verdict into `total`."""

    total: judge_stage.JudgeStats | None = None

    def record(self, verdict: CriterionVerdict) -> None:
        """Add one verdict's cost here and to the total."""
        super().record(verdict)
        if self.total is not None:
            self.total.record(verdict)


def _pool_stats(stats: judge_stage.JudgeStats, config: JudgeConfig) -> dict[str, Any]:
    """What judging the failure pools cost, for the run header's stats (failure_pool_*):
    a part of judge_calls and the other totals, which the top k cost the rest of."""
    d = stats.to_dict()
    out = {
        "failure_pool_calls": d["judge_calls"],
        "failure_pool_cache_hits": d["judge_cache_hits"],
        "failure_pool_errors": d["judge_errors"],
        "failure_pool_prompt_tokens": d["prompt_tokens"],
        "failure_pool_completion_tokens": d["completion_tokens"],
    }
    cost = judge_stage.judge_cost(config, stats.prompt_tokens, stats.completion_tokens)
    if cost is not None:
        out["failure_pool_cost_usd"] = cost
    return out


AfterBatch = Callable[[int, list[dict[str, float]]], bool]
"""Called after each batch with (questions done, their metrics); True stops the run."""


SATURATED_COMPLETE_SHARE = 0.85
"""A judge that calls more than this share of judged chunks complete cannot separate
settings: hit rate and MRR saturate near 1."""
UNSURE_SHARE = 0.5
"""A judge whose P(yes) sits between 0.4 and 0.6 for more than this share of its
verdicts is guessing."""


@dataclass
class VerdictTally:
    """Counts over a run's verdicts, for the saturation warning and the run's stats."""

    judged: int = 0
    complete: int = 0
    with_p: int = 0
    unsure: int = 0
    flagged: int = 0
    policy: str = "mask"
    mode: str = "pointwise"
    """The judge's mode, for the saturation warning's advice."""
    lazy: bool = False
    not_judged: int = 0
    """Chunks lazy judging left unjudged once their question was settled."""
    per_question: list[tuple[int, int, int]] = field(default_factory=list)
    """(judged relevant, judged complete, judged) per question, for the trust summary."""

    def add(self, verdicts: Sequence[Verdict]) -> None:
        """Count a question's verdicts (failed ones are left out)."""
        ok = [v for v in verdicts if v.grade is not None]
        self.per_question.append(
            (sum(1 for v in ok if v.grade), sum(v.grade == 2 for v in ok), len(ok))
        )
        for v in verdicts:
            if v.grade is None:
                continue
            self.judged += 1
            self.complete += v.grade == 2
            for c in (v.relevant, v.complete):
                if c.p_yes is not None and c.asked:
                    self.with_p += 1
                    self.unsure += 0.4 <= c.p_yes <= 0.6

    def to_stats(self) -> dict[str, Any]:
        """complete_share and unsure_share for the run header's stats (and, after lazy
        judging, the chunks left unjudged)."""
        return {
            "complete_share": round(self.complete / self.judged, 4) if self.judged else None,
            "unsure_share": round(self.unsure / self.with_p, 4) if self.with_p else None,
            "hits_flagged": self.flagged,
            **({"hits_not_judged": self.not_judged} if self.lazy else {}),
        }

    def guessing(self) -> float | None:
        """The share of the judge's probabilities between 0.4 and 0.6 when it is above
        UNSURE_SHARE (on at least 10 of them); None when the judge is not guessing, or
        gave too few probabilities to tell."""
        if self.with_p < 10 or self.unsure / self.with_p <= UNSURE_SHARE:
            return None
        return self.unsure / self.with_p

    def warnings(self) -> list[str]:
        """The saturation warnings this run deserves, each one line."""
        out = []
        if self.flagged:
            done = "judged with those lines masked" if self.policy == "mask" else "judged as is"
            out.append(
                f"{self.flagged} retrieved chunks address the grader or an AI ({done}); "
                "harness show --failures lists them with the flagged text"
            )
        if self.judged >= 10 and self.complete / self.judged > SATURATED_COMPLETE_SHARE:
            # graded (on every collection of bench_fidelity) and criteria (on TREC DL) were
            # measured saying yes more often than pointwise (docs/pages/judging.md), so
            # pointwise is the one mode advised; the soft metrics only where the judge
            # gave probabilities (without them they equal the hard ones)
            soft = (
                f"compare settings by {SweepConfig().objective[0]} (a sweep's default objective), "
                if self.with_p
                else ""
            )
            mode = (
                'use judge.mode = "pointwise" (the default; it says yes less often), '
                if self.mode in ("graded", "criteria")
                else ""
            )
            out.append(
                f"the judge called {self.complete / self.judged:.0%} of {self.judged} judged "
                "chunks complete: hit rate and MRR saturate and cannot separate settings; "
                f"{soft}{mode}calibrate the judge on a few labels (harness label, harness "
                "calibrate), or use a stronger judge"
            )
        guessing = self.guessing()
        if guessing is not None:
            out.append(
                f"{guessing:.0%} of the judge's probabilities lie between 0.4 and 0.6: it "
                "is guessing, and its yes/no verdicts are near coin flips; check it on a few "
                "labels of your own (harness label, then harness validate) or use a "
                "stronger judge"
            )
        return out


def load_calibration(config: ExperimentConfig, judge: judge_stage.Judge) -> Calibration | None:
    """The experiment's judge calibration (judge.calibration), or None. A calibration
    fitted on another judge (another model, model file, prompt version, mode or grade
    cut-offs: `judge_key`) is not applied, with a warning: its cuts and error rates
    describe that judge, and applied to this one they would give numbers that are wrong
    and say they are trusted. So an experiment can ship the calibration of its local
    judge and still be pointed at a hosted one."""
    if not config.judge.calibration:
        return None
    cal = read_calibration(config.resolve_path(config.judge.calibration))
    if cal.judge and cal.judge != judge_key(judge.spec):
        logger.warning(
            "the calibration {} was fitted on another judge ({}), not this run's ({}): not "
            "applied; run harness calibrate for this judge",
            cal.path,
            cal.judge,
            judge_key(judge.spec),
        )
        return None
    return cal


@dataclass(frozen=True)
class Judged:
    """What judging a run's questions gave: the metrics of each question that finished,
    with its bounds (lazy judging), whether `after_batch` stopped the run, the tally."""

    per_question: list[dict[str, float]]
    bounds: list[dict[str, tuple[float, float]]]
    stopped: bool
    tally: VerdictTally


@dataclass(frozen=True)
class _Batch:
    """One batch of questions as (question, chunk) pairs for the judge."""

    start: int
    end: int
    pairs: list[tuple[str, str]]
    owner: list[int]
    """The question index of each pair."""


def question_result(
    question: Question,
    hits: Sequence[Hit],
    chunks: Mapping[str, Chunk],
    verdicts: Sequence[Verdict],
    ks: range,
    policy: str,
    extractive: bool,
) -> QuestionResult:
    """A question's line of the log from its hits' verdicts: graded chunks, metrics (or
    bounds, where lazy judging left chunks unjudged) and the judge's errors."""
    judged = tuple(
        JudgedHit(
            hit=h,
            chunk=chunks[h.chunk_id],
            verdict=v,
            flags=injection_flags(chunks[h.chunk_id].text, policy),
        )
        for h, v in zip(hits, verdicts, strict=True)
    )
    grades = [j.verdict.grade for j in judged]
    lengths = [len(j.chunk.text) for j in judged]
    probs = [j.verdict.probabilities() for j in judged]
    # Only extractive judging marks the answer's characters (its evidence sentence).
    evidence = (
        [len(j.verdict.complete.evidence or "") if j.verdict.grade == 2 else 0 for j in judged]
        if extractive
        else None
    )
    judged_n = next((i for i, v in enumerate(verdicts) if not v.judged), None)
    m, b = question_metrics_partial(grades, lengths, ks, probs, evidence, judged_n)
    # generated questions carry their source span: a label-like signal, no judge
    m.update(source_metrics([j.chunk for j in judged], question.source, ks))
    errors = [f"rank {j.hit.rank}: {j.verdict.error}" for j in judged if j.verdict.error]
    return QuestionResult(
        question=question,
        hits=judged,
        metrics=m,
        error="; ".join(errors) if errors else None,
        bounds=b,
    )


class _Grading:
    """Judging one run's questions batch by batch: each question's line is written once
    its last verdict is in, together with the others finished by then (or, when it
    failed and failure analysis is on, after its batch, with why it failed)."""

    def __init__(
        self,
        config: ExperimentConfig,
        prepared: Prepared,
        judge: judge_stage.Judge,
        cache: VerdictCache,
        stats: judge_stage.JudgeStats,
        writer: RunWriter,
        progress: ProgressSink,
        calibration: Calibration | None,
        pool_stats: judge_stage.JudgeStats | None,
    ) -> None:
        self.config, self.prepared, self.judge, self.cache = config, prepared, judge, cache
        self.stats, self.writer, self.progress = stats, writer, progress
        self.calibration = calibration
        self.pool_stats = pool_stats if pool_stats is not None else judge_stage.JudgeStats()
        n_q = len(prepared.questions)
        self.per_question: list[dict[str, float] | None] = [None] * n_q
        self.per_bounds: list[dict[str, tuple[float, float]]] = [{} for _ in range(n_q)]
        self.plan = lazy_plan(config, judge.mode)
        self.policy = config.judge.injection
        self.tally = VerdictTally(policy=self.policy, mode=judge.mode, lazy=self.plan is not None)
        self.pending: list[tuple[int, QuestionResult]] = []  # failures to explain
        self._finished: list[QuestionResult] = []  # lines not yet written
        self._got: dict[int, dict[int, Verdict]] = {}  # question -> pair index -> verdict
        self._owner: list[int] = []

    def batch(self, start: int, end: int) -> _Batch:
        """The pairs of questions start..end-1; a question without hits finishes here."""
        pairs: list[tuple[str, str]] = []
        owner: list[int] = []
        for qi in range(start, end):
            for hit in self.prepared.hits[qi]:
                text = text_for_judge(self.prepared.chunks[hit.chunk_id].text, self.policy)
                pairs.append((self.prepared.questions[qi].text, text))
                owner.append(qi)
            if not self.prepared.hits[qi]:
                self.finish(qi, [])
        return _Batch(start, end, pairs, owner)

    def judge_batch(self, batch: _Batch) -> None:
        """Judge a batch's pairs (lazily: in rank order until each question is settled)."""
        self._owner = batch.owner
        self._got = {qi: {} for qi in set(batch.owner)}
        lazy = None
        if self.plan is not None:
            chains: dict[int, list[int]] = {}
            for i, qi in enumerate(batch.owner):
                chains.setdefault(qi, []).append(i)
            plan = self.plan

            def settled(got: Sequence[Verdict]) -> bool:
                return is_settled([v.grade for v in got], *plan)

            lazy = judge_stage.LazyPlan(chains=list(chains.values()), settled=settled)
        try:
            judge_stage.judge_pairs(
                batch.pairs,
                self.judge,
                criteria=self.config.judge.criteria,
                cache=self.cache,
                stats=self.stats,
                concurrency=self.judge.concurrency,
                on_done=self._on_done,
                lazy=lazy,
                on_idle=self.write_finished,
            )
        except BaseException:
            # Ctrl-C or a failure: the questions already finished keep their lines (a
            # store that cannot be written leaves them to the rerun, which pays nothing)
            with contextlib.suppress(Exception):
                self.write_finished()
            raise
        self.write_finished()

    def _on_done(self, i: int, verdict: Verdict) -> None:
        qi = self._owner[i]
        got = self._got[qi]
        got[i] = verdict
        if len(got) == len(self.prepared.hits[qi]):
            self.finish(qi, [got[j] for j in sorted(got)])

    def finish(self, qi: int, verdicts: Sequence[Verdict]) -> None:
        """Question `qi`'s verdicts are all in: its line, now or after its batch."""
        if self.calibration is not None:
            verdicts = [self.calibration.apply_verdict(v) if v.judged else v for v in verdicts]
        self.tally.add(verdicts)
        k = self.config.retrieval.k
        result = question_result(
            self.prepared.questions[qi],
            self.prepared.hits[qi],
            self.prepared.chunks,
            verdicts,
            range(1, k + 1),
            self.policy,
            self.judge.mode == "extractive",  # the judge at hand (a sweep may pass one)
        )
        self.tally.flagged += sum(1 for jh in result.hits if jh.flags)
        judged_n = next((i for i, v in enumerate(verdicts) if not v.judged), len(verdicts))
        self.tally.not_judged += len(verdicts) - judged_n
        self.per_bounds[qi] = dict(result.bounds)
        self.per_question[qi] = result.metrics
        failed = result.error is None and result.metrics.get(f"hit_rate@{k}") == 0.0
        if self.prepared.pool is not None and failed:
            self.pending.append((qi, result))
        else:
            self._write(result)
        self.progress.advance(
            f"(paid calls {self.stats.calls}, cache hits {self.stats.cache_hits})"
        )

    def _write(self, result: QuestionResult) -> None:
        """A question's line, written by the next `write_finished`."""
        self._finished.append(result)

    def write_finished(self) -> None:
        """The lines of the questions finished since the last call, in one write, once
        their verdicts are stored in the cache (the cache writes behind): a kill -9 then
        loses no verdict a written line refers to. The questions that finish together
        (a burst of answers at 256 in flight) cost one store flush and one sync."""
        if not self._finished:
            return
        self.cache.flush()
        results, self._finished = self._finished, []
        self.writer.append_many(results)

    def _grade_pool(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        verdicts = judge_stage.judge_pairs(
            pairs,
            self.judge,
            criteria=self.config.judge.criteria,
            cache=self.cache,
            stats=self.pool_stats,
            concurrency=self.judge.concurrency,
        )
        if self.calibration is not None:
            verdicts = [self.calibration.apply_verdict(v) for v in verdicts]
        return verdicts

    def explain_pending(self) -> None:
        """Write the batch's failed questions, each with why it failed: from its source
        spans, else from its wider pool (without failures.judge_pool: left unlabelled)."""
        if not self.pending or self.prepared.pool is None:
            return
        judge_pool = self.config.failures.judge_pool
        logger.info(
            "explaining {} failed questions {}",
            len(self.pending),
            "from a wider pool" if judge_pool else "from their source spans",
        )
        k = self.config.retrieval.k
        labels = explain_failures(
            self.pending,
            self.prepared.pool,
            k,
            self._grade_pool,
            lambda text: text_for_judge(text, self.policy),
            judge_pool=judge_pool,
        )
        for (qi, result), failure in zip(self.pending, labels, strict=True):
            if failure is None:  # no span says why, and no pool is judged
                self._write(result)
                continue
            # the label rides in the question's metrics, so aggregate() counts it
            key = f"{metrics_stage.failure_count_name(failure.label)}@{k}"
            m = {**result.metrics, key: 1.0}
            self.per_question[qi] = m
            self._write(replace(result, metrics=m, failure=failure))
        self.pending.clear()
        self.write_finished()

    def done(self) -> list[dict[str, float]]:
        """The metrics of every question finished so far, in question order."""
        return [m for m in self.per_question if m is not None]

    def result(self, stopped: bool) -> Judged:
        """The run's judging as it stands."""
        return Judged(self.done(), _kept(self.per_question, self.per_bounds), stopped, self.tally)


def _judge_all(grading: _Grading, batches: Sequence[int], after_batch: AfterBatch | None) -> Judged:
    """Judge every (question, hit) pair, batch after batch of questions; write each
    question's line as soon as it is done.

    With lazy judging (`lazy_plan`) each question's hits are judged in rank order until
    the objective is settled; the metrics that need the rest are bounds.

    `batches` are cumulative question counts (e.g. 10, 20, 40); the last batch always
    ends with the last question, and `after_batch` may stop the run after any other. With
    `prepared.pool` (failures.explain), a question with no relevant-and-complete chunk in
    the top k (and no error) is written after its batch, with why it failed
    (`explain_failures`) in its `failure` and, as a count, in its metrics; that judging
    is booked in the pool's stats (and through them in the totals).
    """
    n_q = len(grading.prepared.questions)
    ends = sorted({min(max(int(b), 1), n_q) for b in batches} | {n_q}) if n_q else []
    grading.progress.start(n_q, "judged questions")
    start = 0
    for end in ends:
        batch = grading.batch(start, end)
        logger.info(
            "judging {} chunks for questions {}-{} of {}", len(batch.pairs), start + 1, end, n_q
        )
        grading.judge_batch(batch)
        grading.explain_pending()
        start = end
        if after_batch is not None and end < n_q and after_batch(end, grading.done()):
            return grading.result(stopped=True)
    return grading.result(stopped=False)


def _kept(
    per_question: Sequence[dict[str, float] | None],
    per_bounds: Sequence[dict[str, tuple[float, float]]],
) -> list[dict[str, tuple[float, float]]]:
    """The bounds of the questions that have metrics, in the same order."""
    return [b for m, b in zip(per_question, per_bounds, strict=True) if m is not None]


def lazy_plan(config: ExperimentConfig, mode: str) -> tuple[str, int] | None:
    """(what each question must find, the cut-off the objective looks at) when this run
    judges lazily, else None.

    `judge.lazy` must be true (a sweep sets it when its objective allows; `harness run`
    leaves it off unless `--set judge.lazy=true`), the objective is the experiment's
    `sweep.objective` (mrr@k by default), and listwise judging asks for all of a
    question's chunks in one call, so it is never lazy."""
    if config.judge.lazy is not True or mode == "listwise":
        return None
    target = lazy_target(config.sweep.objective)
    if target is None:
        return None
    return target, lazy_cutoff(config.sweep.objective, config.retrieval.k)
