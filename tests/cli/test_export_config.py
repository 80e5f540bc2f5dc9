"""`harness export-config`: a sweep's chosen trial as a runnable experiment file that
reproduces the trial from the cache, and the matching LangChain code."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import load_experiment
from harness.errors import HarnessError
from harness.log import read_run
from harness.pipeline import run_experiment
from harness.sweep import export_config, langchain_code, run_sweep
from harness.sweep.export import exported_data
from tests.conftest import DATA, ScriptedJudge

SWEEP = DATA / "sweep.toml"
RERANKERS = ("none", "bm25", "hybrid", "mmr", "cross-encoder", "llm")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    # A complete (not lazy) sweep, so the exported file, run as `harness run` runs (complete),
    # needs no verdict the sweep did not pay for.
    config = load_experiment(SWEEP)
    config = dataclasses.replace(config, judge=dataclasses.replace(config.judge, lazy=False))
    cache = tmp / "cache"
    log = run_sweep(config, results_dir=tmp / "r", cache_dir=cache, judge=ScriptedJudge())
    return log, cache


def test_exported_config_runs_and_reproduces_the_trial_from_the_cache(sweep, tmp_path):
    log, cache = sweep
    rec = log.summary.recommendation
    assert rec is not None
    out = tmp_path / "elsewhere" / "best.toml"
    out.parent.mkdir()
    exported = export_config(log, out)
    assert exported.trial == rec.trial and exported.why == rec.reason

    text = out.read_text()
    data = tomllib.loads(text)
    assert "sweep" not in data and "path" not in data
    assert "base_url" not in data["judge"] and "api_key_env" not in data["judge"]
    assert "base_url" not in data["embedder"] and "llm_base_url" not in data["retrieval"]
    assert "set\n# judge.base_url and judge.api_key_env" in text
    assert all(Path(s).is_absolute() for s in data["corpus"]["sources"])
    assert Path(data["questions"]["file"]).is_absolute()
    trial = next(t for t in log.trials if t.number == rec.trial)
    assert data["chunking"]["chunk_size"] == trial.params["chunk_size"]
    assert data["retrieval"]["k"] == trial.params["k"]

    config = load_experiment(out)
    judge = ScriptedJudge()
    run = run_experiment(config, results_dir=tmp_path / "runs", cache_dir=cache, judge=judge)
    assert judge.calls == []  # every verdict comes from the cache the sweep filled
    assert run.header.metrics == read_run(Path(trial.run_dir)).header.metrics


def test_export_of_a_named_trial_and_refusals(sweep, tmp_path, capsys):
    log, _ = sweep
    first = log.trials[0]
    out = tmp_path / "t0.toml"
    assert main(["export-config", str(log.sweep_dir), "--trial", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}: trial 0" in printed
    assert "RecursiveCharacterTextSplitter(" in printed and "FAISS.from_documents(" in printed
    assert tomllib.loads(out.read_text())["chunking"]["chunk_size"] == first.params["chunk_size"]

    before = out.read_text()
    assert main(["export-config", str(log.sweep_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"harness: error: {out}: already exists; export-config never overwrites a file"
    assert out.read_text() == before

    other = tmp_path / "x.toml"
    assert main(["export-config", str(log.sweep_dir), "--trial", "99", "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert "--trial 99: no such trial" in err and len(err.strip().splitlines()) == 1
    assert not other.exists()


def test_export_config_json(sweep, tmp_path, capsys):
    log, _ = sweep
    out = tmp_path / "best.toml"
    assert main(["export-config", str(log.sweep_dir), "--out", str(out), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["out"] == str(out) and data["trial"] == log.summary.recommendation.trial
    assert "build_retriever" in data["langchain"]


def test_recorded_endpoints_are_never_exported(sweep):
    log, _ = sweep
    recorded = json.loads(json.dumps(log.summary.config))
    recorded["judge"]["base_url"] = "http://judge.example/v1"
    recorded["judge"]["api_key_env"] = "SOMEONE_ELSES_KEY"
    recorded["embedder"]["base_url"] = "http://embed.example/v1"
    data = exported_data(recorded, dict(log.trials[0].params))
    flat = json.dumps(data)
    assert "example" not in flat and "SOMEONE_ELSES_KEY" not in flat


@pytest.mark.parametrize("reranker", RERANKERS)
def test_langchain_code_compiles_for_every_reranker(reranker):
    config = load_experiment(SWEEP)
    config = dataclasses.replace(
        config,
        retrieval=dataclasses.replace(
            config.retrieval, reranker=reranker, fetch_k=12, cross_encoder="my/cross-encoder"
        ),
    )
    code = langchain_code(config)
    compile(code, "<export>", "exec")
    assert "RecursiveCharacterTextSplitter(" in code and "chunk_size=200, chunk_overlap=20" in code
    assert "FAISS.from_documents(" in code and "HuggingFaceEmbeddings(" in code
    expected = {
        "none": '"k": 3',
        "bm25": "BM25Retriever.from_documents(",
        "hybrid": "EnsembleRetriever(",
        "mmr": 'search_type="mmr"',
        "cross-encoder": "CrossEncoderReranker(model=cross_encoder, top_n=3)",
        "llm": "candidates[:3]",
    }[reranker]
    assert expected in code
    if reranker in ("bm25", "hybrid", "mmr", "cross-encoder", "llm"):
        assert "12" in code  # fetch_k


@pytest.mark.parametrize(
    ("name", "model", "expected"),
    [
        ("openai", "", "OpenAIEmbeddings(model='text-embedding-3-small')"),
        ("openai", "text-embedding-3-large", "OpenAIEmbeddings(model='text-embedding-3-large')"),
        ("sentence-transformers", "/models/bge", "model_name='/models/bge'"),
    ],
)
def test_langchain_code_for_other_embedders(name, model, expected):
    config = load_experiment(SWEEP)
    config = dataclasses.replace(
        config, embedder=dataclasses.replace(config.embedder, name=name, model=model)
    )
    code = langchain_code(config)
    compile(code, "<export>", "exec")
    assert expected in code


def test_export_needs_a_trial_for_a_pareto_front(tmp_path):
    config = load_experiment(
        SWEEP, ['sweep.objective=["mrr@k", "context_chars@k"]', "sweep.trials=2"]
    )
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    with pytest.raises(HarnessError, match=r"Pareto front .* give --trial N"):
        export_config(log, tmp_path / "x.toml")
    assert not (tmp_path / "x.toml").exists()
