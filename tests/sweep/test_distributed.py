"""Sweeps shared by worker processes, on a real PostgreSQL server (tests/postgres.py) and on
a journal file, against the fake OpenAI-compatible endpoint.

Each worker process gets its own results and cache folders (as on its own machine): all
that they share is the database. Workers are told apart at the endpoint by their API keys.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest

from harness.cli import main
from harness.log import read_sweep
from harness.stores.postgres import sqlalchemy_url
from harness.stores.sweeps import SweepDatabase
from harness.sweep.shared import WORKER_ATTR
from harness.testing import Act, FakeOpenAI
from tests.conftest import DATA
from tests.postgres import PASSWORD

SWEEP = DATA / "sweep.toml"
ROOT = Path(__file__).resolve().parents[2]
FINISHED = ("complete", "pruned")
# 3 chunk sizes x 2 overlaps x 2 k: a grid of 12, each visited once
GRID = [
    "sweep.sampler=grid",
    "sweep.pruner=none",
    "sweep.trials=12",
    "sweep.space.chunk_size=[120, 200, 300]",
    "sweep.space.chunk_overlap={low=0, high=20, step=20}",
    "sweep.space.k=[2, 3]",
]


EMBED_KEY = "embed-key-not-secret"
"""Every worker's embedder key (their judge keys tell them apart)."""


class Endpoint:
    """FakeOpenAI that counts answered judge prompts, and can hold one worker's requests
    (by its key) without answering them."""

    def __init__(self, latency_s: float = 0.05) -> None:
        self.latency_s = latency_s
        self.answered: collections.Counter[str] = collections.Counter()
        self.by_key: collections.Counter[str] = collections.Counter()
        self.hold_key: str | None = None
        self.held = threading.Event()
        self.crawl = threading.Event()
        """Set as the worker to hold is started: the others crawl until it is held."""
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.server = FakeOpenAI(self.behave)

    def behave(self, n: int, prompt: str) -> Act:
        auth = getattr(self.server.current, "authorization", "")
        key = auth.split(" ", 1)[-1]
        if self.hold_key is not None and key == self.hold_key:
            self.held.set()
            self.release.wait(120)
            return Act(kind="drop")  # never answered: the worker is dead by then
        # slow until the held worker is caught mid-trial, so the sweep is not over first;
        # slower still while it starts (its process, its own index), or the others could
        # finish the budget, or pay all it would, before its first request
        slow = self.hold_key is not None and not self.held.is_set()
        crawl = self.crawl.is_set() and key != EMBED_KEY  # the held one's index is not held up
        time.sleep((2.0 if crawl else 0.4) if slow else self.latency_s)
        with self._lock:
            self.answered[hashlib.sha256(prompt.encode()).hexdigest()] += 1
            self.by_key[key] += 1
        # relevant for about half the chunks, so "complete" is asked too
        return Act(text="yes" if len(prompt) % 2 else "no")

    def sets(self) -> list[str]:
        out: list[str] = []
        for item in (
            f"judge.base_url={self.server.base_url}",
            "judge.model=fake",
            "judge.api_key_env=HARNESS_TEST_JUDGE_KEY",
            "judge.concurrency=2",
            "embedder.name=openai",
            f"embedder.base_url={self.server.base_url}",
            "embedder.api_key_env=HARNESS_TEST_EMBED_KEY",
        ):
            out += ["--set", item]
        return out


@pytest.fixture
def endpoint():
    ep = Endpoint()
    with ep.server:
        yield ep
        ep.release.set()


