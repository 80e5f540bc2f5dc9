"""Settings that used to pass validation and fail later (or never): non-finite numbers,
an objective at a k the sweep never reaches, a URL timeout, a non-UTF-8 experiment file."""

from __future__ import annotations

import dataclasses
import math
import typing

import pytest

from harness.config import ExperimentConfig, load_experiment, parse_experiment
from harness.errors import ConfigError

BASE = {"corpus": {"sources": ["docs"]}, "questions": {"file": "q.jsonl"}}


def _float_fields(cls: type = ExperimentConfig, prefix: str = "") -> list[str]:
    """Dotted names of every float (or tuple-of-float) setting of the schema."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = args[0] if args and typing.get_origin(tp) is not tuple else tp
        dotted = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(inner):
            out += _float_fields(inner, dotted)
        elif tp is float or (typing.get_origin(tp) is tuple and typing.get_args(tp)[0] is float):
            out.append(dotted)
    return out


FLOATS = _float_fields()


def test_the_schema_has_the_float_settings_we_expect():
    for name in ("corpus.timeout_s", "judge.timeout_s", "retrieval.mmr_lambda", "sweep.batches"):
        assert name in FLOATS


@pytest.mark.parametrize("field", FLOATS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_no_float_setting_takes_nan_or_infinity(field, value):
    tuple_field = field in ("retrieval.hybrid_weights", "sweep.batches")
    raw = f"[{value}, 1.0]" if tuple_field else value
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", [f"{field}={raw}"])
    assert err.value.where.endswith("exp.toml") and err.value.field == field
    if not (tuple_field and field == "sweep.batches"):  # batches has its own range message
        assert "expected a finite number" in str(err.value)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_judge_timeout_must_be_a_finite_positive_number(value):
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", [f"judge.timeout_s={value}"])
    assert err.value.field == "judge.timeout_s"


def test_corpus_timeout_defaults_to_30_s_and_must_be_positive():
    assert parse_experiment(BASE).corpus.timeout_s == 30.0
    assert parse_experiment(BASE, overrides=["corpus.timeout_s=2.5"]).corpus.timeout_s == 2.5
    for value in ("0", "-3", "nan", "inf"):
        with pytest.raises(ConfigError) as err:
            parse_experiment(BASE, "exp.toml", [f"corpus.timeout_s={value}"])
        assert err.value.field == "corpus.timeout_s"


def test_finite_values_still_pass():
    c = parse_experiment(
        BASE, overrides=["retrieval.hybrid_weights=[0.3, 0.7]", "judge.temperature=0.2"]
    )
    assert all(math.isfinite(w) for w in c.retrieval.hybrid_weights)


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        (['sweep.objective=["mrr@9"]', "retrieval.k=4"], ["'mrr@9'", "only 4", "retrieval.k"]),
        (
            ['sweep.objective=["mrr@5", "context_chars@k"]', "sweep.space.k=[3, 8]"],
            ["'mrr@5'", "only 3", "sweep.space.k"],
        ),
    ],
)
def test_an_objective_above_the_smallest_k_is_refused_up_front(overrides, names):
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", overrides)
    assert err.value.where.endswith("exp.toml") and err.value.field == "sweep.objective"
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize(
    "overrides",
    [
        ['sweep.objective=["mrr@4"]', "retrieval.k=4"],
        ['sweep.objective=["mrr@k"]', "retrieval.k=1"],
        ['sweep.objective=["mrr@9"]', "retrieval.k=4", "sweep.space.k=[9, 12]"],
    ],
)
def test_an_objective_every_trial_can_reach_is_accepted(overrides):
    parse_experiment(BASE, "exp.toml", overrides)


def test_a_non_utf8_experiment_file_names_the_file(tmp_path):
    path = tmp_path / "e.toml"
    path.write_bytes(b'name = "caf\xe9"\n[corpus]\nsources = ["d"]\n')
    with pytest.raises(ConfigError, match="expected a UTF-8 text file") as err:
        load_experiment(path)
    assert err.value.where == str(path)


@pytest.mark.parametrize("field", ["judge.base_url", "generate.base_url", "retrieval.llm_base_url"])
@pytest.mark.parametrize(
    "url", ["localhost:8000/v1", "127.0.0.1:8000", "ftp://host/v1", "http://", "http://h:port/v1"]
)
def test_a_base_url_that_is_no_http_url_is_refused_up_front(field, url):
    # it used to pass, then fail the first request with a traceback
    with pytest.raises(ConfigError) as err:
        models = ["judge.model=m", "generate.model=m", "retrieval.llm_model=m"]
        parse_experiment(BASE, "exp.toml", [f"{field}={url}", *models])
    assert err.value.field == field and "expected an http:// or https:// URL" in str(err.value)


def test_a_refused_base_url_is_shown_with_its_credentials_masked():
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", ["judge.base_url=api.example.com/v1?code=sekret1234"])
    assert "sekret1234" not in str(err.value) and "code=***" in str(err.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.example.com/v1"])
def test_http_base_urls_pass(url):
    parse_experiment(BASE, "exp.toml", [f"judge.base_url={url}", "judge.model=m"])


def test_a_judge_base_url_from_the_environment_is_checked_too(tmp_path, monkeypatch, capsys):
    from harness.cli import main
    from tests.conftest import DATA

    monkeypatch.setenv("HARNESS_JUDGE_BASE_URL", "localhost:9/v1")
    monkeypatch.setenv("HARNESS_JUDGE_MODEL", "m")
    code = main(["run", str(DATA / "experiment.toml"), "--dry-run"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "HARNESS_JUDGE_BASE_URL: expected an http:// or https://" in err[0]


@pytest.mark.parametrize("value", ["1e308", "101", "0.5"])
def test_generate_oversample_out_of_range_is_one_config_error(value):
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", [f"generate.oversample={value}"])
    assert err.value.field == "generate.oversample" and "\n" not in str(err.value)


def test_generate_oversample_1e308_is_one_line_from_the_command(tmp_path, capsys):
    from harness.cli import main
    from tests.conftest import DATA

    code = main(
        [
            "generate",
            str(DATA / "experiment.toml"),
            "--dry-run",
            "--set",
            "generate.oversample=1e308",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "generate.oversample: expected a factor from 1 to 100" in err[0]


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("judge.backend=nope", "judge.backend"),
        ('judge.model="a\\nb"', "judge.model"),
        ('generate.model="a\\rb"', "generate.model"),
        ("retrieval.mmr_lambda=2", "retrieval.mmr_lambda"),
        ("retrieval.hybrid_weights=[0, 0]", "retrieval.hybrid_weights"),
        ("judge.settings.chat.x=1", "judge.settings.chat"),
    ],
)
def test_components_check_their_own_settings(override, field):
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", [override])
    assert err.value.field == field and err.value.where.endswith("exp.toml")


@pytest.mark.parametrize("value", ["0", "-2"])
def test_local_slots_must_be_at_least_one(value):
    with pytest.raises(ConfigError) as err:
        parse_experiment(BASE, "exp.toml", [f"judge.local_slots={value}"])
    assert err.value.field == "judge.local_slots" and "expected an integer >= 1" in str(err.value)


def test_the_local_judge_works_its_slots_and_an_endpoint_its_concurrency(tmp_path, monkeypatch):
    """The local server's work is reading prompts, which one slot does at full speed: its
    requests in flight are its slots (`judge.local_slots`), not `judge.concurrency`."""
    from harness.judge.backends.chat import judge_settings

    monkeypatch.delenv("HARNESS_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("HARNESS_JUDGE_MODEL", raising=False)
    sets = ["judge.local_model=smollm2-135m", "judge.concurrency=7", "judge.local_slots=2"]
    local = parse_experiment(BASE, "exp.toml", sets).judge
    settings, model_file = judge_settings(local, tmp_path)
    assert model_file is not None and settings["concurrency"] == 2
    hosted = parse_experiment(
        BASE, "exp.toml", [*sets, "judge.base_url=http://127.0.0.1:9/v1", "judge.model=m"]
    ).judge
    settings, model_file = judge_settings(hosted, tmp_path)
    assert model_file is None and settings["concurrency"] == 7
