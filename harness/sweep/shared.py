"""A sweep many workers share: the study's storage, the trial budget split between them,
trials of dead workers run again, and local worker processes.

Storages that workers can share:

- PostgreSQL (`postgresql://...`): Optuna's RDB storage, with its heartbeat. A worker that
  stops beating for `grace_period_s(heartbeat_s)` seconds (killed with -9, its machine
  gone) has its trial failed by the next live worker, which runs the same settings
  again as a new trial (`on_stale`).
- A journal file in the sweep folder (`journal:/path/optuna.journal`, Optuna's
  JournalFileStorage): worker processes of one machine. It has no heartbeat, so a
  worker records its host and pid on its trial and the others fail and rerun the trial
  of a worker of this host that is gone.

A plain SQLite URL is not shared: SQLite's locking is not made for several writers
through SQLAlchemy, and a busy database fails trials at random.

The budget: before starting a trial a worker takes the sweep's slot lock (a PostgreSQL
advisory lock, or a lock file), counts the finished trials and those running, and
starts one only if they are fewer than the budget; the lock is let go once the new
trial is running in the study. So workers stop with exactly the budget between them,
and a worker with nothing to start waits while others' trials may still fail and need
running again.

Parallel TPE: Optuna 5's TPESampler has `constant_liar=True` by default (it was False up
to Optuna 3.x): each running trial counts as a bad result while others sample, so
workers do not propose near-identical settings at once. `_sampler` sets it explicitly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import optuna

from harness.errors import HarnessError
from harness.log.status import process_alive, this_host
from harness.secrets import redact_url

JOURNAL = "journal:"
"""The storage-URL prefix of an Optuna journal file (what `--workers` uses on one machine)."""
HEARTBEAT_S = 10
"""How often a worker on PostgreSQL tells the study it is alive (seconds)."""
WORKER_ATTR = "harness_worker"
"""The trial user attribute naming the worker running it (host:pid)."""
FAILED_ATTR = "harness_failed"
"""The trial user attribute marking a trial that failed (counts against the budget)."""
REPEAT_ATTR = "harness_repeat_of"
"""The trial user attribute of a repeat: the number of the finished trial whose settings
it repeats (it is not run; see `study.finished_twin`)."""
POLL_S = 0.5
PARENT_ENV = "HARNESS_SWEEP_PARENT"
"""Set by `run_workers` to its own pid: a worker whose parent is gone stops (`watch_parent`)."""


def grace_period_s(heartbeat_s: int) -> int:
    """How long a trial may go without a heartbeat before another worker reruns it; also
    the time-to-live of a verdict claim. Three beats: one late beat under load is no death."""
    return 3 * heartbeat_s


def journal_storage(sweep_dir: Path) -> str:
    """The journal storage URL of a sweep folder's own journal file."""
    return f"{JOURNAL}{(sweep_dir / 'optuna.journal').resolve()}"


def is_journal(url: str | None) -> bool:
    """Whether `url` names a journal file."""
    return bool(url) and str(url).startswith(JOURNAL)


def optuna_storage(
    url: str,
    *,
    heartbeat_s: int,
    on_stale: Callable[[optuna.Study, optuna.trial.FrozenTrial], None],
) -> str | optuna.storages.BaseStorage:
    """What `optuna.create_study` gets for `url`: an RDB storage with heartbeat for
    PostgreSQL, a journal storage for `journal:PATH`, else the URL itself."""
    from harness.stores.postgres import is_postgres, sqlalchemy_url

    if is_postgres(url):
        return optuna.storages.RDBStorage(
            sqlalchemy_url(url),
            heartbeat_interval=heartbeat_s,
            grace_period=grace_period_s(heartbeat_s),
            heartbeat_stale_trial_callback=on_stale,
            engine_kwargs={"pool_pre_ping": True},
        )
    if is_journal(url):
        from optuna.storages.journal import JournalFileBackend

        return optuna.storages.JournalStorage(JournalFileBackend(url[len(JOURNAL) :]))
    return url


def check_shareable(url: str | None, workers: int) -> None:
    """Refuse several workers on a storage they cannot share (a SQLite URL), in one line."""
    from harness.stores.postgres import is_postgres

    if workers > 1 and url and not (is_postgres(url) or is_journal(url)):
        raise HarnessError(
            f"--workers {workers}: the storage {redact_url(url)} cannot be shared by worker "
            "processes (SQLite's locking fails concurrent trials); leave out --storage to "
            "share a journal file in the sweep folder, or give a postgresql:// URL"
        )


# ---------------------------------------------------------------- the slot lock


