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


# --- every endpoint field of every component, and the corpus sources (issue #26) ---


def _tamper_every_endpoint(path: Path, url: str) -> None:
    """Point every component's endpoint at `url`, each with the stolen key variable."""
    data = json.loads(path.read_text())
    config = data["config"]
    config["judge"].update(base_url=f"{url}/v1", model="fake", api_key_env=STOLEN_VAR)
    config["generate"].update(base_url=f"{url}/gen", model="fake", api_key_env=STOLEN_VAR)
    config["retrieval"].update(llm_base_url=f"{url}/rerank", llm_api_key_env=STOLEN_VAR)
    config["embedder"].update(base_url=f"{url}/embed", api_key_env=STOLEN_VAR)
    path.write_text(json.dumps(data))


def test_the_endpoint_fields_cover_every_endpoint_of_the_schema():
    """A field that routes a request or names a key's variable, anywhere in the
    schema, is in the one list of endpoint fields (a new component cannot forget it)."""
    import dataclasses
    import typing

    from harness.components.endpoints import endpoint_fields, is_endpoint_setting
    from harness.config import ExperimentConfig

    listed = {(e.table, f) for e in endpoint_fields() for f in (e.url, e.key_env)}
    found = set()
    for table in dataclasses.fields(ExperimentConfig):
        cls = typing.get_type_hints(ExperimentConfig).get(table.name)
        if not dataclasses.is_dataclass(cls):
            continue
        for f in dataclasses.fields(cls):
            if is_endpoint_setting(f.name) or "url" in f.name:
                found.add((table.name, f.name))
    assert found and found <= listed, found - listed


def test_nothing_read_from_a_folder_keeps_an_endpoint_field(tmp_path):
    from harness.components.endpoints import strip_endpoints
    from harness.config import rebase_on_user

    config = load_experiment(DATA / "experiment.toml")
    recorded = config.to_dict()
    recorded["retrieval"]["settings"] = {"x": {"base_url": "http://evil", "api_key_env": "V"}}
    stripped = json.dumps(strip_endpoints(recorded))
    assert "evil" not in stripped and '"api_key_env"' not in stripped
    assert "llm_base_url" not in stripped and '"base_url"' not in stripped
    recorded = config.to_dict()
    for table, name in (("judge", "base_url"), ("generate", "base_url"), ("embedder", "base_url")):
        recorded[table][name] = "http://evil.example"
    recorded["retrieval"]["llm_base_url"] = "http://evil.example"
    recorded["generate"]["api_key_env"] = STOLEN_VAR
    rebased = rebase_on_user(
        recorded,
        None,
        ["judge.base_url=http://127.0.0.1:9/v1", "judge.model=m"],
        where="sweep.json",
        hint="FILE",
    )
    flat = json.dumps(rebased.to_dict())
    assert "evil" not in flat and STOLEN_VAR not in flat


