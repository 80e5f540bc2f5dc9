"""A new reranker (with a setting of its own) and a new judge backend are each one
module plus one registry line, and run through `harness run`, `harness sweep`, the
dry run and `export-config` with nothing else changed (issue #21)."""

from __future__ import annotations

import json
import sys
import textwrap
import tomllib
import uuid
from pathlib import Path

import pytest

from harness.cli import main
from harness.components import registry
from harness.log import read_run
from tests.conftest import DATA

RERANKER = '''
"""`rotate`: the dense candidates with the first `keep` moved to the end (a test
reranker with one setting of its own)."""

from dataclasses import dataclass

from harness.components.contract import RerankCost, RetrieverExport, settings_of
from harness.errors import ConfigError
from harness.types import ComponentSpec


@dataclass(frozen=True)
class Settings:
    keep: int = 1


class Rotate:
    pool = "dense"

    def __init__(self, depth, keep):
        self.spec = ComponentSpec("rotate", {"fetch_k": depth, "keep": keep})
        self.keep = keep

    def rerank(self, question, candidates, k):
        moved = list(candidates[self.keep :]) + list(candidates[: self.keep])
        return [(c, float(-i)) for i, c in enumerate(moved[:k])]


def _keep(config):
    return settings_of(config, "rotate", Settings).keep


def validate(config, where):
    if _keep(config) < 0:
        raise ConfigError(where, "retrieval.settings.rotate.keep", "expected >= 0")


def build(ctx):
    return Rotate(ctx.depth, _keep(ctx.config))


def estimate(config):
    return RerankCost()


def export(config):
    keep = _keep(config)
    return RetrieverExport(
        body=(
            f'    dense = store.as_retriever(search_kwargs={{"k": {config.fetch_k!r}}})',
            "",
            "    def retrieve(question):",
            "        docs = dense.invoke(question)",
            f"        return (docs[{keep!r}:] + docs[:{keep!r}])[:{config.k!r}]  # rotate",
        )
    )
'''

JUDGE = '''
"""`overlap`: relevant when the chunk shares a word with the question (a test judge
backend: BaseJudge with `identity` and `grade`)."""

import contextlib

from harness.judge.protocol import BaseJudge
from harness.types import ComponentSpec, CriterionVerdict


class OverlapJudge(BaseJudge):
    def __init__(self):
        self.spec = ComponentSpec("overlap", {"mode": "pointwise"})

    def identity(self):
        return "overlap-judge-v1"

    def grade(self, question, chunk_text, criterion, criterion_text):
        shared = set(question.lower().split()) & set(chunk_text.lower().split())
        value = len(shared) >= (1 if criterion == "relevant" else 3)
        return CriterionVerdict(criterion, value, p_yes=0.9 if value else 0.1, calls=1)


def validate(config, where):
    pass


def check(config, where):
    pass


def identity(config, cache_dir):
    return OverlapJudge().identity()


@contextlib.contextmanager
def open(config, *, cache_dir, log_dir=None):
    yield OverlapJudge()
'''


@pytest.fixture
def additions(tmp_path, monkeypatch):
    """The two modules in a package of their own, and one registry line each."""
    package = f"extension_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "ext"
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "rotate.py").write_text(textwrap.dedent(RERANKER))
    (root / package / "overlap.py").write_text(textwrap.dedent(JUDGE))
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setitem(registry.RERANKERS, "rotate", f"{package}.rotate")
    monkeypatch.setitem(registry.JUDGES, "overlap", f"{package}.overlap")
    yield
    for name in [m for m in sys.modules if m.startswith(package)]:
        del sys.modules[name]


