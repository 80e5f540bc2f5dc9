"""Optuna sweeps over retrieval settings: one ordinary run folder per trial.

```
results/<sweep_id>/
  sweep.json      version, status, space, objective, sampler, storage, best trial or
                  Pareto front, cost stats. Replaced atomically after every trial.
  trials.jsonl    one line per finished trial: number, state, params, values, run dir,
                  error. Appended as each trial ends.
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
import itertools
import json
import math
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import optuna
from loguru import logger

from harness import metrics as metrics_stage
from harness.config import ExperimentConfig, parse_embedder_id, parse_objective
from harness.errors import HarnessError
from harness.judge import Judge
from harness.log import (
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    iter_jsonl,
    new_run_id,
    now_iso,
    read_run,
    write_json_atomic,
)
from harness.pipeline import (
    default_cache_dir,
    judge_estimator,
    judged_pairs,
    open_judge,
    run_experiment,
    token_cost,
)
from harness.types import LOG_VERSION

SWEEP_FILE = "sweep.json"
TRIALS_FILE = "trials.jsonl"
MINIMIZE = ("context_chars", "failures")


@dataclass(frozen=True)
class TrialRecord:
    """One line of trials.jsonl."""

    number: int
    state: str  # complete | pruned | failed | interrupted | requeued
    params: dict[str, Any]
    values: list[float] | None
    run_dir: str
    error: str | None = None
    questions_done: int = 0
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialRecord:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})


@dataclass(frozen=True)
class SweepLog:
    sweep_dir: Path
    summary: dict[str, Any]
    trials: tuple[TrialRecord, ...]


def directions(objective: tuple[str, ...]) -> list[str]:
    """Optuna directions: context size and failure counts are minimised, the rest maximised."""
    return ["minimize" if parse_objective(m)[0] in MINIMIZE else "maximize" for m in objective]


def metric_key(metric_id: str, k: int) -> str:
    """The run-header key of an objective for a trial retrieving k chunks."""
    name, fixed = parse_objective(metric_id)
    return f"{name}@{fixed if fixed is not None else k}"


def overlap_high(size: int, low: int, high: int, step: int) -> int | None:
    """The largest overlap low + n*step that is <= high and < size; None if even low isn't."""
    top = min(high, size - 1)
    if top < low:
        return None
    return low + ((top - low) // step) * step


def suggest(trial: optuna.Trial, config: ExperimentConfig) -> dict[str, Any]:
    """Define-by-run: the trial's settings. chunk_overlap's range depends on chunk_size, so
    it is never >= the size; dimensions without values keep the experiment's own."""
    sp = config.sweep.space
    params: dict[str, Any] = {}
    size = (
        int(trial.suggest_categorical("chunk_size", list(sp.chunk_size)))
        if sp.chunk_size
        else config.chunking.chunk_size
    )
    params["chunk_size"] = size
    if sp.chunk_overlap is not None:
        o = sp.chunk_overlap
        high = overlap_high(size, o.low, o.high, o.step)
        if high is None:
            raise optuna.TrialPruned(f"no overlap in {o.low}..{o.high} is below chunk size {size}")
        params["chunk_overlap"] = trial.suggest_int("chunk_overlap", o.low, high, step=o.step)
    else:
        params["chunk_overlap"] = min(config.chunking.chunk_overlap, size - 1)
    params["k"] = int(trial.suggest_categorical("k", list(sp.k))) if sp.k else config.retrieval.k
    params["reranker"] = (
        trial.suggest_categorical("reranker", list(sp.reranker))
        if sp.reranker
        else config.retrieval.reranker
    )
    if params["reranker"] != "none":  # fetch_k only matters when something reranks
        params["fetch_k"] = (
            int(trial.suggest_categorical("fetch_k", list(sp.fetch_k)))
            if sp.fetch_k
            else config.retrieval.fetch_k
        )
    params["embedder"] = (
        trial.suggest_categorical("embedder", list(sp.embedder))
        if sp.embedder
        else _embedder_id(config)
    )
    return params


def space_params(config: ExperimentConfig) -> list[dict[str, Any]]:
    """Every setting the space holds, as `suggest` would give them (what a grid visits):
    the overlap range clipped below each chunk size, fetch_k only where something reranks.
    """
    sp = config.sweep.space
    out: list[dict[str, Any]] = []
    for size in sp.chunk_size or (config.chunking.chunk_size,):
        if sp.chunk_overlap is not None:
            o = sp.chunk_overlap
            high = overlap_high(size, o.low, o.high, o.step)
            overlaps: Sequence[int] = () if high is None else range(o.low, high + 1, o.step)
        else:
            overlaps = (min(config.chunking.chunk_overlap, size - 1),)
        for overlap, k, reranker in itertools.product(
            overlaps, sp.k or (config.retrieval.k,), sp.reranker or (config.retrieval.reranker,)
        ):
            fetch_ks: Sequence[int | None] = (
                (sp.fetch_k or (config.retrieval.fetch_k,)) if reranker != "none" else (None,)
            )
            for fetch_k, embedder in itertools.product(
                fetch_ks, sp.embedder or (_embedder_id(config),)
            ):
                params: dict[str, Any] = {
                    "chunk_size": size,
                    "chunk_overlap": overlap,
                    "k": k,
                    "reranker": reranker,
                }
                if fetch_k is not None:
                    params["fetch_k"] = fetch_k
                params["embedder"] = embedder
                out.append(params)
    return out


def _embedder_id(config: ExperimentConfig) -> str:
    e = config.embedder
    return f"{e.name}:{e.model}" if e.model else e.name


def trial_config(config: ExperimentConfig, params: dict[str, Any]) -> ExperimentConfig:
    name, model = parse_embedder_id(params["embedder"])
    return replace(
        config,
        chunking=replace(
            config.chunking, chunk_size=params["chunk_size"], chunk_overlap=params["chunk_overlap"]
        ),
        retrieval=replace(
            config.retrieval,
            k=params["k"],
            reranker=params["reranker"],
            fetch_k=params.get("fetch_k", config.retrieval.fetch_k),
        ),
        embedder=replace(config.embedder, name=name, model=model),
    )


def baseline_params(config: ExperimentConfig) -> dict[str, Any] | None:
    """The experiment's own settings on the searched dimensions, or None when one of them
    lies outside the space (then there is no baseline trial to enqueue)."""
    sp = config.sweep.space
    c = config
    out: dict[str, Any] = {}
    for name, values, own in (
        ("chunk_size", sp.chunk_size, c.chunking.chunk_size),
        ("k", sp.k, c.retrieval.k),
        ("reranker", sp.reranker, c.retrieval.reranker),
        ("embedder", sp.embedder, _embedder_id(c)),
    ):
        if values:
            if own not in values:
                return None
            out[name] = own
    if sp.fetch_k and c.retrieval.reranker != "none":
        if c.retrieval.fetch_k not in sp.fetch_k:
            return None
        out["fetch_k"] = c.retrieval.fetch_k
    if sp.chunk_overlap is not None:
        o, own = sp.chunk_overlap, c.chunking.chunk_overlap
        high = overlap_high(c.chunking.chunk_size, o.low, o.high, o.step)
        if high is None or not o.low <= own <= high or (own - o.low) % o.step:
            return None
        out["chunk_overlap"] = own
    return out


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


class _Sweep:
    """State of one sweep process: folder, study, shared judge and the trial log."""

    def __init__(
        self, config: ExperimentConfig, sweep_dir: Path, storage: str, cache_dir: Path
    ) -> None:
        self.config = config
        self.dir = sweep_dir
        self.storage_url = storage
        self.cache_dir = cache_dir
        self.judge: Judge | None = None
        self.started = time.perf_counter()

    def summary(self, status: str, error: str | None = None) -> dict[str, Any]:
        trials = read_trials(self.dir)
        return {
            "log_version": LOG_VERSION,
            "sweep_id": self.dir.name,
            "status": status,
            "updated_at": now_iso(),
            "error": error,
            "experiment": self.config.path,
            "config": self.config.to_dict(),
            "objective": list(self.config.sweep.objective),
            "directions": directions(self.config.sweep.objective),
            "sampler": {"name": self.config.sweep.sampler, "seed": self.config.sweep.seed},
            "pruner": self.config.sweep.pruner,
            "space": dataclasses.asdict(self.config.sweep.space),
            "storage": _redact(self.storage_url),
            "study_name": self.dir.name,
            "n_trials_requested": self.config.sweep.trials,
            "counts": {
                state: sum(1 for t in trials if t.state == state)
                for state in ("complete", "pruned", "failed")
            },
            "best": with_ties(
                best_trials(trials, self.config.sweep.objective),
                trials,
                self.config.sweep.objective,
            ),
            "stats": sweep_stats(self.dir, trials),
        }

    def write(self, status: str, error: str | None = None) -> None:
        write_json_atomic(self.dir / SWEEP_FILE, self.summary(status, error))

    def append(self, record: TrialRecord) -> None:
        with open(self.dir / TRIALS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(record.to_dict()) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def objective(self, trial: optuna.Trial) -> float | list[float]:
        t0 = time.perf_counter()
        params: dict[str, Any] = {}
        run_dir = self.dir / "trials" / str(trial.number)

        def record(
            state: str, values: list[float] | None = None, error: str | None = None, done: int = 0
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
                )
            )

        try:
            params = suggest(trial, self.config)
            tconfig = trial_config(self.config, params)
            keys = [metric_key(m, params["k"]) for m in self.config.sweep.objective]
            single = len(keys) == 1

            def after_batch(n_done: int, per_q: list[dict[str, float]]) -> bool:
                if not single:
                    return False
                value = metrics_stage.aggregate(per_q, range(1, params["k"] + 1)).get(keys[0])
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
                batches=_batch_counts(self.config.sweep.batches, _count_questions(tconfig)),
                after_batch=after_batch,
            )
            done = len(run.questions)
            if run.header.status == "pruned":
                record("pruned", done=done)
                raise optuna.TrialPruned(f"pruned after {done} questions")
            missing = [k for k in keys if k not in run.header.metrics]
            if missing:
                raise HarnessError(f"no value for {missing} (every question's verdicts failed?)")
            values = [float(run.header.metrics[k]) for k in keys]
            record("complete", values=values, done=done)
            return values[0] if single else values
        except KeyboardInterrupt:
            record("interrupted", error="interrupted")
            raise
        except optuna.TrialPruned as exc:
            if not (run_dir / "header.json").is_file():  # pruned before it ran
                record("pruned", error=str(exc))
            raise
        except Exception as exc:
            message = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
            logger.warning("trial {} failed: {}", trial.number, message)
            record("failed", error=message)
            raise
        finally:
            self.write(STATUS_RUNNING)


