"""What a sweep must never do to what it already holds (#26): overwrite a finished trial of a
copied folder (item 4), leave workers running after its parent is killed (item 12), or make
a folder for a storage that cannot hold it (item 13)."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from harness.cli import main
from harness.config import load_experiment
from harness.errors import HarnessError
from harness.log import read_sweep
from harness.sweep import run_sweep
from tests.conftest import DATA, ScriptedJudge
from tests.sweep.test_distributed import ROOT, Endpoint

SWEEP = DATA / "sweep.toml"
FINISHED = ("complete", "pruned")


def snapshot(sweep_dir: Path) -> dict[str, bytes]:
    """Every file of the finished trials' run folders, and trials.jsonl's lines so far."""
    out = {"trials.jsonl": (sweep_dir / "trials.jsonl").read_bytes()}
    for f in sorted((sweep_dir / "trials").rglob("*")):
        if f.is_file():
            out[str(f.relative_to(sweep_dir))] = f.read_bytes()
    return out


def assert_kept(sweep_dir: Path, before: dict[str, bytes]) -> None:
    jsonl = (sweep_dir / "trials.jsonl").read_bytes()
    assert jsonl.startswith(before["trials.jsonl"])  # finished lines unchanged, only appended
    for name, data in before.items():
        if name != "trials.jsonl":
            assert (sweep_dir / name).read_bytes() == data, name
    lines = [json.loads(x) for x in jsonl.decode().splitlines()]
    finished = [r["number"] for r in lines if r["state"] in FINISHED]
    assert len(finished) == len(set(finished)), f"a trial number finished twice: {finished}"


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A finished sweep of 3 trials (and its cache folder)."""
    root = tmp_path_factory.mktemp("finished")
    config = load_experiment(SWEEP, ["sweep.trials=3", "judge.concurrency=1"])
    log = run_sweep(config, results_dir=root / "r", cache_dir=root / "c", judge=ScriptedJudge())
    assert log.summary.status == "done"
    return log.sweep_dir, root / "c"


def test_resuming_a_copied_sweep_folder_never_overwrites_a_finished_trial(tmp_path, finished_sweep):
    original, cache = finished_sweep
    copy = tmp_path / "renamed-sweep"
    shutil.copytree(original, copy)
    before, original_before = snapshot(copy), snapshot(original)
    config = load_experiment(SWEEP, ["sweep.trials=5", "judge.concurrency=1"])
    # Without --storage: sweep.json records the original folder's file, so it is refused.
    with pytest.raises(HarnessError, match="pass --storage URL again"):
        run_sweep(config, cache_dir=cache, resume=copy, judge=ScriptedJudge())
    assert snapshot(copy) == before
    # With the folder's own optuna.db: its study (recorded by name) goes on from trial 3.
    log = run_sweep(
        config,
        cache_dir=cache,
        resume=copy,
        storage=f"sqlite:///{copy / 'optuna.db'}",
        judge=ScriptedJudge(),
    )
    assert log.summary.status == "done"
    assert_kept(copy, before)
    assert_kept(original, original_before)
    finished = sorted(t.number for t in log.trials if t.state in FINISHED)
    assert finished[:3] == [0, 1, 2] and len(finished) == 5  # repeats (not run) aside
    # the copy now records its own storage, so the next resume needs no --storage
    assert read_sweep(copy).summary.storage == f"sqlite:///{(copy / 'optuna.db').resolve()}"
    again = run_sweep(config, cache_dir=cache, resume=copy, trials=6, judge=ScriptedJudge())
    assert sorted(t.number for t in again.trials if t.state in FINISHED)[:5] == finished
    assert len([t for t in again.trials if t.state in FINISHED]) == 6
    assert_kept(copy, before)


