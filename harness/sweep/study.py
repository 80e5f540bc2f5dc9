"""Optuna sweeps over retrieval settings: one ordinary run folder per trial.

```
results/<sweep_id>/
  sweep.json      SweepSummary: space, objective, sampler, storage, best trial or
                  Pareto front, cost stats. Replaced atomically after every trial.
  trials.jsonl    one TrialRecord per finished trial, appended as each trial ends.
  optuna.db       the Optuna study (SQLite; optuna-dashboard opens it) unless --storage
  optuna.journal  instead, with --workers N and no --storage: a study N local processes share
  trials/<n>/     the run folder of trial n (header.json + questions.jsonl)
```

With `--storage postgresql://...` the study, the caches and the log (summary, trial
records and each trial's run log: harness.log.database) live in that database, and any
number of workers on any machines join the sweep by its name; the folder then only
holds the run folders of the trials this machine ran (harness.sweep.shared).

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
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
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
    SweepDatabase,
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
from harness.metrics.lazy import lazy_target
from harness.pipeline import ProgressSink, count_questions, default_cache_dir, run_experiment
from harness.secrets import redact, redact_url, remember_url
from harness.stores import CacheStorage, FolderStorage, open_storage
from harness.stores.postgres import is_postgres
from harness.sweep import shared
from harness.sweep.book import SweepBook, directions
from harness.sweep.importance import param_importances
from harness.sweep.space import SearchSpace


def with_lazy_default(config: ExperimentConfig) -> ExperimentConfig:
    """A trial's config with `judge.lazy` on when the experiment leaves it unset and the
    objective allows it (mrr@k, hit_rate@k, relevancy_mrr@k...): a sweep needs each
    question's objective only, and a later run needing the rest pays only for that."""
    j = config.judge
    if j.lazy is not None or j.effective_mode == "listwise":
        return config
    if lazy_target(config.sweep.objective) is None:
        return config
    return dataclasses.replace(config, judge=dataclasses.replace(j, lazy=True))