def _count_questions(config: ExperimentConfig) -> int:
    from harness.load import load_questions

    n = len(load_questions(config.resolve_path(config.questions.file)))
    return min(n, config.questions.limit) if config.questions.limit else n


def _redact(url: str) -> str:
    """A storage URL without its password."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


def read_trials(sweep_dir: str | os.PathLike[str]) -> list[TrialRecord]:
    """trials.jsonl read back; the last line wins for a trial number listed twice."""
    by_number: dict[int, TrialRecord] = {}
    for d in iter_jsonl(Path(sweep_dir) / TRIALS_FILE):
        rec = TrialRecord.from_dict(d)
        by_number[rec.number] = rec
    return [by_number[n] for n in sorted(by_number)]


def best_trials(trials: list[TrialRecord], objective: tuple[str, ...]) -> list[dict[str, Any]]:
    """The best complete trial (one objective) or the Pareto front (two), best first."""
    done = [t for t in trials if t.state == "complete" and t.values]
    if not done:
        return []
    dirs = directions(objective)
    sign = [1.0 if d == "maximize" else -1.0 for d in dirs]

    def key(t: TrialRecord) -> tuple[float, ...]:
        return tuple(s * v for s, v in zip(sign, t.values or [], strict=True))

    if len(objective) == 1:
        best = max(done, key=lambda t: (key(t), -t.number))
        front = [best]
    else:
        front = [
            t
            for t in done
            if not any(
                all(a >= b for a, b in zip(key(o), key(t), strict=True)) and key(o) != key(t)
                for o in done
            )
        ]
        front.sort(key=lambda t: key(t), reverse=True)
    return [
        {"number": t.number, "params": t.params, "values": t.values, "run_dir": t.run_dir}
        for t in front
    ]


def _per_question(t: TrialRecord, metric_id: str) -> dict[str, float]:
    run = read_run(t.run_dir)
    key = metric_key(metric_id, int(t.params["k"]))
    return {q.question.question_id: q.metrics[key] for q in run.questions if key in q.metrics}


def with_ties(
    best: list[dict[str, Any]],
    trials: list[TrialRecord],
    objective: tuple[str, ...],
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """For one objective, add to the best trial the complete trials that cannot be told
    apart from it: the paired bootstrap interval (over shared questions) of their
    difference to the best contains 0."""
    if len(objective) != 1 or not best:
        return best
    top = next(t for t in trials if t.number == best[0]["number"])
    base = _per_question(top, objective[0])
    ties = []
    for t in trials:
        if t.state != "complete" or t.number == top.number:
            continue
        other = _per_question(t, objective[0])
        shared = [q for q in base if q in other]
        if len(shared) < 2:
            continue
        _, low, high = metrics_stage.paired_bootstrap(
            [base[q] for q in shared], [other[q] for q in shared], confidence=confidence
        )
        if low <= 0 <= high:
            ties.append(t.number)
    return [{**best[0], "indistinguishable": ties, "confidence": confidence}, *best[1:]]


def sweep_stats(sweep_dir: Path, trials: list[TrialRecord]) -> dict[str, Any]:
    """Cost of the sweep, read from the trials' own logs.

    - judge_calls / judge_cache_hits: summed over trials;
    - distinct_verdicts: distinct (question, chunk text, criterion) that any trial asked
      about: the floor for a sweep that pays once per distinct verdict;
    - naive_calls: what a tool without a cache would make: for every trial, questions x k x 2.
    """
    calls = hits = errors = retries = prompt = completion = naive = 0
    cost = 0.0
    distinct: set[tuple[str, str, str]] = set()
    for t in trials:
        run_dir = Path(t.run_dir)
        if not (run_dir / "header.json").is_file():
            continue
        run = read_run(run_dir)
        s = run.header.stats
        calls += int(s.get("judge_calls", 0))
        hits += int(s.get("judge_cache_hits", 0))
        errors += int(s.get("judge_errors", 0))
        retries += int(s.get("judge_retries", 0))
        cost += float(s.get("cost_usd", 0.0))
        prompt += int(s.get("prompt_tokens", 0))
        completion += int(s.get("completion_tokens", 0))
        k = max(run.header.ks) if run.header.ks else 0
        naive += len(run.questions) * k * 2
        for q in run.questions:
            for jh in q.hits:
                for cv in (jh.verdict.relevant, jh.verdict.complete):
                    if not cv.reason.startswith("not asked") and cv.error is None:
                        distinct.add((q.question.text, jh.chunk.text, cv.criterion))
    return {
        "judge_calls": calls,
        "judge_cache_hits": hits,
        "judge_errors": errors,
        "judge_retries": retries,
        "cost_usd": round(cost, 6),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "distinct_verdicts": len(distinct),
        "naive_calls": naive,
    }


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
            sweep.append(
                TrialRecord(
                    t.number,
                    "requeued",
                    dict(t.params),
                    None,
                    rec.run_dir if rec else "",
                    "cut short; its settings run again as a new trial",
                )
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
) -> SweepLog:
    """Run (or resume) a sweep until it holds `trials` finished trials.

    `resume` is an existing sweep folder: its study continues where it stopped, a trial
    cut short by a crash or kill -9 runs again (paying only for verdicts it never got),
    and no finished trial is redone.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    if resume is not None:
        sweep_dir = Path(resume)
        if not (sweep_dir / SWEEP_FILE).is_file():
            raise HarnessError(f"{sweep_dir}: not a sweep folder (no {SWEEP_FILE})")
        previous = json.loads((sweep_dir / SWEEP_FILE).read_text())
        storage = storage or previous["storage"]
        if "***" in storage:
            raise HarnessError(f"{sweep_dir}: its storage URL has a password; pass --storage again")
    else:
        sweep_dir = Path(results_dir) / new_run_id(f"{config.name}-sweep")
        sweep_dir.mkdir(parents=True)
    storage_url = storage or f"sqlite:///{(sweep_dir / 'optuna.db').resolve()}"
    n_trials = trials if trials is not None else config.sweep.trials
    sweep = _Sweep(config, sweep_dir, storage_url, cache)
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # we log trial ends ourselves
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
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
        raise HarnessError(f"cannot open the study storage {_redact(storage_url)}: {exc}") from None
    if resume is not None:
        _requeue_unfinished(study, sweep)
    if resume is None and config.sweep.baseline:
        baseline = baseline_params(config)
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
    sweep.write(STATUS_DONE)
    return read_sweep(sweep_dir)