@pytest.fixture
def sweep_with_every_endpoint_tampered(tmp_path):
    from tests.catcher import Catcher

    config = load_experiment(DATA / "sweep.toml", ["sweep.trials=1"])
    log = run_sweep(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    with Catcher() as catcher:
        _tamper_every_endpoint(log.sweep_dir / "sweep.json", catcher.url)
        yield log.sweep_dir, catcher


def test_sweep_resume_takes_no_endpoint_of_any_component_from_the_folder(
    sweep_with_every_endpoint_tampered, tmp_path, capsys
):
    """The resumed trials' headers carry the user's endpoints (generate's included),
    and the folder's server hears nothing."""
    sweep_dir, catcher = sweep_with_every_endpoint_tampered
    with FakeOpenAI(answer_any) as mine:
        args = [
            "--set",
            f"judge.base_url={mine.base_url}",
            "--set",
            f"judge.api_key_env={USER_VAR}",
        ]
        assert _resume(sweep_dir, tmp_path, *args) == 0
        assert _resume(sweep_dir, tmp_path, *args, "--dry-run") == 0
        join = ["sweep", "--join", sweep_dir.name, "--results-dir", str(sweep_dir.parent)]
        join += ["--trials", "3", "--cache-dir", str(tmp_path / "c"), "--format", "json"]
        assert main([*join, *args]) == 0
    assert catcher.requests == 0, catcher.paths
    assert set(mine.authorizations) == {f"Bearer {USER_KEY}"}
    headers = list(sweep_dir.glob("trials/*/header.json"))
    assert len(headers) >= 3  # the first trial's, the resumed one's, the joined one's
    for h in headers:
        text = h.read_text()
        assert STOLEN_VAR not in text and catcher.url not in text
        config = json.loads(text)["config"]
        assert config["generate"]["base_url"] == "" and config["retrieval"]["llm_base_url"] == ""
    summary = json.loads((sweep_dir / "sweep.json").read_text())
    assert catcher.url not in json.dumps(summary["config"])
    capsys.readouterr()


def test_export_config_then_every_command_on_its_output_sends_the_folder_nothing(
    sweep_with_every_endpoint_tampered, tmp_path, capsys
):
    sweep_dir, catcher = sweep_with_every_endpoint_tampered
    out = tmp_path / "exported.toml"
    assert main(["export-config", str(sweep_dir), "--out", str(out), "--format", "json"]) == 0
    text = out.read_text()
    assert catcher.url not in text and STOLEN_VAR not in text
    common = ["--cache-dir", str(tmp_path / "c"), "--format", "json"]
    assert main(["run", str(out), "--dry-run", *common]) == 0
    # the exported file runs one setting: a sweep needs a space to search
    assert main(["sweep", str(out), "--dry-run", *common]) == 2
    assert "sweep.space: searches nothing" in capsys.readouterr().err
    space = ["--set", "sweep.space.k=[2, 3]"]
    assert main(["sweep", str(out), "--dry-run", "--trials", "2", *space, *common]) == 0
    assert main(["generate", str(out), "--dry-run", "--n", "2", *common]) == 0
    with FakeOpenAI(answer_any) as mine:
        # generation for real, with the user's own endpoint: the key goes there only
        own = [
            "--set",
            f"generate.base_url={mine.base_url}",
            "--set",
            f"generate.api_key_env={USER_VAR}",
        ]
        code = main(
            ["generate", str(out), "--n", "1", "--out", str(tmp_path / "q.jsonl"), *own, *common]
        )
        assert code in (0, 1)  # the fake's answers need not make good questions
        assert mine.requests > 0
        # a run for real, judged by the user's own endpoint
        judge = [
            "--set",
            f"judge.base_url={mine.base_url}",
            "--set",
            f"judge.api_key_env={USER_VAR}",
        ]
        before = mine.requests
        assert main(["run", str(out), *judge, "--results-dir", str(tmp_path / "r2"), *common]) == 0
        assert mine.requests > before
    assert all(STOLEN not in a for a in mine.authorizations)
    assert catcher.requests == 0, catcher.paths
    capsys.readouterr()


def test_judge_check_on_a_run_with_every_endpoint_tampered_sends_the_folder_nothing(
    tmp_path, capsys
):
    from tests.catcher import Catcher

    config = load_experiment(DATA / "experiment.toml")
    run = run_experiment(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    with Catcher() as catcher, FakeOpenAI(answer_any) as mine:
        _tamper_every_endpoint(run.run_dir / "header.json", catcher.url)
        args = [
            "--set",
            f"judge.base_url={mine.base_url}",
            "--set",
            f"judge.api_key_env={USER_VAR}",
        ]
        assert _judge_check(run.run_dir, tmp_path, *args) == 0
        assert mine.requests > 0
    assert catcher.requests == 0, catcher.paths
    assert set(mine.authorizations) == {f"Bearer {USER_KEY}"}
    capsys.readouterr()


def _set_sources(sweep_dir: Path, sources: list[str]) -> None:
    path = sweep_dir / "sweep.json"
    data = json.loads(path.read_text())
    data["config"]["corpus"]["sources"] = sources
    path.write_text(json.dumps(data))


def test_sweep_resume_fetches_no_source_url_of_the_folder(tmp_path, capsys):
    """A folder's corpus.sources URLs are not fetched: without an experiment file the
    resume stops with one line saying to give one; with it, its sources are used."""
    from tests.catcher import Catcher

    config = load_experiment(DATA / "sweep.toml", ["sweep.trials=1"])
    log = run_sweep(
        config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=ScriptedJudge()
    )
    with Catcher() as catcher, FakeOpenAI(answer_any) as mine:
        _set_sources(log.sweep_dir, [f"{catcher.url}/page-{i}.html" for i in range(4)])
        own = ["--set", f"judge.base_url={mine.base_url}", "--set", f"judge.api_key_env={USER_VAR}"]
        for extra in ([], ["--dry-run"]):
            assert _resume(log.sweep_dir, tmp_path, *own, *extra) == 2
            line = _error_line(capsys.readouterr().err)
            assert "sweep.json: corpus.sources" in line and "harness sweep FILE --resume" in line
        # the user's experiment gives the sources (and, as the file a sweep started from,
        # its search: a resume with another space or objective is refused)
        experiment = _user_experiment(tmp_path, mine.base_url)
        experiment.write_text(
            experiment.read_text()
            + '[sweep]\nobjective = ["mrr@k"]\n[sweep.space]\nchunk_size = [120, 200, 300]\n'
            + "chunk_overlap = { low = 0, high = 60, step = 20 }\nk = [2, 3]\n"
        )
        assert _resume(log.sweep_dir, tmp_path, str(experiment)) == 0
    assert catcher.requests == 0, catcher.paths
    capsys.readouterr()
