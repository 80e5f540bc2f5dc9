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
records and each trial's run log: harness.stores.sweeps) live in that database, and any
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
import json
import math
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import optuna
from loguru import logger

from harness.config import ExperimentConfig, SpaceConfig, as_experiment
from harness.errors import HarnessError
from harness.judge import Judge, check_endpoint, open_judge
from harness.judge.calibration import read_calibration
from harness.log import (
    HEADER,
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    SWEEP_FILE,
    TRIALS_FILE,
    RunLog,
    SamplerSpec,
    SweepLog,
    SweepSummary,
    TrialRecord,
    append_trial,
    new_run_id,
    now_iso,
    read_sweep_summary,
    read_trials,
    this_host,
)
from harness.metrics import aggregate, metric_key
from harness.metrics.lazy import lazy_target
from harness.pipeline import ProgressSink, count_questions, default_cache_dir, run_experiment
from harness.secrets import redact, redact_url, remember_url
from harness.stores import CacheStorage, FolderStorage, open_storage
from harness.stores.sweeps import SweepDatabase
from harness.sweep import shared
from harness.sweep.book import SweepBook, directions
from harness.sweep.importance import param_importances
from harness.sweep.logs import (
    SQLITE,
    SweepLogStore,
    check_storage,
    open_database,
    open_sweep_log,
    sqlite_file,
)
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


def plan_sampler(
    config: ExperimentConfig, n_trials: int, grid_trials: int, recorded: SamplerSpec | None = None
) -> tuple[ExperimentConfig, int, str]:
    """The sampler a sweep runs, its trial budget and why it is not the experiment's own.

    TPE proposes settings it has tried before, so on a space no larger than the budget
    it spends trials on repeats and may never try some settings: such a space runs as a
    grid, each setting once (`grid_trials`, from `SearchSpace.check`). A grid's budget is
    at most what it holds (more would only repeat settings). `recorded`: the sampler of
    the sweep being resumed or joined, whose choice stands."""
    reason = ""
    if recorded is not None and recorded.reason:
        reason = recorded.reason
    elif config.sweep.sampler == "tpe" and grid_trials <= n_trials:
        reason = (
            f"the space holds {grid_trials} settings, no more than the {n_trials} trials "
            "asked: a grid tries each once, where TPE would repeat some and miss others"
        )
    if reason:
        config = dataclasses.replace(
            config, sweep=dataclasses.replace(config.sweep, sampler="grid")
        )
    if config.sweep.sampler == "grid":
        n_trials = min(n_trials, grid_trials)
    return config, n_trials, reason


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
    server, which would receive $PGPASSWORD, or a file elsewhere: also the file of the
    folder a copied or renamed one came from) must be given again with --storage: a
    results folder never chooses where the study and a password go. Whatever storage a
    resume uses, the study in it is checked against trials.jsonl (`_check_own_study`)."""
    own = default_storage(sweep_dir)
    if not recorded:
        return own
    if recorded == shared.journal_storage(sweep_dir):
        return recorded
    was = sqlite_file(recorded)
    if was is not None and was.resolve() == Path(own[len(SQLITE) :]):
        return own
    raise HarnessError(
        f"{sweep_dir / SWEEP_FILE}: storage: records {redact_url(recorded)}, not this "
        f"folder's own {own}; a results folder does not choose where the study goes: "
        "pass --storage URL again"
    )


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where a sweep lives: its folder, its study's storage and name, and how it began."""

    sweep_dir: Path
    storage: str
    study_name: str
    resumed: bool = False
    """An existing folder's study continues (it must be there, and be the folder's own)."""
    created: bool = False
    """This process starts the sweep (else it resumes or joins one)."""
    recorded: SweepSummary | None = None
    """The summary of the sweep it resumes or joins (None when it starts one)."""