def estimate_sweep(
    config: ExperimentConfig,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    trials: int | None = None,
) -> dict[str, Any]:
    """The most a sweep of `trials` trials could cost the judge, before anything is paid.

    Every setting of the space is retrieved (free with the local embedder or a cached
    index, see `judged_pairs`) and its open verdicts counted against the verdict cache.
    Optuna picks which settings run, so the figure is a bound, the smaller of:
    the `trials` most expensive settings each paying all their open pairs, and (pointwise
    or both modes, real pairs) every open pair of the whole space paid once, since the
    cache never pays a verdict twice. Pruning only lowers it. `no_cache_calls_max` is
    the same trials' calls without a verdict cache.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    n_trials = trials if trials is not None else config.sweep.trials
    space = space_params(config)
    keys = ("calls_max", "prompt_tokens_max", "completion_tokens_max")
    settings: list[dict[str, Any]] = []
    union: dict[tuple[str, str], None] = {}
    exact = True
    with judge_estimator(config.judge, cache) as estimate:
        for params in space:
            pairs, _, real = judged_pairs(trial_config(config, params), cache)
            e = estimate(pairs, real)
            settings.append(
                {
                    "params": params,
                    "pairs": len(pairs),
                    "open_pairs": e.open_pairs,
                    **{k: getattr(e, k) for k in keys},
                    "no_cache_calls_max": estimate(pairs, False).calls_max,
                }
            )
            exact = exact and real
            union.update(dict.fromkeys(pairs))
        # Each figure over its own costliest settings: the most calls and the most tokens
        # need not come from the same settings.
        bound = {k: sum(sorted((d[k] for d in settings), reverse=True)[:n_trials]) for k in keys}
        if exact and config.judge.mode != "listwise":
            whole = estimate(list(union), True)
            bound = {k: min(bound[k], getattr(whole, k)) for k in keys}
    est: dict[str, Any] = {
        "trials": n_trials,
        "sampler": config.sweep.sampler,
        "mode": config.judge.mode,
        "exact_pairs": exact,
        "settings_in_space": len(space),
        "judge_calls_max": bound["calls_max"],
        "prompt_tokens_max": bound["prompt_tokens_max"],
        "completion_tokens_max": bound["completion_tokens_max"],
        "one_trial_calls_max": max((d["calls_max"] for d in settings), default=0),
        "no_cache_calls_max": sum(
            sorted((d["no_cache_calls_max"] for d in settings), reverse=True)[:n_trials]
        ),
        "settings": settings,
    }
    cost = token_cost(config.judge, bound["prompt_tokens_max"], bound["completion_tokens_max"])
    if cost is not None:
        est["cost_usd_max"] = cost
    return est


def read_sweep(sweep_dir: str | os.PathLike[str]) -> SweepLog:
    folder = Path(sweep_dir)
    path = folder / SWEEP_FILE
    if not path.is_file():
        raise HarnessError(f"{folder}: not a sweep folder (no {SWEEP_FILE})")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}: unreadable ({exc})") from None
    return SweepLog(sweep_dir=folder, summary=summary, trials=tuple(read_trials(folder)))
