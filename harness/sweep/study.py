"""Optuna sweeps over retrieval settings: one ordinary run folder per trial.

```
results/<sweep_id>/
  sweep.json      SweepSummary: space, objective, sampler, storage, best trial or
                  Pareto front, cost stats. Replaced atomically after every trial.
  trials.jsonl    one TrialRecord per finished trial, appended as each trial ends.
  optuna.db       the Optuna study (SQLite; optuna-dashboard opens it) unless --storage
  trials/<n>/     the run folder of trial n (header.json + questions.jsonl)
```

Cost: trials share one judge (one local server for the whole sweep), the index cache
(a trial whose chunking and embedder were built before embeds nothing) and the verdict
cache (a verdict is paid once across trials, runs and workers; k never triggers judging
beyond what a larger k already paid for). A trial reports its running objective after
each batch of questions and Optuna's pruner may stop it there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
from loguru import logger

from harness.config import ExperimentConfig
from harness.errors import HarnessError
from harness.judge import Judge, check_endpoint, open_judge
from harness.log import (
    HEADER,
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    SWEEP_FILE,
    RunLog,
    SamplerSpec,
    SweepLog,
    SweepSummary,
    TrialRecord,
    append_trial,
    new_run_id,
    now_iso,
    read_run,
    read_sweep,
    read_sweep_summary,
    read_trials,
    this_host,
    write_sweep_summary,
)
from harness.metrics import aggregate, metric_key
from harness.pipeline import ProgressSink, count_questions, default_cache_dir, run_experiment
from harness.secrets import redact_url, remember_url
from harness.sweep.book import SweepBook, directions
from harness.sweep.importance import param_importances
from harness.sweep.space import SearchSpace


def _sampler(config: ExperimentConfig) -> optuna.samplers.BaseSampler:
    if config.sweep.sampler == "grid":
        # BruteForceSampler enumerates define-by-run spaces, conditional overlap included.
        return optuna.samplers.BruteForceSampler(seed=config.sweep.seed)
    return optuna.samplers.TPESampler(seed=config.sweep.seed, multivariate=True, group=True)


def _pruner(config: ExperimentConfig) -> optuna.pruners.BasePruner:
    if config.sweep.pruner == "none" or len(config.sweep.objective) > 1:
        return optuna.pruners.NopPruner()  # Optuna cannot prune multi-objective studies
    return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)


def _batch_counts(shares: tuple[float, ...], n_questions: int) -> list[int]:
    return sorted({max(1, math.ceil(s * n_questions)) for s in shares} | {n_questions})


def default_storage(sweep_dir: Path) -> str:
    """The study's storage unless --storage: a SQLite file inside the sweep folder."""
    return f"sqlite:///{(sweep_dir / 'optuna.db').resolve()}"


def recorded_storage(sweep_dir: Path, recorded: str) -> str:
    """The storage to resume with when the user gave none: what sweep.json records, but
    only when that is the folder's own SQLite file. Any other (a database server, which
    would receive $PGPASSWORD, or a file elsewhere) must be given again with --storage:
    a results folder never chooses where the study and a password go."""
    own = default_storage(sweep_dir)
    if not recorded:
        return own
    prefix = "sqlite:///"
    if (
        recorded.startswith(prefix)
        and "?" not in recorded
        and Path(recorded[len(prefix) :]).resolve() == Path(own[len(prefix) :])
    ):
        return own
    raise HarnessError(
        f"{sweep_dir / SWEEP_FILE}: storage: records {redact_url(recorded)}, not this "
        f"folder's own {own}; a results folder does not choose where the study goes: "
        "pass --storage URL again"
    )


