"""A results folder never chooses where a credential goes.

An "attacker" edits a shared run's header.json or a sweep's sweep.json: the judge's
endpoint becomes their server (a FakeOpenAI on 127.0.0.1 here) and its key variable one
that holds another secret. `judge-check` and `sweep --resume` must send that server
nothing, and send the secret nowhere: the endpoint and the key's variable come from the
user's experiment, --set or environment, and with none given the command stops.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import load_experiment
from harness.errors import HarnessError
from harness.pipeline import run_experiment
from harness.sweep import run_sweep
from harness.testing import FakeOpenAI, answer_any
from tests.conftest import DATA, ScriptedJudge

STOLEN_VAR = "HARNESS_TEST_STOLEN_CREDENTIAL"
STOLEN = "AKIAstolen-cloud-secret-0123456789"
USER_VAR = "HARNESS_TEST_USER_JUDGE_CREDENTIAL"
USER_KEY = "user-own-judge-credential-42"


@pytest.fixture(autouse=True)
def _environment(monkeypatch):
    monkeypatch.setenv(STOLEN_VAR, STOLEN)
    monkeypatch.setenv(USER_VAR, USER_KEY)
    for name in ("HARNESS_JUDGE_BASE_URL", "HARNESS_JUDGE_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _tamper(path: Path, attacker: FakeOpenAI) -> None:
    """Point the recorded judge at the attacker, with the stolen variable as its key."""
    data = json.loads(path.read_text())
    data["config"]["judge"].update(base_url=attacker.base_url, model="fake", api_key_env=STOLEN_VAR)
    path.write_text(json.dumps(data))


def _nothing_sent_to(attacker: FakeOpenAI, *others: FakeOpenAI) -> None:
    assert attacker.requests == 0 and attacker.authorizations == []
    for server in others:
        assert all(STOLEN not in a for a in server.authorizations), server.authorizations


def _error_line(err: str) -> str:
    (line,) = [x for x in err.splitlines() if x.startswith("harness: error:")]
    return line


@pytest.fixture
def tampered_run(tmp_path):
    config = load_experiment(DATA / "experiment.toml")
    run = run_experiment(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    with FakeOpenAI(answer_any) as attacker:
        _tamper(run.run_dir / "header.json", attacker)
        yield run.run_dir, attacker


def _judge_check(run_dir: Path, tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "judge-check",
            str(run_dir),
            "--sample",
            "4",
            "--cache-dir",
            str(tmp_path / "c"),
            "--format",
            "json",
            *extra,
        ]
    )


def test_judge_check_refuses_a_folder_endpoint_when_the_user_gives_none(
    tampered_run, tmp_path, capsys
):
    run_dir, attacker = tampered_run
    assert _judge_check(run_dir, tmp_path) == 2
    line = _error_line(capsys.readouterr().err)
    assert str(run_dir / "header.json") in line and "judge.base_url" in line
    assert attacker.base_url in line  # the recorded endpoint is shown, not used
    assert "--set judge.base_url=URL --set judge.api_key_env=VAR" in line
    assert "--experiment FILE" in line
    _nothing_sent_to(attacker)


def _user_experiment(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(
        f'[corpus]\nsources = ["{DATA / "corpus"}"]\n'
        f'[questions]\nfile = "{DATA / "questions.jsonl"}"\n'
        f'[judge]\nbase_url = "{base_url}"\nmodel = "fake"\napi_key_env = "{USER_VAR}"\n'
    )
    return path


@pytest.mark.parametrize("source", ["set", "experiment", "environment"])
def test_judge_check_judges_with_the_users_endpoint_and_key(
    tampered_run, tmp_path, capsys, monkeypatch, source
):
    run_dir, attacker = tampered_run
    with FakeOpenAI(answer_any) as mine:
        if source == "set":
            extra = ["--set", f"judge.base_url={mine.base_url}"]
            extra += ["--set", f"judge.api_key_env={USER_VAR}"]
        elif source == "experiment":
            extra = ["--experiment", str(_user_experiment(tmp_path, mine.base_url))]
        else:
            monkeypatch.setenv("HARNESS_JUDGE_BASE_URL", mine.base_url)
            extra = []
        assert _judge_check(run_dir, tmp_path, *extra) == 0
        assert mine.requests > 0
    _nothing_sent_to(attacker, mine)
    if source != "environment":  # there the key variable is the default, unset
        assert set(mine.authorizations) == {f"Bearer {USER_KEY}"}
    err = capsys.readouterr().err
    warning = next(x for x in err.splitlines() if "now using" in x)
    assert attacker.base_url in warning and mine.base_url in warning


def test_judge_check_with_the_recorded_endpoint_given_again_is_quiet(
    tampered_run, tmp_path, capsys
):
    """The folder's endpoint is used when the user names the same one, but even then
    with the user's key variable, never the folder's."""
    run_dir, attacker = tampered_run
    args = ["--set", f"judge.base_url={attacker.base_url}/"]
    assert _judge_check(run_dir, tmp_path, *args) == 0
    assert attacker.requests > 0
    assert all(STOLEN not in a for a in attacker.authorizations)
    assert "now using" not in capsys.readouterr().err


@pytest.fixture
def tampered_sweep(tmp_path):
    config = load_experiment(DATA / "sweep.toml", ["sweep.trials=1"])
    log = run_sweep(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    with FakeOpenAI(answer_any) as attacker:
        _tamper(log.sweep_dir / "sweep.json", attacker)
        yield log.sweep_dir, attacker


def _resume(sweep_dir: Path, tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "sweep",
            *extra,
            "--resume",
            str(sweep_dir),
            "--trials",
            "2",
            "--cache-dir",
            str(tmp_path / "c"),
            "--format",
            "json",
        ]
    )


def test_sweep_resume_refuses_a_folder_endpoint_when_the_user_gives_none(
    tampered_sweep, tmp_path, capsys
):
    sweep_dir, attacker = tampered_sweep
    assert _resume(sweep_dir, tmp_path) == 2
    line = _error_line(capsys.readouterr().err)
    assert str(sweep_dir / "sweep.json") in line and attacker.base_url in line
    assert "--set judge.base_url=URL" in line and "harness sweep FILE --resume" in line
    # An experiment file without an endpoint gives none either.
    assert _resume(sweep_dir, tmp_path, str(DATA / "sweep.toml")) == 2
    assert "judge.base_url" in _error_line(capsys.readouterr().err)
    _nothing_sent_to(attacker)


def test_sweep_resume_judges_with_the_users_endpoint_and_key(tampered_sweep, tmp_path, capsys):
    sweep_dir, attacker = tampered_sweep
    with FakeOpenAI(answer_any) as mine:
        args = [
            "--set",
            f"judge.base_url={mine.base_url}",
            "--set",
            f"judge.api_key_env={USER_VAR}",
        ]
        assert _resume(sweep_dir, tmp_path, *args) == 0
        assert mine.requests > 0
    _nothing_sent_to(attacker, mine)
    assert set(mine.authorizations) == {f"Bearer {USER_KEY}"}
    captured = capsys.readouterr()
    assert sum(json.loads(captured.out)["counts"].values()) == 2
    warning = next(x for x in captured.err.splitlines() if "now using" in x)
    assert attacker.base_url in warning and mine.base_url in warning


def _set_storage(sweep_dir: Path, storage: str) -> None:
    path = sweep_dir / "sweep.json"
    data = json.loads(path.read_text())
    data["storage"] = storage
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "storage",
    [
        "postgresql://harness@db.example.com:5432/optuna",  # would receive $PGPASSWORD
        "sqlite:///{tmp}/elsewhere/optuna.db",  # a file outside the sweep folder
        "sqlite:///{sweep}/../optuna.db",
        "sqlite:///{sweep}/optuna.db?timeout=1",
    ],
)
def test_sweep_resume_uses_only_the_folders_own_storage(tmp_path, storage, capsys):
    config = load_experiment(DATA / "sweep.toml", ["sweep.trials=1"])
    log = run_sweep(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    sweep_dir = log.sweep_dir
    own = json.loads((sweep_dir / "sweep.json").read_text())["storage"]
    assert own == f"sqlite:///{(sweep_dir / 'optuna.db').resolve()}"
    _set_storage(sweep_dir, storage.format(tmp=tmp_path, sweep=sweep_dir.resolve()))
    with pytest.raises(HarnessError, match="pass --storage URL again"):
        run_sweep(config, cache_dir=tmp_path / "c", resume=sweep_dir, judge=ScriptedJudge())
    assert not (tmp_path / "elsewhere").exists()
    assert _resume(sweep_dir, tmp_path) == 2
    assert "--storage" in _error_line(capsys.readouterr().err)
    # Given again by the user, any storage is theirs to choose.
    resumed = run_sweep(
        config,
        cache_dir=tmp_path / "c",
        resume=sweep_dir,
        storage=own,
        trials=2,
        judge=ScriptedJudge(),
    )
    assert len([t for t in resumed.trials if t.state in ("complete", "pruned")]) == 2
    # The folder's own storage, written as the sweep wrote it, needs nothing more.
    _set_storage(sweep_dir, own)
    again = run_sweep(
        config, cache_dir=tmp_path / "c", resume=sweep_dir, trials=3, judge=ScriptedJudge()
    )
    assert len(again.trials) >= 3