def test_a_storage_without_the_folders_study_is_refused(tmp_path, finished_sweep):
    original, cache = finished_sweep
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    before = snapshot(copy)
    other = tmp_path / "other.db"
    config = load_experiment(SWEEP, ["sweep.trials=5", "judge.concurrency=1"])
    with pytest.raises(HarnessError, match="holds no study named"):
        run_sweep(
            config,
            cache_dir=cache,
            resume=copy,
            storage=f"sqlite:///{other}",
            judge=ScriptedJudge(),
        )
    # a study of that name whose trials are not the folder's: refused too
    name = read_sweep(copy).summary.study_name
    study = optuna.create_study(study_name=name, storage=f"sqlite:///{other}")
    study.optimize(lambda t: t.suggest_int("chunk_size", 1, 9), n_trials=2)
    with pytest.raises(HarnessError, match="is not in the study"):
        run_sweep(
            config,
            cache_dir=cache,
            resume=copy,
            storage=f"sqlite:///{other}",
            judge=ScriptedJudge(),
        )
    assert snapshot(copy) == before


@pytest.mark.parametrize(
    "storage",
    [
        "mysql://user@127.0.0.1/db",
        "redis://127.0.0.1:6379",
        "",
        "sqlite:///{tmp}/no/such/folder/o.db",
        "sqlite:///{tmp}",
        "sqlite:///:memory:",
        "sqlite://",
        "sqlite:///{tmp}/o.db?mode=ro",
        "sqlite:///{tmp}/o.db?immutable=1",
    ],
)
def test_an_unusable_storage_is_one_line_and_leaves_no_sweep_folder(tmp_path, capsys, storage):
    storage = storage.format(tmp=tmp_path)
    results = tmp_path / "r"
    code = main(
        [
            "sweep",
            str(SWEEP),
            "--storage",
            storage,
            "--results-dir",
            str(results),
            "--cache-dir",
            str(tmp_path / "c"),
            "--set",
            "judge.base_url=http://127.0.0.1:9/v1",
            "--set",
            "judge.model=fake",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert "--storage" in err
    assert not results.exists() or not any(results.iterdir())


# ---------------------------------------------------------------- local workers


def children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(x) for x in (task / "children").read_text().split()]
    return out


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start_workers_sweep(tmp_path: Path, endpoint: Endpoint) -> tuple[subprocess.Popen, list[int]]:
    """`harness sweep --workers 2` against the endpoint; the parent and its two workers,
    once both workers are judging."""
    args = [str(SWEEP), "--workers", "2", *endpoint.sets()]
    for item in ("sweep.trials=12", "sweep.sampler=grid", "sweep.pruner=none"):
        args += ["--set", item]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HARNESS_TEST_JUDGE_KEY": "workers-key-5531",
        "HARNESS_TEST_EMBED_KEY": "embed-key-not-secret",
    }
    log = open(tmp_path / "sweep.log", "w")  # noqa: SIM115 - closed with the process
    parent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "sweep",
            *args,
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 240
    while True:
        assert parent.poll() is None, (tmp_path / "sweep.log").read_text()
        workers = children(parent.pid)
        if len(workers) == 2 and sum(endpoint.by_key.values()) >= 4:
            return parent, workers
        assert time.monotonic() < deadline, "the workers never started judging"
        time.sleep(0.2)


@pytest.fixture
def slow_endpoint():
    ep = Endpoint(latency_s=0.2)
    with ep.server:
        yield ep


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["kill -9", "SIGTERM"])
def test_workers_die_with_their_parent(tmp_path, slow_endpoint, how):
    parent, workers = start_workers_sweep(tmp_path, slow_endpoint)
    try:
        os.kill(parent.pid, signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
        code = parent.wait(timeout=90)
        assert code == (-signal.SIGKILL if how == "kill -9" else 143)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(w) for w in workers), "a worker outlived its parent"
        # and nothing is asked of the endpoint any more (past the replies in flight)
        time.sleep(0.5)
        seen = collections.Counter(slow_endpoint.by_key)
        time.sleep(1.5)
        assert slow_endpoint.by_key == seen
    finally:
        for pid in [parent.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