@dataclasses.dataclass
class _TrialEnd:
    """What a trial's record is made of, gathered as the trial goes."""

    number: int
    run_dir: Path
    started: float = dataclasses.field(default_factory=time.perf_counter)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    logged: bool = False
    """Its record is written (a repeat): an exception after it adds none."""

    def record(
        self, state: str, values: list[float] | None = None, error: str | None = None, done: int = 0
    ) -> TrialRecord:
        """The trial's line of trials.jsonl."""
        return TrialRecord(
            number=self.number,
            state=state,
            params=self.params,
            values=values,
            run_dir=str(self.run_dir),
            error=error,
            questions_done=done,
            duration_s=round(time.perf_counter() - self.started, 3),
        )


class _Sweep:
    """State of one sweep process: folder, study, shared judge and the bookkeeping."""

    def __init__(
        self,
        config: ExperimentConfig,
        place: _Place,
        cache_dir: Path,
        log: SweepLogStore,
        progress: ProgressSink | None = None,
        caches: CacheStorage | None = None,
    ) -> None:
        self.config = config
        self.progress = progress
        self.space = SearchSpace(config)
        self.dir = place.sweep_dir
        self.storage_url = place.storage
        self.study_name = place.study_name
        self.cache_dir = cache_dir
        self.judge: Judge | None = None
        self.book = SweepBook(tuple(config.sweep.objective))
        self.n_questions = count_questions(config)
        self.importances: dict[str, float] = {}
        self.importances_note: str | None = None
        self.warnings: list[str] = []
        """Written with the summary when the sweep ends (`_run_here`)."""
        self.caches = caches
        self.log = log
        self.shared = log.shared
        """Other workers may run trials of this sweep at the same time."""
        self.slots: shared.SlotLock | None = None
        self.n_trials = config.sweep.trials
        """The finished trials asked for (--trials or sweep.trials; a grid's at most)."""
        self.sampler_reason = ""
        """Why the sampler is not the experiment's own (`plan_sampler`)."""
        self.batch: dict[str, Any] = {}
        """What the sweep's batch jobs cost (judge.batch; harness.judge.batch)."""
        self.repeats = 0
        """Proposals of a finished trial's settings this process logged (`_repeat`)."""

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
            directions=[str(d) for d in directions(c.sweep.objective)],
            sampler=SamplerSpec(
                name=c.sweep.sampler, seed=c.sweep.seed, reason=self.sampler_reason
            ),
            pruner=c.sweep.pruner,
            space=dataclasses.asdict(c.sweep.space),
            storage=redact_url(self.storage_url),
            study_name=self.study_name,
            n_trials_requested=self.n_trials,
            counts=self.book.counts(),
            best=self.book.best(),
            stats=self.book.sweep_stats(self.batch),
            recommendation=self.book.recommendation(),
            importances=self.importances,
            importances_note=self.importances_note,
            warnings=list(self.warnings),
            # Who writes it: a reader on this host then sees a sweep killed with -9 as
            # interrupted.
            pid=os.getpid(),
            host=this_host(),
        )

    def write(self, status: str, error: str | None = None) -> None:
        """Store the summary (after taking in other workers' trials)."""
        self.log.write(self.book, lambda: self.summary(status, error))

    def append(self, record: TrialRecord, run: RunLog | None = None) -> None:
        """Log a trial's end and take it into the bookkeeping."""
        self.log.append(record, run, self.book, lambda: self.summary(STATUS_RUNNING))

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

    def objective(self, trial: optuna.Trial) -> float | list[float]:
        """Run one trial; its record is logged however it ends."""
        if self.slots is not None:
            trial.set_user_attr(shared.WORKER_ATTR, shared.worker_name())
        end = _TrialEnd(trial.number, self.dir / "trials" / str(trial.number))
        try:
            try:
                end.params = self.space.suggest(trial)
            finally:
                # The trial runs in the study with its settings: other workers count it,
                # and their samplers see what it took (a grid does not visit it twice).
                if self.slots is not None:
                    self.slots.release()
            twin = finished_twin(trial)
            values = self._run_trial(trial, end) if twin is None else self._repeat(trial, end, twin)
            return values[0] if len(values) == 1 else values
        except KeyboardInterrupt:
            self.append(end.record("interrupted", error="interrupted"))
            raise
        except optuna.TrialPruned as exc:
            # pruned before it ran (not a repeat, logged as one)
            if not end.logged and not (end.run_dir / HEADER).is_file():
                self.append(end.record("pruned", error=str(exc)))
            raise
        except Exception as exc:
            message = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
            logger.warning("trial {} failed: {}", trial.number, message)
            self.append(end.record("failed", error=message))
            if self.shared:  # counts against the budget (a dead worker's trial does not)
                trial.set_user_attr(shared.FAILED_ATTR, True)
            raise
        finally:
            self.write(STATUS_RUNNING)

    def _repeat(
        self, trial: optuna.Trial, end: _TrialEnd, twin: optuna.trial.FrozenTrial
    ) -> list[float]:
        """A proposal of a finished trial's settings: not run (the pipeline is
        deterministic, so it would give the same values from the caches), logged as a
        repeat, and told to the sampler as its twin ended: the twin's values, or pruned
        (TrialPruned)."""
        trial.set_user_attr(shared.REPEAT_ATTR, twin.number)
        pruned = twin.state == optuna.trial.TrialState.PRUNED
        values = None if pruned else list(twin.values)
        how = "pruned, not run again" if pruned else "not run again"
        logger.info("trial {}: trial {}'s settings again, not run", trial.number, twin.number)
        self.append(
            dataclasses.replace(
                end.record("repeat", values=values),
                run_dir=str(self.dir / "trials" / str(twin.number)),
                error=f"trial {twin.number}'s settings: {how}",
            )
        )
        end.logged = True
        self.repeats += 1
        if values is None:
            raise optuna.TrialPruned(f"trial {twin.number}'s settings, pruned")
        return values

    def _run_trial(self, trial: optuna.Trial, end: _TrialEnd) -> list[float]:
        """The trial's run, reporting its running objective after each batch; its values
        (or TrialPruned, its record logged)."""
        params = end.params
        keys = [metric_key(m, params["k"]) for m in self.config.sweep.objective]
        logger.info("trial {}: {}", trial.number, params)
        run = run_experiment(
            with_lazy_default(self.space.trial_config(params)),
            cache_dir=self.cache_dir,
            judge=self.judge,
            run_dir=end.run_dir,
            batches=_batch_counts(self.config.sweep.batches, self.n_questions),
            after_batch=_pruning_hook(trial, keys, params["k"]),
            progress=self.progress,
            storage=self.caches,
        )
        done = len(run.questions)
        if run.header.status == "pruned":
            self.append(end.record("pruned", done=done), run)
            raise optuna.TrialPruned(f"pruned after {done} questions")
        missing = [k for k in keys if k not in run.header.metrics]
        if missing:
            raise HarnessError(f"no value for {missing} (every question's verdicts failed?)")
        values = [float(run.header.metrics[k]) for k in keys]
        self.append(end.record("complete", values=values, done=done), run)
        return values


