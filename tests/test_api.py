"""The public API as a notebook uses it: paths where records are expected, overrides as a
mapping, one-line reprs, a question by id, and no warning harness triggers knowingly."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import harness
from harness.errors import ConfigError
from harness.noise import KNOWN_WARNINGS, ignore_known_warnings
from tests.conftest import DATA, ScriptedJudge

EXPERIMENT = DATA / "experiment.toml"


def test_overrides_as_a_mapping_a_nested_mapping_a_path_or_one_string():
    flat = harness.load_experiment(EXPERIMENT, {"retrieval.k": 2, "chunk_size": 120})
    assert (flat.retrieval.k, flat.chunking.chunk_size) == (2, 120)
    nested = harness.load_experiment(EXPERIMENT, {"chunking": {"chunk_size": 120}})
    assert nested.chunking.chunk_size == 120
    assert nested.chunking.chunk_overlap == 20  # a nested mapping sets its keys, not the table
    one = harness.load_experiment(EXPERIMENT, "retrieval.k=2")  # not eleven one-letter keys
    assert one.retrieval.k == 2
    listed = harness.load_experiment(EXPERIMENT, {"corpus.sources": [DATA / "corpus"]})
    assert list(listed.corpus.sources) == [str(DATA / "corpus")]


def test_nested_mappings_set_keys_and_a_dotted_keys_mapping_is_its_whole_value():
    sweep = DATA / "sweep.toml"  # chunk_overlap = { low = 0, high = 60, step = 20 }
    merged = harness.load_experiment(sweep, {"sweep": {"space": {"chunk_overlap": {"high": 40}}}})
    assert merged.sweep.space.chunk_overlap.step == 20 and merged.sweep.space.k == (2, 3)
    whole = {"sweep.space.chunk_overlap": {"low": 0, "high": 40}}
    as_set = ["sweep.space.chunk_overlap={low=0, high=40}"]  # what --set does with it
    assert (
        harness.load_experiment(sweep, whole).sweep.space
        == harness.load_experiment(sweep, as_set).sweep.space
    )
    assert harness.load_experiment(sweep, whole).sweep.space.chunk_overlap.step != 20


def test_a_bad_override_from_python_names_the_key_and_not_the_command_line_flag():
    with pytest.raises(ConfigError) as bad:
        harness.load_experiment(EXPERIMENT, {"kk": 2})
    assert str(bad.value).startswith("overrides: kk: unknown key")
    with pytest.raises(ConfigError, match=r"retrieval\.kk: unknown key"):
        harness.load_experiment(EXPERIMENT, {"retrieval.kk": 2})
    with pytest.raises(ConfigError, match=r"retrieval\.k: expected k >= 1"):
        harness.load_experiment(EXPERIMENT, {"retrieval.k": 0})
    with pytest.raises(ConfigError, match="--set: 3: expected key=value"):
        harness.load_experiment(EXPERIMENT, ["retrieval.k=2", 3])  # type: ignore[list-item]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[harness.RunLog, harness.RunLog, Path]:  # type: ignore[name-defined]
    tmp = tmp_path_factory.mktemp("api")
    kwargs = {"results_dir": tmp / "results", "cache_dir": tmp / "cache"}
    by_path = harness.run_experiment(EXPERIMENT, judge=ScriptedJudge(), **kwargs)
    config = harness.load_experiment(EXPERIMENT, {"retrieval.reranker": "bm25"})
    by_config = harness.run_experiment(config, judge=ScriptedJudge(), **kwargs)
    return by_path, by_config, tmp


def test_an_experiment_file_runs_and_estimates_by_its_path(two_runs):
    by_path, _, tmp = two_runs
    assert by_path.header.status == "done" and len(by_path.questions) == 6
    assert by_path.header.config["path"] == str(EXPERIMENT.resolve())
    est = harness.estimate_run(str(EXPERIMENT), cache_dir=tmp / "cache")
    assert est["questions"] == 6
    with pytest.raises(TypeError, match=r"expected an ExperimentConfig .* got dict"):
        harness.run_experiment({"name": "x"})  # type: ignore[arg-type]


def test_runs_compare_and_validate_by_their_folders(two_runs):
    by_path, by_config, _ = two_runs
    from_folders = harness.compare_runs([by_path.run_dir, str(by_config.run_dir)])
    from_records = harness.compare_runs([by_path, by_config])
    assert from_folders == from_records
    with pytest.raises(TypeError, match="one path"):
        harness.compare_runs(str(by_path.run_dir))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a RunLog"):
        harness.compare_runs([by_path, 3])  # type: ignore[list-item]
    labels = DATA / "qrels.tsv"
    by_file = harness.validate_run(by_path.run_dir, labels)
    assert by_file == harness.validate_run(by_path, harness.read_qrels(labels))


def test_a_run_reads_as_one_line_and_finds_a_question_by_id(two_runs):
    run = two_runs[0]
    line = repr(run)
    assert "\n" not in line and len(line) < 300
    assert line.startswith(f"RunLog({str(run.run_dir)!r}: done, 6 questions, k 3, soft_mrr@3 ")
    assert "mrr@3" in line and "hit_rate@3" in line
    assert run.question("hive").question.text == "When is the hive inspection?"
    with pytest.raises(KeyError, match="no question with id 'nope'"):
        run.question("nope")


def test_a_sweep_reads_as_one_line(tmp_path):
    log = harness.run_sweep(
        DATA / "sweep.toml",
        results_dir=tmp_path / "r",
        cache_dir=tmp_path / "c",
        judge=ScriptedJudge(),
        trials=3,
    )
    line = repr(log)
    best = log.summary.best[0]
    assert "\n" not in line and line.startswith(f"SweepLog({str(log.sweep_dir)!r}: done, ")
    assert f"best trial {best.number} mrr@k {best.values[0]:.3f}" in line
    assert repr(harness.read_sweep(log.sweep_dir)) == line


def test_the_filters_go_in_once_and_never_ahead_of_the_users_own():
    with warnings.catch_warnings():
        warnings.resetwarnings()
        ignore_known_warnings()
        warnings.filterwarnings("error", message="mine")
        before = list(warnings.filters)
        harness.read_run  # noqa: B018
        ignore_known_warnings()
        assert warnings.filters == before  # unchanged: no "shown once" memory reset
        # LangChain's deprecation of a user's own import names langchain_community too
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", UserWarning)
            warnings.warn(
                "Importing FAISS from langchain.vectorstores is deprecated; use from "
                "langchain_community.vectorstores import FAISS",
                DeprecationWarning,
                stacklevel=1,
            )
        assert len(seen) == 1


def test_the_api_silences_only_the_warnings_harness_triggers_knowingly():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ignore_known_warnings()
        ignore_known_warnings()  # a second call adds no filter
        assert len(warnings.filters) == len({f for f in warnings.filters})
        warnings.warn("BruteForceSampler is experimental (v3.1.0).", UserWarning, stacklevel=1)
        warnings.warn("Argument ``group`` is an experimental feature.", UserWarning, stacklevel=1)
        warnings.warn("something of the user's own", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["something of the user's own"]
    with warnings.catch_warnings():
        warnings.resetwarnings()
        harness.read_run  # noqa: B018 (the first use of the API installs the filters)
        messages = {f[1].pattern for f in warnings.filters if f[1] is not None}
        assert {m for m, _ in KNOWN_WARNINGS} <= messages
