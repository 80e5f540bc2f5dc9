"""The judge's real path against a real llama.cpp server on 127.0.0.1 (smallest model).

No quality is asserted: SmolLM2-135M is a plumbing model. What is asserted is the
protocol: a grammar-constrained yes/no, P(yes) from logprobs, reasons when asked, token
usage, and the prompt cache serving the passage again for the next question.
"""

from __future__ import annotations

import pytest

from harness.config import CriteriaConfig
from harness.judge import ChatJudge, JudgeStats, judge_pairs

pytestmark = pytest.mark.llama
PASSAGE = "The annual plant swap is on 14 May at the front gate, from 10 am to noon."


def test_yes_no_with_confidence_and_usage(llama_server):
    judge = ChatJudge(
        base_url=llama_server.base_url, model="smollm2-135m", api_key="", grammar=True
    )
    v = judge.grade("When is the plant swap?", PASSAGE, "relevant", CriteriaConfig().relevant)
    assert v.error is None and v.value in (True, False)
    assert v.raw.strip().lower() in ("yes", "no")
    assert v.p_yes is not None and 0.0 <= v.p_yes <= 1.0
    assert v.calls == 1 and v.prompt_tokens > 50 and v.latency_s > 0
    # the grammar's answer is one token: the end of the answer is not asked for (it cost
    # the server a decode pass), so the server computes one token
    assert v.completion_tokens == 1


def test_reasons_mode(llama_server):
    judge = ChatJudge(
        base_url=llama_server.base_url, model="smollm2-135m", api_key="", grammar=True, reasons=True
    )
    v = judge.grade("When is the plant swap?", PASSAGE, "complete", CriteriaConfig().complete)
    assert v.error is None
    assert v.raw.lower().startswith(("yes:", "no:"))
    assert v.reason  # the sentence after the colon


def test_many_pairs_concurrently(llama_server):
    judge = ChatJudge(
        base_url=llama_server.base_url, model="smollm2-135m", api_key="", grammar=True
    )
    pairs = [
        (q, PASSAGE) for q in ("When is the swap?", "Where is the swap?", "Who runs the swap?")
    ]
    pairs += [("When is the swap?", "Compost must be turned every two weeks.")]
    stats = JudgeStats()
    verdicts = judge_pairs(
        pairs, judge, criteria=CriteriaConfig(), cache=None, stats=stats, concurrency=2
    )
    assert len(verdicts) == 4 and all(v.error is None for v in verdicts)
    assert stats.calls >= 4 and stats.prompt_tokens > 0


def test_graded_mode_reads_a_grade_distribution(llama_server):
    judge = ChatJudge(
        base_url=llama_server.base_url,
        model="smollm2-135m",
        api_key="",
        grammar=True,
        mode="graded",
    )
    rel, comp = judge.grade_both("When is the plant swap?", PASSAGE, CriteriaConfig())
    assert rel.error is None and rel.raw.strip() in ("0", "1", "2", "3")
    assert rel.distribution is not None and abs(sum(rel.distribution) - 1) < 1e-6
    assert rel.p_yes == sum(rel.distribution[1:]) and comp.p_yes == sum(rel.distribution[2:])
    assert rel.calls == 1 and comp.calls == 0


def test_extractive_mode_copies_a_sentence_or_says_none(llama_server):
    judge = ChatJudge(
        base_url=llama_server.base_url,
        model="smollm2-135m",
        api_key="",
        grammar=True,
        mode="extractive",
    )
    v = judge.grade("When is the plant swap?", PASSAGE, "complete", CriteriaConfig().complete)
    assert v.error is None
    # the grammar allows only NONE or the passage's own sentence
    assert v.raw.strip() in ("NONE", PASSAGE)
    assert (v.evidence == PASSAGE) == bool(v.value)
    assert v.p_yes is None or 0.0 <= v.p_yes <= 1.0