def finished_twin(trial: optuna.Trial) -> optuna.trial.FrozenTrial | None:
    """The trial of the study that took `trial`'s settings (suggested) and ran to its
    end, complete (first) or pruned; None if there is none.

    TPE proposes settings it has tried: on spaces a few times larger than the budget, 4
    to 5 of 20 trials (median over seeds). Such a trial would only repeat its twin's
    run from the caches, and end as its twin did."""
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    twins = [
        t
        for t in trial.study.get_trials(deepcopy=False, states=states)
        if t.number != trial.number
        and t.params == trial.params
        and shared.REPEAT_ATTR not in t.user_attrs
    ]
    return min(twins, key=lambda t: (t.state != states[0], t.number), default=None)


def _pruning_hook(
    trial: optuna.Trial, keys: list[str], k: int
) -> Callable[[int, list[dict[str, float]]], bool]:
    """After each batch: report the running objective and ask the pruner (one objective
    only: Optuna cannot prune multi-objective studies)."""

    def after_batch(n_done: int, per_q: list[dict[str, float]]) -> bool:
        if len(keys) != 1:
            return False
        value = aggregate(per_q, range(1, k + 1)).get(keys[0])
        if value is None:
            return False
        trial.report(value, step=n_done)
        return trial.should_prune()

    return after_batch


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
        if stale and rec is not None and rec.state in ("complete", "pruned"):
            _tell_logged(study, rec)  # its line was written, the study's tell was not
            continue
        if stale:
            shared.fail_trial(study, t.number)
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


