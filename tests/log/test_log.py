"""The result log is read and written only through harness.log: typed, checked, versioned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.log import (
    RunHeader,
    SweepSummary,
    TrialRecord,
    list_results,
    read_header,
    read_run,
    read_sweep,
    schema,
)
from harness.types import LOG_VERSION, QuestionResult
from tests.conftest import DATA

V1 = DATA / "logs" / "v1"


def test_reads_a_run_written_by_the_previous_version():
    run = read_run(V1 / "run")
    assert run.header.log_version == 1 and run.header.status == "done"
    assert run.header.ks == (1, 2, 3) and run.header.k == 3
    assert len(run.questions) == 2
    q = run.questions[0]
    assert isinstance(q, QuestionResult) and q.hits and q.hits[0].hit.rank == 1
    assert run.header.components["judge"].name == "scripted"
    assert set(run.header.metrics_ci["mrr@3"]) and len(run.header.metrics_ci["mrr@3"]) == 2


def test_reads_a_sweep_written_by_the_previous_version(tmp_path):
    log = read_sweep(V1 / "sweep")
    s = log.summary
    assert isinstance(s, SweepSummary) and s.status == "done" and s.log_version == 1
    assert s.objective == ["mrr@k"] and s.sampler.name == "tpe"
    assert [t.number for t in log.trials] == [0, 1]
    assert all(isinstance(t, TrialRecord) for t in log.trials)
    assert s.best and s.best[0].number in (0, 1)
    assert s.stats.judge_calls >= 0 and s.counts.complete + s.counts.pruned == 2
    # and writing it back gives the same JSON
    assert s.to_dict() == json.loads((V1 / "sweep" / "sweep.json").read_text())
    shutil.copytree(V1, tmp_path / "results")
    kinds = sorted(r["kind"] for r in list_results(tmp_path / "results"))
    assert kinds == ["run", "sweep"]


def test_list_shows_the_headline_soft_mrr_first_and_what_an_old_run_has(tmp_path):
    shutil.copytree(V1, tmp_path / "results")
    (old,) = [r for r in list_results(tmp_path / "results") if r["kind"] == "run"]
    assert list(old["metrics"]) == ["mrr@3", "hit_rate@3"]  # logged before soft metrics
    header = tmp_path / "results" / "run" / "header.json"
    raw = json.loads(header.read_text())
    raw["metrics"]["soft_mrr@3"] = 0.41
    header.write_text(json.dumps(raw))
    (new,) = [r for r in list_results(tmp_path / "results") if r["kind"] == "run"]
    assert list(new["metrics"]) == ["soft_mrr@3", "mrr@3", "hit_rate@3"]


def test_header_round_trips_to_the_same_json():
    raw = json.loads((V1 / "run" / "header.json").read_text())
    assert read_header(V1 / "run").to_dict() == raw


def test_a_newer_log_is_refused_with_one_clear_line(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    raw = json.loads((folder / "header.json").read_text())
    raw["log_version"] = LOG_VERSION + 1
    (folder / "header.json").write_text(json.dumps(raw))
    with pytest.raises(HarnessError, match=r"newer harness \(log version 2"):
        read_header(folder)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ks", "three", "ks"),
        ("metrics", {"mrr@3": "high"}, "metrics.mrr@3"),
        ("status", None, "status"),
        ("components", {"judge": {"args": {}}}, "components.judge.name"),
    ],
)
def test_a_header_of_the_wrong_shape_names_the_field(tmp_path, field, value, message):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    raw = json.loads((folder / "header.json").read_text())
    raw[field] = value
    (folder / "header.json").write_text(json.dumps(raw))
    with pytest.raises(HarnessError) as err:
        read_header(folder)
    assert str(folder / "header.json") in str(err.value) and message in str(err.value)


def test_a_question_line_of_the_wrong_shape_names_the_line(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    lines = (folder / "questions.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["hits"][0]["hit"]["rank"] = "first"
    (folder / "questions.jsonl").write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    with pytest.raises(HarnessError, match=r"questions.jsonl:1: hits.0.hit.rank"):
        read_run(folder)


def test_a_torn_last_line_is_skipped(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    with open(folder / "questions.jsonl", "a") as f:
        f.write('{"question": {"question_id": "torn"')
    assert len(read_run(folder).questions) == 2


def test_every_log_record_has_a_schema_and_documented_fields():
    for cls in (RunHeader, SweepSummary, TrialRecord, QuestionResult):
        s = schema(cls)
        assert s["type"] == "object" and s["properties"]
    # every field of the log's own records says what it holds
    import ast
    import inspect

    import harness.log.models as models

    tree = ast.parse(inspect.getsource(models))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in ("RunHeader", "TrialRecord"):
            body = node.body
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.AnnAssign):
                    doc = body[i + 1] if i + 1 < len(body) else None
                    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), (
                        f"{node.name}.{stmt.target.id} has no docstring"  # type: ignore[union-attr]
                    )


def test_only_harness_log_touches_the_log_files():
    """header.json, questions.jsonl, sweep.json and trials.jsonl are named nowhere else."""
    root = Path(__file__).resolve().parents[2] / "harness"
    for path in root.rglob("*.py"):
        if path.parent.name == "log":
            continue
        text = path.read_text()
        for name in ('"header.json"', '"questions.jsonl"', '"sweep.json"', '"trials.jsonl"'):
            assert name not in text, f"{path} names {name}; go through harness.log"