class SlotLock:
    """The sweep's slot lock: held from counting the trials until a new one is running
    with its settings chosen (so no two workers' samplers choose without seeing each other).

    A PostgreSQL session advisory lock keyed by the sweep's name, or an exclusive lock on
    the sweep folder's `.slots.lock` file. `release` may be called when not held."""

    def __init__(self, url: str, name: str, sweep_dir: Path) -> None:
        from harness.stores.postgres import connect, is_postgres

        self._held = False
        self._conn: Any = None
        self._fd: int | None = None
        self._name = name
        if is_postgres(url):
            self._conn = connect(url)
        else:
            self._fd = os.open(sweep_dir / ".slots.lock", os.O_RDWR | os.O_CREAT, 0o666)

    def acquire(self) -> None:
        """Wait for the lock."""
        if self._conn is not None:
            self._conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (self._name,))
        else:
            assert self._fd is not None
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._held = True

    def release(self) -> None:
        """Let go of the lock if held."""
        if not self._held:
            return
        self._held = False
        if self._conn is not None:
            self._conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (self._name,))
        else:
            assert self._fd is not None
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release and close."""
        with contextlib.suppress(Exception):
            self.release()
        if self._conn is not None:
            self._conn.close()
        if self._fd is not None:
            os.close(self._fd)


@contextlib.contextmanager
def folder_lock(sweep_dir: Path) -> Iterator[None]:
    """An exclusive lock on the sweep folder's log (`.log.lock`), across processes."""
    fd = os.open(sweep_dir / ".log.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


# ---------------------------------------------------------------- the budget


def budget_used(trials: Sequence[optuna.trial.FrozenTrial], budget: int) -> int:
    """Trials that count against the budget: complete, pruned, or failed by the trial
    itself (not those failed because their worker died: those run again). A repeat (a
    finished trial's settings proposed again, not run) does not count, up to as many
    repeats as the budget: a sampler that proposes only what it has tried still ends."""
    done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    used = repeats = 0
    for t in trials:
        if t.state in done or (
            t.state == optuna.trial.TrialState.FAIL and t.user_attrs.get(FAILED_ATTR)
        ):
            if REPEAT_ATTR in t.user_attrs:
                repeats += 1
            else:
                used += 1
    return used + max(0, repeats - budget)


def worker_name() -> str:
    """host:pid of this process, as recorded on the trials it runs."""
    return f"{this_host()}:{os.getpid()}"


def fail_trial(study: optuna.Study, number: int) -> bool:
    """Mark running trial `number` failed; False if it had ended (another worker got
    there first)."""
    try:
        study.tell(number, state=optuna.trial.TrialState.FAIL)
    except (ValueError, optuna.exceptions.UpdateFinishedTrialError):
        return False
    return True


def fail_dead_local(
    study: optuna.Study, on_stale: Callable[[optuna.Study, optuna.trial.FrozenTrial], None]
) -> None:
    """Fail the running trials of workers of this host that are gone, and hand each to
    `on_stale` (the journal storage has no heartbeat to do it)."""
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        host, _, pid = str(t.user_attrs.get(WORKER_ATTR, "")).rpartition(":")
        if host != this_host() or not pid.isdigit() or process_alive(int(pid)):
            continue
        if fail_trial(study, t.number):
            on_stale(study, t)


def run_budget(
    study: optuna.Study,
    objective: Callable[[optuna.Trial], Any],
    budget: int,
    lock: SlotLock,
    on_stale: Callable[[optuna.Study, optuna.trial.FrozenTrial], None],
    *,
    reap_local: bool,
) -> None:
    """Run trials of `study` until `budget` of them are finished between all workers.

    `objective` must call `lock.release()` once its trial's settings are suggested (the
    trial is then running in the study with them, so other workers count it and their
    samplers see what it took). `reap_local`: fail the trials of dead workers of
    this host (for a storage without heartbeat)."""
    while True:
        wait = False
        lock.acquire()
        try:
            # Under the lock: between a dead worker's trial failing and its settings being
            # queued again, another worker's grid would take them as done and, with the
            # rest taken, draw a setting twice.
            with warnings.catch_warnings():  # experimental in Optuna, used as Optuna does
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(study)
            if reap_local:
                fail_dead_local(study, on_stale)
            trials = study.get_trials(deepcopy=False)
            used = budget_used(trials, budget)
            if used >= budget:
                return
            running = sum(1 for t in trials if t.state == optuna.trial.TrialState.RUNNING)
            if used + running >= budget:
                wait = True  # a running trial may still die and need running again
            else:
                study.optimize(objective, n_trials=1, catch=(Exception,), gc_after_trial=False)
        finally:
            lock.release()
        if wait:
            time.sleep(POLL_S)


def others_running(study: optuna.Study) -> bool:
    """Whether any trial of the study is running (called after this worker's own ended)."""
    return bool(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)))


# ---------------------------------------------------------------- local workers


def run_workers(argv: Sequence[str], n: int, cwd: Path | None = None) -> list[int]:
    """Start `n` worker processes running `argv` and wait for all of them; their exit
    statuses. Ctrl-C (or SIGTERM, which the CLI turns into it) stops them the same way,
    and they die with this process even when it is killed with -9: the kernel sends them
    SIGTERM (Linux), and each also watches its parent (`watch_parent`)."""
    from harness.llm.local import popen_tied

    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    procs = [
        popen_tied(list(argv), signal.SIGTERM, stdout=subprocess.DEVNULL, cwd=cwd, env=env)
        for _ in range(n)
    ]
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(0.2)  # poll, not wait: a dead worker is reaped at once
    except BaseException:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        raise
    return [int(p.returncode) for p in procs]


def watch_parent(poll_s: float = 0.5, grace_s: float = 30.0) -> threading.Thread | None:
    """In a worker started by `run_workers` ($HARNESS_SWEEP_PARENT set): a daemon thread
    that stops this process once its parent is gone, as Ctrl-C would (SIGTERM), and kills
    it if it has not ended `grace_s` later. The fallback where the kernel's parent-death
    signal is not available; None when this process is no such worker."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit():
        return None
    os.environ.pop(PARENT_ENV)  # not inherited by what this worker starts
    expected = int(parent)

    def watch() -> None:
        while os.getppid() == expected:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)
        os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=watch, name="harness-parent-watch", daemon=True)
    thread.start()
    return thread