def _tell_logged(study: optuna.Study, rec: TrialRecord) -> None:
    """Tell the study how a trial ended as trials.jsonl logs it (a kill -9 came between
    the line and the study's own tell), failed if the line holds no outcome; nothing if
    another worker told it first."""
    if rec.state != "pruned" and not rec.values:
        shared.fail_trial(study, rec.number)
        return
    with contextlib.suppress(ValueError, optuna.exceptions.UpdateFinishedTrialError):
        if rec.state == "pruned":
            study.tell(rec.number, state=optuna.trial.TrialState.PRUNED)
        elif rec.values:
            study.tell(rec.number, rec.values[0] if len(rec.values) == 1 else list(rec.values))


def _check_own_study(study: optuna.Study, sweep_dir: Path, storage: str) -> None:
    """Refuse to resume a study that is not the folder's own: every trial trials.jsonl
    logs as finished must be in it, finished, with the same settings; otherwise new
    trials would reuse their numbers and overwrite their run folders."""
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for rec in read_trials(sweep_dir):
        if rec.state not in ("complete", "pruned", "failed"):
            continue
        t = trials.get(rec.number)
        # The record also holds settings fixed outside the space: compare what Optuna drew.
        drawn = {} if t is None else dict(t.params)
        # RUNNING: killed between the trial's line and the study's tell (resume tells it)
        if (
            t is None
            or not (t.state.is_finished() or t.state == optuna.trial.TrialState.RUNNING)
            or any(rec.params.get(k) != v for k, v in drawn.items())
        ):
            raise HarnessError(
                f"{sweep_dir / TRIALS_FILE}: trial {rec.number} is not in the study "
                f"{study.study_name!r} of {redact_url(storage)} as logged; that study is not "
                "this folder's own, and resuming it would overwrite finished trials"
            )


def _check_same_sweep(
    recorded: SweepSummary, config: ExperimentConfig, where: str, hint: str
) -> None:
    """Continuing a sweep (joined by name, resumed, or joined with an experiment file):
    its search must be the one the sweep started with (space, objective, sampler), or the
    study would mix two searches (and Optuna fail every trial whose choices changed)."""
    c = config

    def as_recorded(space: SpaceConfig) -> dict[str, Any]:  # lists, as sweep.json has them
        return dict(json.loads(json.dumps(dataclasses.asdict(space))))

    # a dimension an older sweep.json does not name was not searched
    theirs = {**as_recorded(SpaceConfig()), **recorded.space}
    # a TPE sweep whose space was small enough runs as a grid (plan_sampler); the config
    # it records may say either
    samplers = {recorded.sampler.name} | ({"tpe"} if recorded.sampler.reason else set())
    same = (as_recorded(c.sweep.space), list(c.sweep.objective)) == (
        theirs,
        list(recorded.objective),
    )
    if not same or c.sweep.sampler not in samplers:
        raise HarnessError(
            f"{where}: sweep {recorded.sweep_id!r} searched another space, objective or "
            f"sampler than this experiment's; {hint}"
        )


def _continue_hint(place: _Place, db: SweepDatabase | None, *, resumed: bool) -> tuple[str, str]:
    """Where a continued sweep's record is, and how to continue it with its own search."""
    where = (
        f"{db.where} sweep {place.study_name}"
        if db is not None
        else str(place.sweep_dir / SWEEP_FILE)
    )
    if resumed:
        return where, (
            "resume it without an experiment file (its own settings are recorded), or with "
            "the file it started from"
        )
    return where, "join it without the experiment file (--join NAME), or pick a new --name"


def _resume_place(sweep_dir: Path, storage: str | None) -> _Place:
    """An existing sweep folder to continue: its study's storage and recorded name."""
    if not (sweep_dir / SWEEP_FILE).is_file():
        raise HarnessError(f"{sweep_dir}: not a sweep folder (no {SWEEP_FILE})")
    recorded = read_sweep_summary(sweep_dir)
    return _Place(
        sweep_dir,
        storage or recorded_storage(sweep_dir, recorded.storage),
        recorded.study_name or sweep_dir.name,
        resumed=True,
        recorded=recorded,
    )