class _Sweep:
    """State of one sweep process: folder, study, shared judge and the bookkeeping."""

    def __init__(
        self,
        config: ExperimentConfig,
        sweep_dir: Path,
        storage: str,
        cache_dir: Path,
        progress: ProgressSink | None = None,
    ) -> None:
        self.config = config
        self.progress = progress
        self.space = SearchSpace(config)
        self.dir = sweep_dir
        self.storage_url = storage
        self.cache_dir = cache_dir
        self.judge: Judge | None = None
        self.book = SweepBook(tuple(config.sweep.objective))
        self.n_questions = count_questions(config)
        self.importances: dict[str, float] = {}
        self.importances_note: str | None = None

    def summary(self, status: str, error: str | None = None) -> SweepSummary:
        c = self.config
        return SweepSummary(
            sweep_id=self.dir.name,
            status=status,
            updated_at=now_iso(),
            error=error,
            experiment=c.path,
            config=c.to_dict(),
            objective=list(c.sweep.objective),
            directions=directions(c.sweep.objective),
            sampler=SamplerSpec(name=c.sweep.sampler, seed=c.sweep.seed),
            pruner=c.sweep.pruner,
            space=dataclasses.asdict(c.sweep.space),
            storage=redact_url(self.storage_url),
            study_name=self.dir.name,
            n_trials_requested=c.sweep.trials,
            counts=self.book.counts(),
            best=self.book.best(),
            stats=self.book.sweep_stats(),
            recommendation=self.book.recommendation(),
            importances=self.importances,
            importances_note=self.importances_note,
            # Who writes it: a reader on this host then sees a sweep killed with -9 as
            # interrupted.
            pid=os.getpid(),
            host=this_host(),
        )

    def write(self, status: str, error: str | None = None) -> None:
        write_sweep_summary(self.dir, self.summary(status, error))

    def append(self, record: TrialRecord, run: RunLog | None = None) -> None:
        """Log a trial's end and take it into the bookkeeping (reading only its own run
        folder, and only when the caller does not hold it already)."""
        append_trial(self.dir, record)
        folder = Path(record.run_dir)
        if run is None and record.run_dir and (folder / HEADER).is_file():
            run = read_run(folder)
        self.book.add(record, run)

    def objective(self, trial: optuna.Trial) -> float | list[float]:
        t0 = time.perf_counter()
        params: dict[str, Any] = {}
        run_dir = self.dir / "trials" / str(trial.number)

        def record(
            state: str,
            values: list[float] | None = None,
            error: str | None = None,
            done: int = 0,
            run: RunLog | None = None,
        ) -> None:
            self.append(
                TrialRecord(
                    number=trial.number,
                    state=state,
                    params=params,
                    values=values,
                    run_dir=str(run_dir),
                    error=error,
                    questions_done=done,
                    duration_s=round(time.perf_counter() - t0, 3),
                ),
                run,
            )

        try:
            params = self.space.suggest(trial)
            tconfig = self.space.trial_config(params)
            keys = [metric_key(m, params["k"]) for m in self.config.sweep.objective]
            single = len(keys) == 1

            def after_batch(n_done: int, per_q: list[dict[str, float]]) -> bool:
                if not single:
                    return False
                value = aggregate(per_q, range(1, params["k"] + 1)).get(keys[0])
                if value is None:
                    return False
                trial.report(value, step=n_done)
                return trial.should_prune()

            logger.info("trial {}: {}", trial.number, params)
            run = run_experiment(
                tconfig,
                cache_dir=self.cache_dir,
                judge=self.judge,
                run_dir=run_dir,
                batches=_batch_counts(self.config.sweep.batches, self.n_questions),
                after_batch=after_batch,
                progress=self.progress,
            )
            done = len(run.questions)
            if run.header.status == "pruned":
                record("pruned", done=done, run=run)
                raise optuna.TrialPruned(f"pruned after {done} questions")
            missing = [k for k in keys if k not in run.header.metrics]
            if missing:
                raise HarnessError(f"no value for {missing} (every question's verdicts failed?)")
            values = [float(run.header.metrics[k]) for k in keys]
            record("complete", values=values, done=done, run=run)
            return values[0] if single else values
        except KeyboardInterrupt:
            record("interrupted", error="interrupted")
            raise
        except optuna.TrialPruned as exc:
            if not (run_dir / HEADER).is_file():  # pruned before it ran
                record("pruned", error=str(exc))
            raise
        except Exception as exc:
            message = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
            logger.warning("trial {} failed: {}", trial.number, message)
            record("failed", error=message)
            raise
        finally:
            self.write(STATUS_RUNNING)


@contextlib.contextmanager
def _maybe_judge(sweep: _Sweep, judge: Judge | None) -> Iterator[None]:
    if judge is not None:
        sweep.judge = judge
        yield
        return
    with open_judge(sweep.config.judge, cache_dir=sweep.cache_dir, log_dir=sweep.dir) as j:
        sweep.judge = j
        yield