def _sampler(config: ExperimentConfig, parallel: bool = False) -> optuna.samplers.BaseSampler:
    seed = config.sweep.seed
    if parallel:
        # Workers with one seed would draw the same random start-up trials at once; a
        # shared sweep's order depends on timing anyway, so each worker draws its own.
        seed = (seed * 1_000_003 + secrets.randbelow(1 << 31)) % (1 << 32)
    if config.sweep.sampler == "grid":
        # BruteForceSampler enumerates define-by-run spaces, conditional overlap included.
        return optuna.samplers.BruteForceSampler(seed=seed)
    # constant_liar is Optuna 5's default; named so that parallel workers keep it: a
    # running trial counts as a bad result, so workers do not sample the same settings.
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True)


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
    only when that is the folder's own SQLite or journal file. Any other (a database
    server, which would receive $PGPASSWORD, or a file elsewhere) must be given again with
    --storage: a results folder never chooses where the study and a password go."""
    own = default_storage(sweep_dir)
    if not recorded:
        return own
    if recorded == shared.journal_storage(sweep_dir):
        return recorded
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
        *,
        caches: CacheStorage | None = None,
        db: SweepDatabase | None = None,
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
        self.caches = caches
        self.db = db
        """The sweep's log in PostgreSQL (else the folder's files)."""
        self.shared = db is not None or shared.is_journal(storage)
        """Other workers may run trials of this sweep at the same time."""
        self._seen = 0  # the last trial row of the database this worker took in
        self._taken: dict[int, TrialRecord] = {}  # trials.jsonl lines taken in (journal)
        self.slots: shared.SlotLock | None = None
        self.batch: dict[str, Any] = {}
        """What the sweep's batch jobs cost (judge.batch; harness.judge.batch)."""

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
            stats=self.book.sweep_stats(self.batch),
            recommendation=self.book.recommendation(),
            importances=self.importances,
            importances_note=self.importances_note,
            # Who writes it: a reader on this host then sees a sweep killed with -9 as
            # interrupted.
            pid=os.getpid(),
            host=this_host(),
        )

    def _take(self, rows: list[tuple[TrialRecord, RunLog | None]]) -> None:
        for record, run in rows:
            self.book.add(record, run)

    def _commit(
        self, status: str, error: str | None, record: TrialRecord | None, run: RunLog | None
    ) -> None:
        """One transaction of the database log: the record, the others' new trials, the
        summary over all of them."""
        assert self.db is not None

        def summarize(rows: list[tuple[TrialRecord, RunLog | None]]) -> SweepSummary:
            self._take(rows)
            return self.summary(status, error)

        self._seen = self.db.commit(self.dir.name, self._seen, record, run, summarize)

    def _take_from_folder(self) -> None:
        """Take in the trials other local workers appended to trials.jsonl (journal)."""
        for record in read_trials(self.dir):
            if self._taken.get(record.number) != record:
                folder = Path(record.run_dir)
                run = read_run(folder) if record.run_dir and (folder / HEADER).is_file() else None
                self.book.add(record, run)
                self._taken[record.number] = record

    def write(self, status: str, error: str | None = None) -> None:
        if self.db is not None:
            self._commit(status, error, None, None)
        elif self.shared:
            with shared.folder_lock(self.dir):
                self._take_from_folder()
                write_sweep_summary(self.dir, self.summary(status, error))
        else:
            write_sweep_summary(self.dir, self.summary(status, error))

    def on_stale(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """A trial whose worker died (no heartbeat, or its process gone): its settings run
        again as a new trial; the verdicts it paid for are in the shared cache."""
        study.enqueue_trial(dict(trial.params), skip_if_exists=False)
        logger.warning("trial {}'s worker is gone; its settings run again", trial.number)
        self.append(
            TrialRecord(
                trial.number,
                "requeued",
                dict(trial.params),
                None,
                "",
                "its worker stopped (no heartbeat); its settings run again as a new trial",
            )
        )

    def append(self, record: TrialRecord, run: RunLog | None = None) -> None:
        """Log a trial's end and take it into the bookkeeping (reading only its own run
        folder, and only when the caller does not hold it already)."""
        if self.db is not None:
            self._commit(STATUS_RUNNING, None, record, run)
            return
        if self.shared:
            with shared.folder_lock(self.dir):
                append_trial(self.dir, record)
            return  # taken into the book with the others' trials on the next write
        append_trial(self.dir, record)
        folder = Path(record.run_dir)
        if run is None and record.run_dir and (folder / HEADER).is_file():
            run = read_run(folder)
        self.book.add(record, run)

    def objective(self, trial: optuna.Trial) -> float | list[float]:
        if self.slots is not None:  # the trial is running in the study: others count it
            self.slots.release()
            trial.set_user_attr(shared.WORKER_ATTR, shared.worker_name())
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
            tconfig = with_lazy_default(self.space.trial_config(params))
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
                storage=self.caches,
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
            if self.shared:  # counts against the budget (a dead worker's trial does not)
                trial.set_user_attr(shared.FAILED_ATTR, True)
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


def _open_database(storage: str | None) -> SweepDatabase | None:
    """The sweep tables of a PostgreSQL storage (None for any other)."""
    if storage is None or not is_postgres(storage):
        return None
    remember_url(storage)
    return SweepDatabase(storage)


def _check_same_sweep(recorded: SweepSummary, config: ExperimentConfig, where: str) -> None:
    """Joining a sweep by name with an experiment file: its search must be the one the
    sweep started with (space, objective, sampler), or the workers would mix two sweeps."""
    c = config
    mine = (dataclasses.asdict(c.sweep.space), list(c.sweep.objective), c.sweep.sampler)
    theirs = (recorded.space, list(recorded.objective), recorded.sampler.name)
    if mine != theirs:
        raise HarnessError(
            f"{where}: sweep {recorded.sweep_id!r} exists with another space, objective or "
            "sampler; join it without the experiment file (--join NAME), or pick a new --name"
        )


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
    name: str | None = None,
    join: str | None = None,
    workers: int = 1,
    worker_argv: Callable[[str], Sequence[str]] | None = None,
    heartbeat_s: int = shared.HEARTBEAT_S,
) -> SweepLog:
    """Run (or resume, or join) a sweep until it holds `trials` finished trials.

    `resume` is an existing sweep folder: its study continues where it stopped, a trial
    cut short by a crash or kill -9 runs again (paying only for verdicts it never got),
    and no finished trial is redone; the storage sweep.json records is reused only when
    it is the folder's own optuna.db (any other must be given again as `storage`).
    `judge` replaces the configured judge (tests pass a scripted one); `progress` shows
    each trial's judging.

    Shared sweeps (harness.sweep.shared): with a postgresql:// `storage` the study, the
    caches and the log live in the database, and `name` names the sweep (a sweep of that
    name is joined); `join` is the name of a sweep to work on (in the database, or a
    folder under `results_dir` whose study is its own journal file). `workers` > 1 starts
    that many processes running `worker_argv(name)` and waits for them (without
    `storage`, they share a journal file in the sweep folder). Workers stop when the
    sweep holds `trials` finished trials between them; `heartbeat_s` is how often a
    PostgreSQL worker signals it lives (a silent one's trial reruns after 3 beats).
    """
    if judge is None:
        check_endpoint(config.judge, config.path or "<experiment>")
    shared.check_shareable(storage, workers)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if storage is not None:
        remember_url(storage)  # its password, should a storage error echo it
    db = _open_database(storage)
    if resume is not None and db is not None:
        join = Path(resume).name  # a database sweep is resumed by joining it
        resume = None
    created = False
    if resume is not None:
        sweep_dir = Path(resume)
        if not (sweep_dir / SWEEP_FILE).is_file():
            raise HarnessError(f"{sweep_dir}: not a sweep folder (no {SWEEP_FILE})")
        storage = storage or recorded_storage(sweep_dir, read_sweep_summary(sweep_dir).storage)
    elif join is not None:
        sweep_dir = Path(results_dir) / join
        if db is not None:
            if not db.exists(join):
                raise HarnessError(f"{db.where}: no sweep named {join!r} to join")
            sweep_dir.mkdir(parents=True, exist_ok=True)
        else:
            if not (sweep_dir / SWEEP_FILE).is_file():
                raise HarnessError(
                    f"{sweep_dir}: no sweep folder to join (no {SWEEP_FILE}); give "
                    "--storage URL for a sweep in a database"
                )
            storage = storage or recorded_storage(sweep_dir, read_sweep_summary(sweep_dir).storage)
    else:
        sweep_name = name or new_run_id(f"{config.name}-sweep")
        sweep_dir = Path(results_dir) / sweep_name
        if db is not None and db.exists(sweep_name):
            _check_same_sweep(db.read_summary(sweep_name), config, db.where)
            join = sweep_name
        elif db is None and sweep_dir.exists():
            raise HarnessError(f"{sweep_dir}: exists; join it with --join {sweep_name}")
        sweep_dir.mkdir(parents=True, exist_ok=db is not None)
        created = join is None
    if storage is None:
        storage = shared.journal_storage(sweep_dir) if workers > 1 else default_storage(sweep_dir)
    storage_url = storage
    n_trials = trials if trials is not None else config.sweep.trials
    caches: CacheStorage | None = None
    if db is not None:
        caches = open_storage(
            storage_url, cache, claim_ttl_s=float(shared.grace_period_s(heartbeat_s))
        )
    elif shared.is_journal(storage_url):
        caches = FolderStorage(cache, claim_ttl_s=float(shared.grace_period_s(heartbeat_s)))
    sweep = _Sweep(config, sweep_dir, storage_url, cache, progress, caches=caches, db=db)
    if db is not None and created and not db.create(sweep.summary(STATUS_RUNNING)):
        created = False  # another worker created it with this name a moment ago
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # we log trial ends ourselves
    try:
        study = optuna.create_study(
            study_name=sweep_dir.name,
            storage=shared.optuna_storage(
                storage_url, heartbeat_s=heartbeat_s, on_stale=sweep.on_stale
            ),
            sampler=_sampler(config, parallel=sweep.shared),
            pruner=_pruner(config),
            directions=directions(config.sweep.objective),
            load_if_exists=True,
        )
    except Exception as exc:  # storage errors come in many types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HarnessError(
            f"cannot open the study storage {redact_url(storage_url)}: {redact(first)}"
        ) from None
    if resume is not None:
        _requeue_unfinished(study, sweep)
        sweep.book.add_from_disk(read_trials(sweep_dir))
    if created and config.sweep.baseline:
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
    if workers > 1:
        if worker_argv is None:
            raise HarnessError("workers > 1 needs a command that starts a worker")
        logger.info("sweep {}: {} workers for {} trials", sweep_dir.name, workers, remaining)
        codes = shared.run_workers(worker_argv(sweep_dir.name), workers)
        if all(code != 0 for code in codes):
            raise HarnessError(
                f"sweep {sweep_dir.name}: every worker failed (exit statuses {codes}); "
                "their error lines are above"
            )
        return _read_back(sweep, db)
    logger.info("sweep {}: {} trials to run ({} finished)", sweep_dir.name, remaining, finished)
    try:
        with _maybe_judge(sweep, judge):
            if config.judge.batch:
                from harness.sweep.batch import batch_sweep

                assert sweep.judge is not None
                sweep.batch = batch_sweep(
                    config, sweep.judge, sweep_dir, cache, shared=sweep.shared
                )
                sweep.write(STATUS_RUNNING)
            if sweep.shared:
                sweep.slots = shared.SlotLock(storage_url, sweep_dir.name, sweep_dir)
                try:
                    shared.run_budget(
                        study,
                        sweep.objective,
                        n_trials,
                        sweep.slots,
                        sweep.on_stale,
                        reap_local=shared.is_journal(storage_url),
                    )
                finally:
                    sweep.slots.close()
            else:
                study.optimize(
                    sweep.objective,
                    n_trials=remaining,
                    catch=(Exception,),
                    gc_after_trial=False,
                )
    except KeyboardInterrupt:
        # Other workers carry on: the shared summary keeps saying so.
        busy = sweep.shared and shared.others_running(study)
        sweep.write(STATUS_RUNNING if busy else STATUS_INTERRUPTED, None if busy else "interrupted")
        raise
    except Exception as exc:
        sweep.write(STATUS_FAILED, str(exc))
        raise
    sweep.importances, note = param_importances(study, config.sweep.objective[0])
    sweep.importances_note = note or None
    sweep.write(STATUS_DONE)
    return _read_back(sweep, db)


def _read_back(sweep: _Sweep, db: SweepDatabase | None) -> SweepLog:
    """The sweep as written: from its folder, or from the database (with this machine's
    folder as its sweep_dir)."""
    if db is None:
        return read_sweep(sweep.dir)
    log = db.read_sweep(sweep.dir.name)
    return dataclasses.replace(log, sweep_dir=sweep.dir)
