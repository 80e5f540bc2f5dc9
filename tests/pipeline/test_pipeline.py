"""The pipeline end to end: real FAISS, the real local embedder, a scripted judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.log import read_run
from harness.metrics import aggregate
from harness.pipeline import run_experiment
from harness.retrieval.index import load_or_build_index
from tests.conftest import DATA, ScriptedJudge

EXPERIMENT = DATA / "experiment.toml"


@pytest.fixture
def config():
    return load_experiment(EXPERIMENT)


def test_end_to_end_log_reads_back(config, scripted_judge, cache_dir, tmp_path):
    run = run_experiment(
        config, results_dir=tmp_path / "results", cache_dir=cache_dir, judge=scripted_judge
    )
    h = run.header
    assert h.status == "done" and h.error is None
    assert h.ks == (1, 2, 3)
    assert h.components["judge"].name == "scripted"
    assert h.components["embedder"].name == "local-minilm"
    assert h.components["splitter"].args == {"chunk_size": 200, "chunk_overlap": 20}
    assert h.data["n_questions"] == 6 and h.data["n_documents"] == 5
    assert len(h.data["corpus_sha256"]) == 64

    by_id = {q.question.question_id: q for q in run.questions}
    assert set(by_id) == {"hive", "compost", "key", "swap", "feed", "parking"}
    for q in run.questions:
        assert [jh.hit.rank for jh in q.hits] == [1, 2, 3]
        assert all(-1.0 <= jh.hit.score <= 1.0001 for jh in q.hits)
        scores = [jh.hit.score for jh in q.hits]
        assert scores == sorted(scores, reverse=True)
        for jh in q.hits:
            # the scripted judge's rule, checked against the logged chunk text
            assert jh.verdict.relevant.reason == "scripted relevant"
    # Easy, distinctive questions are found by MiniLM; the unanswerable one never is.
    for qid in ("hive", "compost", "swap"):
        assert by_id[qid].metrics["hit_rate@3"] == 1.0
    assert by_id["parking"].metrics["hit_rate@3"] == 0.0
    # The header's metrics are exactly the aggregate of the logged per-question metrics.
    assert h.metrics == pytest.approx(aggregate([q.metrics for q in run.questions], h.ks))
    assert h.metrics["failures@3"] >= 1
    assert h.stats["judge_calls"] == len(scripted_judge.calls) > 0
    assert h.stats["index_cache_hit"] is False and h.stats["embedded_texts"] > 0

    # The files on disk are the documented layout.
    assert (run.run_dir / "header.json").is_file()
    lines = (run.run_dir / "questions.jsonl").read_text().splitlines()
    assert (
        len(lines) == 6
        and json.loads(lines[0])["hits"][0]["verdict"]["relevant"]["criterion"] == "relevant"
    )


def test_second_run_pays_nothing_and_embeds_nothing(config, cache_dir, tmp_path):
    judge = ScriptedJudge()
    first = run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=judge)
    paid = len(judge.calls)
    assert paid > 0 and first.header.stats["judge_cache_hits"] == 0
    second = run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=judge)
    assert len(judge.calls) == paid  # zero judge calls
    assert second.header.stats["judge_cache_hits"] == paid
    assert second.header.stats["index_cache_hit"] is True
    assert second.header.stats["embedded_texts"] == 0
    assert second.header.metrics == first.header.metrics
    assert first.run_dir != second.run_dir


def test_k_change_reuses_index_and_verdicts(cache_dir, tmp_path):
    judge = ScriptedJudge()
    big = load_experiment(EXPERIMENT, ["k=3"])
    run_experiment(big, results_dir=tmp_path, cache_dir=cache_dir, judge=judge)
    paid = len(judge.calls)
    small = run_experiment(
        load_experiment(EXPERIMENT, ["k=2"]), results_dir=tmp_path, cache_dir=cache_dir, judge=judge
    )
    assert len(judge.calls) == paid
    assert small.header.stats["index_cache_hit"] is True
    # A new chunk size is a new index.
    other = run_experiment(
        load_experiment(EXPERIMENT, ["chunk_size=300"]),
        results_dir=tmp_path,
        cache_dir=cache_dir,
        judge=judge,
    )
    assert other.header.stats["index_cache_hit"] is False
    assert other.header.data["index_key"] != small.header.data["index_key"]


def test_judge_errors_are_counted_apart(config, cache_dir, tmp_path):
    judge = ScriptedJudge(fail_on="hive")
    run = run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=judge)
    hive = next(q for q in run.questions if q.question.question_id == "hive")
    assert hive.error and "scripted failure" in hive.error
    assert run.header.metrics["errors@3"] >= 1
    assert run.header.stats["judge_errors"] >= 1
    # The failed verdicts were not cached: a fixed judge pays only for them.
    fixed = ScriptedJudge()
    rerun = run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=fixed)
    assert 0 < len(fixed.calls) < rerun.header.stats["judge_cache_hits"] + len(fixed.calls)
    assert rerun.header.metrics["errors@3"] == 0


def test_interrupted_run_keeps_finished_questions(config, cache_dir, tmp_path):
    class Interrupting(ScriptedJudge):
        """Ctrl-C on the 12th call; records what it was paid for before that."""

        def __init__(self):
            super().__init__()
            self.paid = []

        def grade(self, question, chunk_text, criterion, criterion_text):
            if len(self.paid) == 11:
                raise KeyboardInterrupt
            verdict = super().grade(question, chunk_text, criterion, criterion_text)
            self.paid.append((question, chunk_text, criterion))
            return verdict

    judge = Interrupting()
    config1 = load_experiment(EXPERIMENT, ["judge.concurrency=1"])
    with pytest.raises(KeyboardInterrupt):
        run_experiment(
            config1, results_dir=tmp_path, cache_dir=cache_dir, judge=judge, run_dir=tmp_path / "r1"
        )
    log = read_run(tmp_path / "r1")
    assert log.header.status == "interrupted"
    assert 0 < len(log.questions) < 6  # finished questions are on disk, whole
    for q in log.questions:
        assert len(q.hits) == 3 and all(h.verdict.grade is not None for h in q.hits)
    # The rerun pays only for what was never judged.
    again = ScriptedJudge()
    run = run_experiment(config1, results_dir=tmp_path, cache_dir=cache_dir, judge=again)
    assert run.header.status == "done" and len(run.questions) == 6
    assert not set(judge.paid) & set(again.calls)
    assert run.header.stats["judge_cache_hits"] == len(judge.paid)


def test_index_cache_never_loads_foreign_files(config, cache_dir, tmp_path):
    """A cache entry without our meta.json is rebuilt, never unpickled or trusted."""
    from harness.corpus import chunk_documents, load_documents
    from harness.retrieval.embedders import CachedEmbedder, embedder_spec, make_embeddings

    docs_chunks = chunk_documents(
        load_documents([str(DATA / "corpus")]),
        chunk_size=200,
        chunk_overlap=20,
    )
    folder = Path(cache_dir) / "index" / "k1"
    folder.mkdir(parents=True)
    (folder / "index.pkl").write_bytes(b"\x80\x04not a pickle you want")
    (folder / "index.faiss").write_bytes(b"garbage")
    emb = CachedEmbedder(lambda: make_embeddings(config.embedder), embedder_spec(config.embedder))
    idx = load_or_build_index(docs_chunks, emb, key="k1", cache_dir=cache_dir)
    assert idx.from_cache is False
    assert (folder / "meta.json").is_file() and not (folder / "index.pkl").exists()
    again = load_or_build_index(docs_chunks, emb, key="k1", cache_dir=cache_dir)
    assert again.from_cache is True