def _join_place(
    results_dir: Path, join: str, storage: str | None, db: SweepDatabase | None
) -> _Place:
    """An existing sweep to work on: in the database (its folder on this machine is made
    once its search is checked), or a folder with its journal."""
    sweep_dir = results_dir / join
    if db is not None:
        if not db.exists(join):
            raise HarnessError(f"{db.where}: no sweep named {join!r} to join")
        assert storage is not None
        return _Place(sweep_dir, storage, join, recorded=db.read_summary(join))
    if not (sweep_dir / SWEEP_FILE).is_file():
        raise HarnessError(
            f"{sweep_dir}: no sweep folder to join (no {SWEEP_FILE}); give "
            "--storage URL for a sweep in a database"
        )
    recorded = read_sweep_summary(sweep_dir)
    return _Place(
        sweep_dir, storage or recorded_storage(sweep_dir, recorded.storage), join, recorded=recorded
    )


def _locate(
    config: ExperimentConfig,
    results_dir: Path,
    *,
    resume: str | os.PathLike[str] | None,
    storage: str | None,
    db: SweepDatabase | None,
    name: str | None,
    join: str | None,
    workers: int,
) -> _Place:
    """Where the sweep lives, its folder made when it is new. A sweep it resumes or joins
    must have this experiment's search (`_check_same_sweep`), checked before its folder
    is made on this machine."""
    if resume is not None and db is not None:
        join = Path(resume).name  # a database sweep is resumed by joining it
    sweep_name = join or name or new_run_id(f"{config.name}-sweep")
    sweep_dir = results_dir / sweep_name
    if resume is not None or join is not None or (db is not None and db.exists(sweep_name)):
        if resume is not None and db is None:
            place = _resume_place(Path(resume), storage)
        else:
            place = _join_place(results_dir, sweep_name, storage, db)
        assert place.recorded is not None
        where, hint = _continue_hint(place, db, resumed=resume is not None)
        _check_same_sweep(place.recorded, config, where, hint)
        place.sweep_dir.mkdir(parents=True, exist_ok=True)  # a database sweep's, here
        return place
    if db is None and sweep_dir.exists():
        raise HarnessError(f"{sweep_dir}: exists; join it with --join {sweep_name}")
    sweep_dir.mkdir(parents=True, exist_ok=db is not None)
    if storage is None:
        storage = shared.journal_storage(sweep_dir) if workers > 1 else default_storage(sweep_dir)
    return _Place(sweep_dir, storage, sweep_name, created=True)


def _caches(
    place: _Place, db: SweepDatabase | None, cache: Path, heartbeat_s: int
) -> CacheStorage | None:
    """The caches workers share (None: the run's own default in `cache`)."""
    ttl = float(shared.grace_period_s(heartbeat_s))
    if db is not None:
        return open_storage(place.storage, cache, claim_ttl_s=ttl)
    if shared.is_journal(place.storage):
        return FolderStorage(cache, claim_ttl_s=ttl)
    return None