def _requeue_unfinished(study: optuna.Study, sweep: _Sweep) -> int:
    """Trials cut short by Ctrl-C (logged "interrupted") or by kill -9 (left RUNNING in
    the study, with no line in trials.jsonl) run again with the same settings; the
    verdicts they paid for are in the cache, so only the rest is paid."""
    logged = {t.number: t for t in read_trials(sweep.dir)}
    count = 0
    for t in study.get_trials(deepcopy=False):
        rec = logged.get(t.number)
        stale = t.state == optuna.trial.TrialState.RUNNING
        if stale:
            study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)
        if (stale and rec is None) or (rec is not None and rec.state == "interrupted"):
            study.enqueue_trial(dict(t.params), skip_if_exists=False)
            append_trial(
                sweep.dir,
                TrialRecord(
                    t.number,
                    "requeued",
                    dict(t.params),
                    None,
                    rec.run_dir if rec else "",
                    "cut short; its settings run again as a new trial",
                ),
            )
            logger.info("trial {} was cut short; its settings run again", t.number)
            count += 1
    return count


def run_sweep(
    config: ExperimentConfig,
    *,
    results_dir: str | os.PathLike[str] = "results",
    cache_dir: str | os.PathLike[str] | None = None,
    trials: int | None = None,
    resume: str | os.PathLike[str] | None = None,
    storage: str | None = None,
    judge: Judge | None = None,
    progress: ProgressSink | None = None,
) -> SweepLog:
    """Run (or resume) a sweep until it holds `trials` finished trials.

    `resume` is an existing sweep folder: its study continues where it stopped, a trial
    cut short by a crash or kill -9 runs again (paying only for verdicts it never got),
    and no finished trial is redone; the storage sweep.json records is reused only when
    it is the folder's own optuna.db (any other must be given again as `storage`).
    `judge` replaces the configured judge (tests pass a scripted one); `progress` shows
    each trial's judging.
    """
    if judge is None:
        check_endpoint(config.judge, config.path or "<experiment>")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if resume is not None:
        sweep_dir = Path(resume)
        if not (sweep_dir / SWEEP_FILE).is_file():
            raise HarnessError(f"{sweep_dir}: not a sweep folder (no {SWEEP_FILE})")
        storage = storage or recorded_storage(sweep_dir, read_sweep_summary(sweep_dir).storage)
    else:
        sweep_dir = Path(results_dir) / new_run_id(f"{config.name}-sweep")
        sweep_dir.mkdir(parents=True)
    storage_url = storage or default_storage(sweep_dir)
    remember_url(storage_url)  # its password, should a storage error echo it
    n_trials = trials if trials is not None else config.sweep.trials
    sweep = _Sweep(config, sweep_dir, storage_url, cache, progress)
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # we log trial ends ourselves
    try:
        study = optuna.create_study(
            study_name=sweep_dir.name,
            storage=storage_url,
            sampler=_sampler(config),
            pruner=_pruner(config),
            directions=directions(config.sweep.objective),
            load_if_exists=True,
        )
    except Exception as exc:  # storage errors come in many types
        raise HarnessError(
            f"cannot open the study storage {redact_url(storage_url)}: {exc}"
        ) from None
    if resume is not None:
        _requeue_unfinished(study, sweep)
        sweep.book.add_from_disk(read_trials(sweep_dir))
    if resume is None and config.sweep.baseline:
        baseline = sweep.space.baseline()
        if baseline is None:
            logger.warning("the experiment's own settings lie outside the space: no baseline trial")
        else:
            study.enqueue_trial(baseline)
    finished = len(
        study.get_trials(
            deepcopy=False,
            states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED),
        )
    )
    remaining = max(0, n_trials - finished)
    sweep.write(STATUS_RUNNING)
    logger.info("sweep {}: {} trials to run ({} finished)", sweep_dir.name, remaining, finished)
    try:
        with _maybe_judge(sweep, judge):
            study.optimize(
                sweep.objective,
                n_trials=remaining,
                catch=(Exception,),
                gc_after_trial=False,
            )
    except KeyboardInterrupt:
        sweep.write(STATUS_INTERRUPTED, "interrupted")
        raise
    except Exception as exc:
        sweep.write(STATUS_FAILED, str(exc))
        raise
    sweep.importances, note = param_importances(study, config.sweep.objective[0])
    sweep.importances_note = note or None
    sweep.write(STATUS_DONE)
    return read_sweep(sweep_dir)
