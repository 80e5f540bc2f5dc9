"""One configuration end to end: prepare, judge, metrics, result log.

It writes the result log as work finishes: a question's line is appended the moment its
last verdict is in, and the header is rewritten at the start and at the end, so a crash
or Ctrl-C keeps every finished question, and the verdict cache keeps every paid verdict."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loguru import logger

from harness import judge as judge_stage
from harness import metrics as metrics_stage
from harness.config import ExperimentConfig, JudgeConfig
from harness.errors import HarnessError, os_error_message
from harness.judge.calibration import Calibration, judge_key, read_calibration
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
from harness.metrics.source import source_metrics
from harness.pipeline.failures import explain_failures
from harness.pipeline.prepare import Prepared, cap_k, default_cache_dir, load_inputs, prepare
from harness.pipeline.progress import LogProgress, ProgressSink
from harness.stores import CacheStorage, VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE
from harness.types import (
    CriterionVerdict,
    JudgedHit,
    QuestionResult,
    Verdict,
)


def run_experiment(
    config: ExperimentConfig,
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

    `judge` replaces the configured judge (a sweep shares one; tests pass a scripted one).
    The verdict cache lives in `cache_dir` (default: `default_cache_dir()`), so a rerun
    after a crash pays only for what was never judged. With `batches` (cumulative question
    counts) and `after_batch`, questions are judged batch by batch and the callback may
    stop the run after any batch: its status is then "pruned", with the questions it did
    finish in the log and metrics over those. `storage` puts the verdict and embedding
    caches elsewhere (a PostgreSQL database shared by a sweep's workers).
    """
    t_start = time.perf_counter()
    if judge is None:
        judge_stage.check_endpoint(config.judge, config.path or "<experiment>")
    # Bad documents or questions stop the run here, before it has a folder to leave behind.
    inputs = load_inputs(config)
    config = cap_k(config, len(inputs.chunks))
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id(config.name)
    folder = Path(run_dir) if run_dir else Path(results_dir) / run_id
    run_id = folder.name
    writer = RunWriter(folder)
    ks = tuple(range(1, config.retrieval.k + 1))
    header = RunHeader(
        run_id=run_id,
        name=config.name,
        status=STATUS_RUNNING,
        started_at=now_iso(),
        config=config.to_dict(),
        components={},
        data={},
        ks=ks,
        # Who writes it: a reader on this host then sees a run killed with -9 as interrupted.
        pid=os.getpid(),
        host=this_host(),
    )
    writer.write_header(header)
    stats = judge_stage.JudgeStats()
    # The failure pool is booked in the run's totals (judge_calls is every call the judge
    # made, as the endpoint counts them) and apart (failure_pool_*): the top k cost the rest.
    pool_stats = _TeeStats(total=stats)
    run_stats: dict[str, Any] = {}
    try:
        with contextlib.ExitStack() as stack:
            verdict_cache = (
                storage.verdict_cache() if storage else VerdictCache(cache / VERDICTS_FILE)
            )
            stack.callback(verdict_cache.close)
            active: list[judge_stage.Judge] = [judge] if judge is not None else []

            def get_judge() -> judge_stage.Judge:
                if not active:
                    active.append(
                        stack.enter_context(
                            judge_stage.open_judge(config.judge, cache_dir=cache, log_dir=folder)
                        )
                    )
                return active[0]

            prepared = prepare(
                config,
                cache_dir=cache,
                judge=get_judge,
                verdict_cache=verdict_cache,
                inputs=inputs,
                storage=storage,
            )
            run_stats.update(prepared.stats)
            header = replace(header, components=dict(prepared.components), data=prepared.data)
            writer.write_header(header)
            t_judge = time.perf_counter()
            the_judge = get_judge()
            header = replace(header, components={**header.components, "judge": the_judge.spec})
            calibration = load_calibration(config, the_judge)
            if calibration is not None:
                header = replace(
                    header,
                    components={**header.components, "calibration": calibration.spec()},
                )
            writer.write_header(header)
            sink = progress or LogProgress()
            try:
                per_question, stopped, tally, per_bounds = _judge_all(
                    config,
                    prepared,
                    the_judge,
                    verdict_cache,
                    stats,
                    writer,
                    batches,
                    after_batch,
                    sink,
                    calibration=calibration,
                    pool_stats=pool_stats,
                )
            finally:
                sink.stop()
                if prepared.pool is not None:
                    run_stats.update(_pool_stats(pool_stats, config.judge))
            run_stats.update(tally.to_stats())
            warnings = tally.warnings()
            for w in warnings:
                logger.warning(w)
            header = replace(header, warnings=warnings)
        run_stats["judge_s"] = round(time.perf_counter() - t_judge, 3)
        # Lazy judging: a metric that needs unjudged chunks is bounds, never a mean.
        means, bounds = aggregate_partial(per_question, per_bounds, ks)
        ci = metrics_stage.aggregate_ci(per_question, ks)
        header = replace(
            header,
            status=STATUS_PRUNED if stopped else STATUS_DONE,
            finished_at=now_iso(),
            metrics=means,
            metrics_ci={key: v for key, v in ci.items() if key not in bounds},
            metric_bounds=bounds,
            stats=_stats(run_stats, stats, t_start, config.judge),
        )
        writer.write_header(header)
    except KeyboardInterrupt:
        writer.write_header(
            replace(
                header,
                status=STATUS_INTERRUPTED,
                finished_at=now_iso(),
                stats=_stats(run_stats, stats, t_start, config.judge),
                error="interrupted",
            )
        )
        raise
    except Exception as exc:
        if isinstance(exc, HarnessError):
            message = str(exc)
        elif isinstance(exc, OSError):  # a full disk, a read-only folder: name the file
            message = os_error_message(exc)
        else:
            message = f"{type(exc).__name__}: {exc}"
        failed = replace(
            header,
            status=STATUS_FAILED,
            finished_at=now_iso(),
            stats=_stats(run_stats, stats, t_start, config.judge),
            error=message,
        )
        try:
            writer.write_header(failed)
        except OSError as write_exc:  # the disk that failed the run may refuse this too
            logger.warning("could not mark the run failed: {}", os_error_message(write_exc))
        raise
    finally:
        writer.close()
    return read_run(folder)


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
    lazy: bool = False
    not_judged: int = 0
    """Chunks lazy judging left unjudged once their question was settled."""

    def add(self, verdicts: Sequence[Verdict]) -> None:
        """Count a question's verdicts (failed ones are left out)."""
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
            out.append(
                f"the judge called {self.complete / self.judged:.0%} of {self.judged} judged "
                "chunks complete: hit rate and MRR saturate and cannot separate settings; "
                "calibrate the judge on a few labels (harness label, harness calibrate), "
                'try judge.mode = "graded", or use a stronger judge'
            )
        if self.with_p >= 10 and self.unsure / self.with_p > UNSURE_SHARE:
            out.append(
                f"{self.unsure / self.with_p:.0%} of the judge's probabilities lie between "
                "0.4 and 0.6: it is guessing; calibrate it or use a stronger judge"
            )
        return out