def worker(tmp_path: Path, label: str, key: str, args: list[str]) -> subprocess.Popen[str]:
    """`python -m harness sweep ARGS` as worker `label`, with its own folders and key."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HARNESS_TEST_JUDGE_KEY": key,
        "HARNESS_TEST_EMBED_KEY": EMBED_KEY,
    }
    log = open(tmp_path / f"{label}.log", "w")  # noqa: SIM115 - closed by the process's end
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "sweep",
            *args,
            "--results-dir",
            str(tmp_path / label / "results"),
            "--cache-dir",
            str(tmp_path / label / "cache"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )


def wait_for(predicate, timeout: float, what: str, procs=()) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        for p in procs:
            assert p.poll() is None, f"a worker ended early (exit {p.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def finished_in(db: SweepDatabase, name: str) -> list:
    return [t for t in db.read_trials(name) if t.state in FINISHED] if db.exists(name) else []


def test_three_workers_one_killed_mid_trial_finish_the_budget_paying_each_verdict_once(
    tmp_path, pg_url, endpoint
):
    name = "shared-grid"
    common = ["--storage", pg_url, "--heartbeat", "2", *endpoint.sets()]
    for item in GRID:
        common += ["--set", item]
    db = SweepDatabase(pg_url)
    b_key = "worker-b-key-7731"
    endpoint.hold_key = b_key  # B's first paid request never gets an answer
    a = worker(tmp_path, "a", "worker-a-key-1842", [str(SWEEP), "--name", name, *common])
    procs = [a]
    try:
        wait_for(lambda: db.exists(name), 120, "the sweep to exist", procs)
        c = worker(tmp_path, "c", "worker-c-key-5520", ["--join", name, *common])
        procs.append(c)
        wait_for(lambda: len(finished_in(db, name)) >= 1, 120, "a finished trial", procs)
        # the others crawl from B's launch: under load, B's start-up (imports, its index)
        # took long enough at their pace for them to finish the grid before B was held
        endpoint.crawl.set()
        b = worker(tmp_path, "b", b_key, ["--join", name, *common])
        procs.append(b)
        wait_for(endpoint.held.is_set, 120, "worker B to be mid-trial", procs)
        time.sleep(1.0)  # B's other grading thread stores what it was answered
        study = optuna.load_study(study_name=name, storage=sqlalchemy_url(pg_url))
        running_b = [
            t
            for t in study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
            if t.user_attrs.get(WORKER_ATTR, "").endswith(f":{b.pid}")
        ]
        assert len(running_b) == 1, "B holds one running trial when it is killed"
        before = {t.number: t for t in finished_in(db, name)}
        os.kill(b.pid, signal.SIGKILL)
        b.wait()
        endpoint.release.set()
        for p in (a, c):
            p.wait(timeout=300)
            assert p.returncode == 0, (tmp_path / ("a.log" if p is a else "c.log")).read_text()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    log = db.read_sweep(name)
    trials = {t.number: t for t in log.trials}
    finished = [t for t in log.trials if t.state in FINISHED]
    # the budget, between the live workers; every setting of the grid exactly once
    assert len(finished) == 12
    assert len({json.dumps(t.params, sort_keys=True) for t in finished}) == 12
    assert log.summary.status == "done"
    assert log.summary.counts.complete == 12
    # nothing finished before the kill is lost or changed
    for number, t in before.items():
        assert trials[number] == t
    # B's trial was noticed (heartbeat) and its settings ran again as a new trial
    killed = running_b[0]
    assert trials[killed.number].state == "requeued"
    assert any(
        killed.params.items() <= t.params.items()
        and t.number > killed.number
        and t.state in FINISHED
        for t in log.trials
    )
    # the endpoint answered every distinct verdict exactly once, B's included
    assert endpoint.answered and max(endpoint.answered.values()) == 1
    # the stats add up over workers: the summary's calls are every answered request but
    # those B paid inside the trial it never finished (they are in the shared cache)
    b_recorded = sum(
        db.read_run(name, t.number).header.stats.get("judge_calls", 0)
        for t in finished
        if str(tmp_path / "b") in t.run_dir
    )
    b_unrecorded = endpoint.by_key[b_key] - b_recorded
    st = log.summary.stats
    assert st.judge_calls + b_unrecorded == sum(endpoint.answered.values())
    assert st.distinct_verdicts >= st.judge_calls

    # list / show / compare read the sweep from the database
    capsys_out = tmp_path / "out.json"
    for argv in (
        ["list", "--storage", pg_url, "--format", "json"],
        ["show", name, "--storage", pg_url, "--format", "json"],
        [
            "compare",
            f"{name}:{finished[0].number}",
            f"{name}:{finished[1].number}",
            "--storage",
            pg_url,
            "--format",
            "json",
        ],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "harness", *argv], cwd=ROOT, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        assert PASSWORD not in r.stdout + r.stderr
        capsys_out.write_text(r.stdout)
        data = json.loads(r.stdout)
        if argv[0] == "list":
            assert [row["id"] for row in data] == [name]
            assert data[0]["counts"]["complete"] == 12
        elif argv[0] == "show":
            assert len([t for t in data["trials"] if t["state"] in FINISHED]) == 12
        else:
            assert data["shared_questions"] == 6

    # a rerun of the whole sweep (a new sweep, same grid, any machine) pays nothing
    paid = sum(endpoint.answered.values())
    rerun = worker(tmp_path, "d", "worker-d-key-9034", [str(SWEEP), "--name", "again", *common])
    assert rerun.wait(timeout=300) == 0, (tmp_path / "d.log").read_text()
    again = db.read_sweep("again")
    assert sum(1 for t in again.trials if t.state in FINISHED) == 12
    assert sum(endpoint.answered.values()) == paid
    assert again.summary.stats.judge_calls == 0
    # no password in anything a worker logged
    for label in "abcd":
        assert PASSWORD not in (tmp_path / f"{label}.log").read_text()
    db.close()


# TPE asked for 20 trials of the same 12 settings: the sweep runs them as a grid, and the
# workers, who join it, keep that choice
TPE_ON_A_SMALL_SPACE = [
    "sweep.sampler=tpe" if i.startswith("sweep.sampler") else i for i in GRID if "trials" not in i
] + ["sweep.trials=20"]


@pytest.mark.parametrize("search", [GRID, TPE_ON_A_SMALL_SPACE], ids=["grid", "tpe-small-space"])
def test_local_workers_share_a_journal_file_and_pay_each_verdict_once(tmp_path, endpoint, search):
    args = [str(SWEEP), "--workers", "2", *endpoint.sets()]
    for item in search:
        args += ["--set", item]
    p = worker(tmp_path, "w", "one-key-for-both-2291", args)
    assert p.wait(timeout=300) == 0, (tmp_path / "w.log").read_text()
    (sweep_dir,) = (tmp_path / "w" / "results").iterdir()
    assert (sweep_dir / "optuna.journal").is_file()
    log = read_sweep(sweep_dir)
    finished = [t for t in log.trials if t.state in FINISHED]
    # on a failure, say which trial did not finish and why (its error, or the workers' log)
    why = [(t.number, t.state, t.error) for t in log.trials if t.state not in FINISHED]
    assert len(finished) == 12 and log.summary.status == "done", (
        why or (tmp_path / "w.log").read_text()[-4000:]
    )
    assert len({json.dumps(t.params, sort_keys=True) for t in finished}) == 12  # each once
    assert log.summary.sampler.name == "grid" and log.summary.n_trials_requested == 12
    assert bool(log.summary.sampler.reason) == (search is TPE_ON_A_SMALL_SPACE)
    st = log.summary.stats
    # both workers' trials are in the summary, and nothing was paid twice
    assert st.judge_calls == sum(endpoint.answered.values()) == st.distinct_verdicts
    assert max(endpoint.answered.values()) == 1


def test_workers_refuse_a_sqlite_url_in_one_line(tmp_path, capsys):
    code = main(
        [
            "sweep",
            str(SWEEP),
            "--workers",
            "2",
            "--storage",
            f"sqlite:///{tmp_path / 'o.db'}",
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
            "--set",
            "judge.base_url=http://127.0.0.1:9/v1",
            "--set",
            "judge.model=fake",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "cannot be shared by worker processes" in err


@pytest.mark.parametrize("problem", ["wrong password", "unreachable"])
def test_a_bad_database_is_one_error_line(tmp_path, postgres, problem, capsys):
    if problem == "wrong password":
        url = postgres.url("postgres", password="not-the-password-123")
    else:
        url = postgres.url("postgres").replace(f":{postgres.port}/", ":9/")
    code = main(
        [
            "sweep",
            str(SWEEP),
            "--storage",
            url,
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
            "--set",
            "judge.base_url=http://127.0.0.1:9/v1",
            "--set",
            "judge.model=fake",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("harness: error: postgresql://harness:***@127.0.0.1:")
    assert "cannot connect to PostgreSQL" in err
    assert "not-the-password-123" not in err and PASSWORD not in err
    assert ("password authentication failed" in err) == (problem == "wrong password")
    assert not (tmp_path / "r").exists()  # nothing was started