def _open_study(sweep: _Sweep, place: _Place, heartbeat_s: int) -> optuna.Study:
    """The sweep's Optuna study: created (or joined), or, on a resume, loaded and checked
    to be the folder's own (a resume never starts a new study reusing trial numbers)."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # we log trial ends ourselves
    config = sweep.config
    try:
        storage = shared.optuna_storage(
            place.storage, heartbeat_s=heartbeat_s, on_stale=sweep.on_stale
        )
        if place.resumed and place.study_name not in _study_names(storage):
            raise HarnessError(
                f"{redact_url(place.storage)}: holds no study named {place.study_name!r}; "
                f"it is not the study of {place.sweep_dir}, and a new one would reuse the "
                "numbers of its finished trials"
            )
        study = optuna.create_study(
            study_name=place.study_name,
            storage=storage,
            sampler=_sampler(config, parallel=sweep.shared),
            pruner=_pruner(config),
            directions=directions(config.sweep.objective),
            load_if_exists=True,
        )
    except HarnessError:
        raise
    except Exception as exc:  # storage errors come in many types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HarnessError(
            f"cannot open the study storage {redact_url(place.storage)}: {redact(first)}"
        ) from None
    if place.resumed:
        _check_own_study(study, place.sweep_dir, place.storage)
    return study


def _study_names(storage: str | optuna.storages.BaseStorage) -> set[str]:
    return {s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}


def _start(study: optuna.Study, sweep: _Sweep, place: _Place, n_trials: int) -> int:
    """Requeue what a resume finds cut short, enqueue a new sweep's baseline, and log the
    sweep as running; the number of trials still to finish."""
    if place.resumed:
        _requeue_unfinished(study, sweep)
        sweep.book.add_from_disk(read_trials(place.sweep_dir))
    if place.created and sweep.config.sweep.baseline:
        baseline = sweep.space.baseline()
        if baseline is None:
            logger.warning("the experiment's own settings lie outside the space: no baseline trial")
        else:
            study.enqueue_trial(baseline)
    finished = sum(
        1
        for t in study.get_trials(
            deepcopy=False,
            states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED),
        )
        if shared.REPEAT_ATTR not in t.user_attrs  # repeats do not count: `_optimize`
    )
    sweep.write(STATUS_RUNNING)
    return max(0, n_trials - finished)


def _optimize(study: optuna.Study, sweep: _Sweep, n_trials: int, remaining: int) -> None:
    """Run this process's trials: up to the shared budget, or `remaining` of its own.

    A repeat (a finished trial's settings proposed again, not run) does not count
    against the budget, so a sweep tries as many settings as it was asked for; up to
    `n_trials` repeats, so a sampler that proposes only what it has tried still ends."""
    if not sweep.shared:
        while remaining > 0:
            before = sweep.repeats
            study.optimize(
                sweep.objective, n_trials=remaining, catch=(Exception,), gc_after_trial=False
            )
            remaining = min(sweep.repeats - before, n_trials - sweep.repeats)
        return
    sweep.slots = shared.SlotLock(sweep.storage_url, sweep.dir.name, sweep.dir)
    try:
        shared.run_budget(
            study,
            sweep.objective,
            n_trials,
            sweep.slots,
            sweep.on_stale,
            reap_local=shared.is_journal(sweep.storage_url),
        )
    finally:
        sweep.slots.close()


def _run_here(
    study: optuna.Study, sweep: _Sweep, judge: Judge | None, n_trials: int, remaining: int
) -> None:
    """Run the trials in this process, logging how the sweep ended."""
    logger.info(
        "sweep {}: {} trials to run ({} finished)", sweep.dir.name, remaining, n_trials - remaining
    )
    try:
        with _maybe_judge(sweep, judge):
            if sweep.config.judge.batch:
                _judge_space_in_batches(sweep)
            _optimize(study, sweep, n_trials, remaining)
    except KeyboardInterrupt:
        # Other workers carry on: the shared summary keeps saying so.
        busy = sweep.shared and shared.others_running(study)
        sweep.write(STATUS_RUNNING if busy else STATUS_INTERRUPTED, None if busy else "interrupted")
        raise
    except Exception as exc:
        sweep.write(STATUS_FAILED, str(exc))
        raise
    sweep.importances, note = param_importances(study, sweep.config.sweep.objective[0])
    sweep.importances_note = note or None
    bias = sweep.book.source_judge_warning(sweep.config.retrieval.k)
    if bias:  # a sweep on generated questions: their labels and the judge disagree
        logger.warning("sweep {}: {}", sweep.dir.name, bias)
        sweep.warnings = [bias]  # in sweep.json, so `show` and the report carry it
    sweep.write(STATUS_DONE)


def _judge_space_in_batches(sweep: _Sweep) -> None:
    """judge.batch: every verdict the space needs, through the provider's batch API,
    before the first trial (which then reads them from the cache)."""
    from harness.sweep.batch import batch_sweep

    if sweep.judge is None:  # _maybe_judge opened it
        raise HarnessError("a batch sweep needs the judge open")
    sweep.batch = batch_sweep(
        sweep.config, sweep.judge, sweep.dir, sweep.cache_dir, shared=sweep.shared
    )
    sweep.write(STATUS_RUNNING)


def _run_local_workers(
    sweep: _Sweep, worker_argv: Callable[[str], Sequence[str]] | None, workers: int, remaining: int
) -> None:
    """Start `workers` processes joining the sweep and wait for them."""
    if worker_argv is None:
        raise HarnessError("workers > 1 needs a command that starts a worker")
    name = sweep.dir.name
    logger.info("sweep {}: {} workers for {} trials", name, workers, remaining)
    codes = shared.run_workers(worker_argv(name), workers)
    if all(code != 0 for code in codes):
        raise HarnessError(
            f"sweep {name}: every worker failed (exit statuses {codes}); "
            "their error lines are above"
        )


def run_sweep(
    config: ExperimentConfig | str | os.PathLike[str],
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
    it is the folder's own optuna.db (any other must be given again as `storage`), and a
    storage without the folder's own study is refused, never started afresh.
    `judge` replaces the configured judge (tests pass a scripted one); `progress` shows
    each trial's judging.

    Shared sweeps (harness.sweep.shared): with a postgresql:// `storage` the study, the
    caches and the log live in the database, and `name` names the sweep (a sweep of that
    name is joined); `join` is the name of a sweep to work on (in the database, or a
    folder under `results_dir` whose study is its own journal file). `workers` > 1 starts
    that many processes running `worker_argv(name)` and waits for them (without
    `storage`, they share a journal file in the sweep folder); they die with this process.
    Workers stop when the sweep holds `trials` finished trials between them;
    `heartbeat_s` is how often a PostgreSQL worker signals it lives (a silent one's trial
    reruns after 3 beats). `config` is an experiment (`load_experiment`) or its file's path.
    """
    config = as_experiment(config)
    grid_trials = SearchSpace(config).check()  # one line, before anything is made
    if judge is None:
        check_endpoint(config.judge, config.path or "<experiment>")
    shared.check_shareable(storage, workers)
    check_storage(storage)  # before anything is made
    if config.judge.batch:  # a batch sweep that cannot run leaves no folder behind
        from harness.sweep.batch import check_batch_sweep

        check_batch_sweep(config, storage=storage, workers=workers, join=join)
    if config.judge.calibration:  # a bad calibration file stops the sweep before its folder
        read_calibration(config.resolve_path(config.judge.calibration))
    shared.watch_parent()  # a local worker ends with the sweep that started it
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if storage is not None:
        remember_url(storage)  # its password, should a storage error echo it
    db = open_database(storage)
    place = _locate(
        config,
        Path(results_dir),
        resume=resume,
        storage=storage,
        db=db,
        name=name,
        join=join,
        workers=workers,
    )
    if place.resumed:  # a batch sweep resumed without --batch stays one
        from harness.sweep.batch import resume_config

        config = resume_config(config, place.sweep_dir)
    log = open_sweep_log(place.storage, place.sweep_dir, db)
    config, n_trials, reason = plan_sampler(
        config,
        trials if trials is not None else config.sweep.trials,
        grid_trials,
        None if place.recorded is None else place.recorded.sampler,
    )
    if reason and place.created:
        logger.info("sweep {}: {}", place.sweep_dir.name, reason)
    sweep = _Sweep(config, place, cache, log, progress, _caches(place, db, cache, heartbeat_s))
    sweep.n_trials, sweep.sampler_reason = n_trials, reason
    if db is not None and place.created and not db.create(sweep.summary(STATUS_RUNNING)):
        place = dataclasses.replace(place, created=False)  # another worker made it just now
    study = _open_study(sweep, place, heartbeat_s)
    remaining = _start(study, sweep, place, n_trials)
    if workers > 1:
        _run_local_workers(sweep, worker_argv, workers, remaining)
    else:
        _run_here(study, sweep, judge, n_trials, remaining)
    return log.read()