def load_calibration(config: ExperimentConfig, judge: judge_stage.Judge) -> Calibration | None:
    """The experiment's judge calibration (judge.calibration), or None; a warning when it
    was fitted on another judge than this one."""
    if not config.judge.calibration:
        return None
    cal = read_calibration(config.resolve_path(config.judge.calibration))
    if cal.judge and cal.judge != judge_key(judge.spec):
        logger.warning(
            "the calibration {} was fitted on another judge ({}); this run's judge is {}",
            cal.path,
            cal.judge,
            judge_key(judge.spec),
        )
    return cal


def _judge_all(
    config: ExperimentConfig,
    prepared: Prepared,
    judge: judge_stage.Judge,
    cache: VerdictCache,
    stats: judge_stage.JudgeStats,
    writer: RunWriter,
    batches: Sequence[int],
    after_batch: AfterBatch | None,
    progress: ProgressSink,
    *,
    calibration: Calibration | None = None,
    pool_stats: judge_stage.JudgeStats | None = None,
) -> tuple[list[dict[str, float]], bool, VerdictTally, list[dict[str, tuple[float, float]]]]:
    """Judge every (question, hit) pair, batch after batch of questions; write each
    question's line as soon as it is done. Returns (per-question metrics, stopped early,
    the verdict tally, per-question bounds).

    With lazy judging (`lazy_plan`) each question's hits are judged in rank order until
    the objective is settled; the metrics that need the rest are bounds.

    `batches` are cumulative question counts (e.g. 10, 20, 40); the last batch always
    ends with the last question. With `prepared.pool` (failures.explain), a question with
    no relevant-and-complete chunk in the top k (and no error) is written after its
    batch, with why it failed (`explain_failures`) in its `failure` and, as a count, in its
    metrics; that judging is booked in `pool_stats` (and through it in the totals).
    """
    n_q = len(prepared.questions)
    ends = sorted({min(max(int(b), 1), n_q) for b in batches} | {n_q}) if n_q else []
    per_question: list[dict[str, float] | None] = [None] * n_q
    per_bounds: list[dict[str, tuple[float, float]]] = [{} for _ in range(n_q)]
    plan = lazy_plan(config, judge.mode)
    progress.start(n_q, "judged questions")
    ks = range(1, config.retrieval.k + 1)

    policy = config.judge.injection
    tally = VerdictTally(policy=policy, lazy=plan is not None)
    k_run = config.retrieval.k
    pending: list[tuple[int, QuestionResult]] = []  # failures to explain after the batch
    extractive = judge.mode == "extractive"  # the judge at hand (a sweep or test may pass one)

    def grade_pool(pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        verdicts = judge_stage.judge_pairs(
            pairs,
            judge,
            criteria=config.judge.criteria,
            cache=cache,
            stats=pool_stats if pool_stats is not None else judge_stage.JudgeStats(),
            concurrency=config.judge.concurrency,
        )
        if calibration is not None:
            verdicts = [calibration.apply_verdict(v) for v in verdicts]
        return verdicts

    def explain_pending() -> None:
        if not pending or prepared.pool is None:
            return
        logger.info("explaining {} failed questions from a wider pool", len(pending))
        labels = explain_failures(
            pending,
            prepared.pool,
            k_run,
            grade_pool,
            lambda text: text_for_judge(text, policy),
        )
        for (qi, result), failure in zip(pending, labels, strict=True):
            # the label rides in the question's metrics, so aggregate() counts it
            key = f"{metrics_stage.failure_count_name(failure.label)}@{k_run}"
            m = {**result.metrics, key: 1.0}
            per_question[qi] = m
            writer.append(replace(result, metrics=m, failure=failure))
        pending.clear()

    def finish(qi: int, verdicts: Sequence[Verdict]) -> None:
        if calibration is not None:
            verdicts = [calibration.apply_verdict(v) if v.judged else v for v in verdicts]
        tally.add(verdicts)
        judged = tuple(
            JudgedHit(
                hit=h,
                chunk=prepared.chunks[h.chunk_id],
                verdict=v,
                flags=injection_flags(prepared.chunks[h.chunk_id].text, policy),
            )
            for h, v in zip(prepared.hits[qi], verdicts, strict=True)
        )
        tally.flagged += sum(1 for jh in judged if jh.flags)
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
        per_bounds[qi] = b
        tally.not_judged += len(verdicts) - (len(verdicts) if judged_n is None else judged_n)
        # generated questions carry their source span: a label-like signal, no judge
        m.update(source_metrics([j.chunk for j in judged], prepared.questions[qi].source, ks))
        errors = [f"rank {j.hit.rank}: {j.verdict.error}" for j in judged if j.verdict.error]
        result = QuestionResult(
            question=prepared.questions[qi],
            hits=judged,
            metrics=m,
            error="; ".join(errors) if errors else None,
            bounds=b,
        )
        per_question[qi] = m
        if prepared.pool is not None and not errors and m.get(f"hit_rate@{k_run}") == 0.0:
            pending.append((qi, result))
        else:
            writer.append(result)
        progress.advance(f"(paid calls {stats.calls}, cache hits {stats.cache_hits})")

    owner: list[int] = []  # question index of each pair of the current batch
    got: dict[int, dict[int, Verdict]] = {}  # question index -> pair index -> verdict

    def on_done(i: int, verdict: Verdict) -> None:
        qi = owner[i]
        got[qi][i] = verdict
        if len(got[qi]) == len(prepared.hits[qi]):
            finish(qi, [got[qi][j] for j in sorted(got[qi])])

    start = 0
    for end in ends:
        pairs: list[tuple[str, str]] = []
        owner.clear()
        got.clear()
        for qi in range(start, end):
            got[qi] = {}
            for hit in prepared.hits[qi]:
                text = text_for_judge(prepared.chunks[hit.chunk_id].text, policy)
                pairs.append((prepared.questions[qi].text, text))
                owner.append(qi)
            if not prepared.hits[qi]:
                finish(qi, [])
        logger.info("judging {} chunks for questions {}-{} of {}", len(pairs), start + 1, end, n_q)
        lazy = None
        if plan is not None:
            chains: dict[int, list[int]] = {}
            for i, qi in enumerate(owner):
                chains.setdefault(qi, []).append(i)
            lazy = judge_stage.LazyPlan(
                chains=list(chains.values()),
                settled=lambda got, p=plan: is_settled([v.grade for v in got], *p),
            )
        judge_stage.judge_pairs(
            pairs,
            judge,
            criteria=config.judge.criteria,
            cache=cache,
            stats=stats,
            concurrency=config.judge.concurrency,
            on_done=on_done,
            lazy=lazy,
        )
        explain_pending()
        start = end
        done = [m for m in per_question if m is not None]
        if after_batch is not None and end < n_q and after_batch(end, done):
            return done, True, tally, _kept(per_question, per_bounds)
    return [m for m in per_question if m is not None], False, tally, _kept(per_question, per_bounds)


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