SETTINGS = [
    "--set",
    "retrieval.reranker=rotate",
    "--set",
    "retrieval.settings.rotate.keep=2",
    "--set",
    "judge.backend=overlap",
]


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_run_dry_run_sweep_and_export(additions, tmp_path, capsys):
    common = ["--cache-dir", str(tmp_path / "c"), "--format", "json"]
    results = ["--results-dir", str(tmp_path / "r")]

    # the dry run: the judge backend's identity, the reranker built for free
    assert main(["run", str(DATA / "experiment.toml"), *SETTINGS, "--dry-run", *common]) == 0
    est = _json(capsys)
    assert est["exact_pairs"] and est["pairs"] > 0 and est["judge_calls_min"] > 0

    # a run: both are logged with their specs, the setting included
    assert main(["run", str(DATA / "experiment.toml"), *SETTINGS, *results, *common]) == 0
    run = read_run(Path(_json(capsys)["run_dir"]))
    components = run.header.components
    assert components["reranker"].name == "rotate"
    assert components["reranker"].args["keep"] == 2
    assert components["judge"].name == "overlap"
    assert run.header.config["retrieval"]["settings"] == {"rotate": {"keep": 2}}
    assert run.header.config["judge"]["backend"] == "overlap"
    firsts = [q.hits[0].hit for q in run.questions if q.hits]
    assert firsts and all(h.rerank_score == 0.0 for h in firsts)
    assert any(q.hits[0].verdict.relevant.value for q in run.questions if q.hits)

    # a sweep over the new reranker, judged by the new backend
    sweep_args = [
        "sweep",
        str(DATA / "sweep.toml"),
        *SETTINGS,
        "--set",
        'sweep.space.reranker=["rotate"]',
        "--set",
        "sweep.space.fetch_k=[4]",
        "--trials",
        "2",
        *results,
        *common,
    ]
    assert main([*sweep_args, "--dry-run"]) == 0
    assert _json(capsys)["trials"] == 2
    assert main(sweep_args) == 0
    out = _json(capsys)
    assert sum(out["counts"].values()) == 2
    sweep_dir = Path(out["sweep_dir"])
    trial = json.loads((sweep_dir / "trials.jsonl").read_text().splitlines()[0])
    assert trial["params"]["reranker"] == "rotate"

    # export-config: the reranker's own snippet and setting, the judge backend reported
    exported = tmp_path / "best.toml"
    assert main(["export-config", str(sweep_dir), "--out", str(exported), "--format", "json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert "docs[2:] + docs[:2]" in data["langchain"] and "# rotate" in data["langchain"]
    compile(data["langchain"], "<export>", "exec")
    assert data["notes"] == [
        "judge backend 'overlap' has no stock LangChain equivalent; the exported code "
        "covers retrieval only"
    ]
    assert "judge backend 'overlap' has no stock LangChain equivalent" in captured.err
    toml = tomllib.loads(exported.read_text())
    assert toml["retrieval"]["settings"] == {"rotate": {"keep": 2}}
    assert toml["judge"]["backend"] == "overlap"
    # ... and the exported file runs as it stands
    assert main(["run", str(exported), "--dry-run", *common]) == 0


def test_a_reranker_without_an_export_is_reported_not_written_as_dense(
    additions, tmp_path, monkeypatch, capsys
):
    from harness.config import load_experiment
    from harness.sweep.export import langchain_export

    monkeypatch.delattr(registry.load("reranker", "rotate"), "export")
    config = load_experiment(DATA / "experiment.toml", SETTINGS[1::2])
    code, notes = langchain_export(config)
    compile(code, "<export>", "exec")
    assert "reranker 'rotate' has no stock LangChain equivalent" in notes
    assert "# Note: reranker 'rotate' has no stock LangChain equivalent." in code
    assert "rerank `candidates` here" in code


def test_a_setting_is_checked_by_its_module_naming_file_and_field(additions, capsys):
    assert (
        main(
            [
                "run",
                str(DATA / "experiment.toml"),
                *SETTINGS[:2],
                "--set",
                "retrieval.settings.rotate.keep=-1",
                "--dry-run",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "experiment.toml: retrieval.settings.rotate.keep: expected >= 0" in err
    assert (
        main(
            [
                "run",
                str(DATA / "experiment.toml"),
                "--set",
                "retrieval.settings.rotate.keep=true",
                "--dry-run",
            ]
        )
        == 2
    )
    assert "retrieval.settings.rotate.keep: expected an integer" in capsys.readouterr().err
    assert (
        main(
            [
                "run",
                str(DATA / "experiment.toml"),
                "--set",
                "retrieval.settings.nope.x=1",
                "--dry-run",
            ]
        )
        == 2
    )
    assert "retrieval.settings.nope: expected a reranker name" in capsys.readouterr().err
