"""Calibration files are checked before any work (#26 item 8): each bad file is one line
naming the file and the field, before a run folder exists."""

from __future__ import annotations

import json

import pytest

from harness.config import load_experiment
from harness.errors import ConfigError
from harness.judge.calibration import read_calibration
from harness.pipeline import run_experiment
from tests.cli.test_cli import assert_user_error, harness
from tests.conftest import DATA

GOOD = {"a": 2.0, "b": -1.0, "n": 10, "positives": 3}


def _file(criteria=None, **top) -> bytes:
    d = {"calibration_version": 2, "criteria": {"complete": GOOD} if criteria is None else criteria}
    d.update(top)
    return json.dumps(d).encode()


BAD = {
    "huge a": (_file({"complete": {**GOOD, "a": 1e308}}), "criteria.complete.a"),
    "infinite b": (
        _file({"complete": GOOD}).replace(b'"b": -1.0', b'"b": -Infinity'),
        "criteria.complete.b",
    ),
    "integer past a float": (
        _file({"complete": GOOD}).replace(b'"a": 2.0', b'"a": 1' + b"0" * 400),
        "criteria.complete.a",
    ),
    "string for a number": (_file({"complete": {**GOOD, "a": "2.0"}}), "criteria.complete.a"),
    "bool for a count": (_file({"complete": {**GOOD, "n": True}}), "criteria.complete.n"),
    "list for a grade": (_file(complete_grade=[2]), "complete_grade"),
    "string for a grade": (_file(relevant_grade="1"), "relevant_grade"),
    "no known criterion": (_file({}), "criteria"),
    "unknown criterion": (_file({"exactness": GOOD}), "criteria.exactness"),
    "list for a map": (_file({"complete": [2.0, -1.0]}), "criteria.complete"),
    "more positives than pairs": (
        _file({"complete": {**GOOD, "positives": 11}}),
        "criteria.complete.positives",
    ),
    "rate above 1": (
        _file(rates={"complete": {"tpr": 1.5, "fpr": 0.1, "positives": 9, "negatives": 9}}),
        "rates.complete.tpr",
    ),
    "empty": (b"", "judge.calibration"),
    "blank": (b"  \n", "judge.calibration"),
    "BOM-prefixed": (b"\xef\xbb\xbf" + _file(), "judge.calibration"),
    "not JSON": (b"{criteria: 1", ""),
    "a list": (b"[1, 2]", ""),
    "newer version": (_file(calibration_version=99), "calibration_version"),
    "unknown applies": (_file(applies="both"), "applies"),
    "list for applies": (_file(applies=["rates"]), "applies"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_each_bad_calibration_file_is_one_line_naming_file_and_field(tmp_path, name):
    content, field = BAD[name]
    path = tmp_path / "cal.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        read_calibration(path)
    assert err.value.where == str(path) and err.value.field == field, str(err.value)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_a_missing_calibration_file_names_it(tmp_path):
    with pytest.raises(ConfigError, match="not found") as err:
        read_calibration(tmp_path / "nope.json")
    assert err.value.field == "judge.calibration"


def test_a_good_file_reads(tmp_path):
    path = tmp_path / "cal.json"
    path.write_bytes(_file())
    cal = read_calibration(path)
    assert cal.criteria["complete"].a == 2.0 and cal.sha256
    # a version 1 file (no rates, no basis) still reads
    v1 = {"calibration_version": 1, "method": "platt", "criteria": {"relevant": GOOD}}
    path.write_text(json.dumps(v1))
    old = read_calibration(path)
    assert old.rates == {} and old.basis == "labels"
    assert old.applies == "verdicts"  # what files before `applies` meant
    path.write_bytes(_file(calibration_version=3, applies="rates"))
    assert read_calibration(path).applies == "rates"


@pytest.mark.parametrize("name", ["huge a", "empty", "BOM-prefixed", "no known criterion"])
def test_a_bad_calibration_stops_a_run_before_its_folder(tmp_path, scripted_judge, name):
    path = tmp_path / "cal.json"
    path.write_bytes(BAD[name][0])
    config = load_experiment(DATA / "experiment.toml", [f"judge.calibration={path}"])
    results = tmp_path / "results"
    with pytest.raises(ConfigError):
        run_experiment(config, results_dir=results, cache_dir=tmp_path / "c", judge=scripted_judge)
    assert not results.exists() or not any(results.iterdir())


def test_harness_run_with_a_bad_calibration_prints_one_line(tmp_path):
    path = tmp_path / "cal.json"
    path.write_bytes(BAD["string for a number"][0])
    results = tmp_path / "results"
    proc = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--set",
        f"judge.calibration={path}",
        "--set",
        "judge.base_url=http://127.0.0.1:9/v1",
        "--set",
        "judge.model=fake",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert_user_error(proc, str(path), "criteria.complete.a", "expected a number")
    assert not results.exists() or not any(results.iterdir())
