"""Lazy judging (issue 17): stop a question once its objective is settled, bound what
the unjudged chunks leave open, pay only for the missing verdicts later, and count the
lazy bound in the dry run."""

from __future__ import annotations

import threading
import time

import pytest

from harness.config import CriteriaConfig, load_experiment
from harness.errors import ConfigError, HarnessError
from harness.judge import BaseJudge, JudgeStats, LazyPlan, judge_pairs
from harness.judge.chat import ChatJudge
from harness.judge.estimate import lazy_pairs
from harness.log import read_run
from harness.metrics.lazy import (
    aggregate_partial,
    is_settled,
    lazy_cutoff,
    lazy_target,
    question_metrics_partial,
)
from harness.pipeline import run_experiment
from harness.pipeline.estimate import estimate_run
from harness.report.text import format_run_summary
from harness.stores import VerdictCache, verdict_key
from harness.sweep.study import with_lazy_default
from harness.testing import Act, FakeOpenAI
from harness.types import ComponentSpec, CriterionVerdict
from tests.conftest import DATA, ScriptedJudge

EXPERIMENT = DATA / "experiment.toml"


class GradeJudge(BaseJudge):
    """Grades a chunk by its name: "g2..." relevant and complete, "g1..." relevant only,
    anything else irrelevant. Records every call."""

    spec = ComponentSpec(name="grade-by-name")

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self.concurrency = 2

    def identity(self) -> str:
        return "grade-by-name"

    def grade(self, question, chunk_text, criterion, criterion_text):
        with self._lock:
            self.calls.append((question, chunk_text, criterion))
        if criterion == "relevant":
            value = chunk_text.startswith(("g1", "g2"))
        else:
            value = chunk_text.startswith("g2")
        return CriterionVerdict(criterion, value, calls=1)


RANKED = {
    "q1": ["g0 a", "g1 b", "g2 c", "g2 d"],  # settled at rank 3
    "q2": ["g2 e", "g0 f", "g1 g", "g0 h"],  # settled at rank 1
    "q3": ["g0 i", "g1 j", "g0 k", "g0 l"],  # never settled: all 4 judged
}


def _plan(pairs: list[tuple[str, str]], target: str, k: int) -> LazyPlan:
    chains: dict[str, list[int]] = {}
    for i, (q, _) in enumerate(pairs):
        chains.setdefault(q, []).append(i)
    return LazyPlan(
        chains=list(chains.values()),
        settled=lambda got: is_settled([v.grade for v in got], target, k),
    )


def _judge_lazily(
    pairs: list[tuple[str, str]], judge, target: str, k: int, *, cache=None, on_done=None
):
    """`judge_pairs` of `pairs` as lazy chains per question, settled for `target` at `k`."""
    return judge_pairs(
        pairs,
        judge,
        criteria=CriteriaConfig(),
        cache=cache,
        stats=JudgeStats(),
        on_done=on_done,
        lazy=_plan(pairs, target, k),
    )


def test_lazy_stops_at_the_settling_rank():
    pairs = [(q, c) for q, chunks in RANKED.items() for c in chunks]
    judge = GradeJudge()
    done: list[int] = []
    verdicts = _judge_lazily(pairs, judge, "complete", 4, on_done=lambda i, v: done.append(i))
    judged = {(q, c) for q, c, _ in judge.calls}
    assert judged == {
        ("q1", "g0 a"), ("q1", "g1 b"), ("q1", "g2 c"),
        ("q2", "g2 e"),
        ("q3", "g0 i"), ("q3", "g1 j"), ("q3", "g0 k"), ("q3", "g0 l"),
    }  # fmt: skip
    # relevance for each judged chunk, completeness for each relevant one
    assert len(judge.calls) == 8 + 4
    assert sorted(done) == list(range(len(pairs)))  # skipped pairs are reported too
    grades = [v.grade for v in verdicts]
    assert grades == [0, 1, 2, None, 2, None, None, None, 0, 1, 0, 0]
    skipped = [v for v in verdicts if not v.judged]
    assert len(skipped) == 4 and all(v.error is None and v.grade is None for v in skipped)
    # relevancy_mrr alone stops at the first relevant chunk
    judge = GradeJudge()
    _judge_lazily(pairs, judge, "relevant", 4)
    assert {c for q, c, crit in judge.calls if crit == "relevant"} == {
        "g0 a", "g1 b", "g2 e", "g0 i", "g1 j",
    }  # fmt: skip
    # an objective at k=2 never looks below rank 2
    judge = GradeJudge()
    _judge_lazily(pairs, judge, "complete", 2)
    assert {c for q, c, crit in judge.calls if crit == "relevant"} == {
        "g0 a", "g1 b", "g2 e", "g0 i", "g1 j",
    }  # fmt: skip


def test_lazy_through_the_async_client_against_a_fake_endpoint():
    """The chat judge on the event loop: rank order per question, stop once settled."""

    def behave(n: int, prompt: str) -> Act:
        return Act(text="yes" if "passage g2" in prompt else "no")

    pairs = [("q1?", f"passage g{g} {i}") for i, g in enumerate((0, 2, 2, 0))]
    pairs += [("q2?", f"passage g{g} {i}") for i, g in enumerate((0, 0, 0))]
    with FakeOpenAI(behave) as server:
        judge = ChatJudge(base_url=server.base_url, model="fake", api_key="", concurrency=4)
        verdicts = _judge_lazily(pairs, judge, "complete", 4)
        # q1: ranks 1 and 2 (relevance twice, completeness once); q2: all three ranks
        assert server.requests == 2 + 1 + 3
    assert [v.grade for v in verdicts] == [0, 2, None, None, 0, 0, 0]


def test_settling_rules_and_targets():
    assert lazy_target(["mrr@k"]) == "complete"
    assert lazy_target(["hit_rate@3", "context_chars@k"]) == "complete"
    assert lazy_target(["relevancy_mrr@k"]) == "relevant"
    assert lazy_target(["failures@k"]) == "complete"
    assert lazy_target(["context_chars@k"]) == "free"
    assert lazy_target(["precision@k"]) is None
    assert lazy_target(["mrr@k", "ndcg@k"]) is None
    assert lazy_cutoff(["mrr@3"], 5) == 3 and lazy_cutoff(["mrr@k"], 5) == 5
    assert lazy_cutoff(["mrr@2", "context_chars@k"], 5) == 2
    assert not is_settled([0, 1], "complete", 4)
    assert is_settled([0, 2], "complete", 4)
    assert is_settled([0, 1], "relevant", 4)
    assert is_settled([0, 0], "complete", 2)  # the cut-off is reached
    assert not is_settled([None], "complete", 4)  # a failed verdict settles nothing


def test_bounds_by_hand():
    # [relevant, relevant and complete, ?, ?] at k = 4, lengths 10 each
    exact, bounds = question_metrics_partial([1, 2, None, None], [10] * 4, range(1, 5), judged=2)
    assert exact["mrr@4"] == 0.5 and exact["hit_rate@4"] == 1.0
    assert exact["relevancy_mrr@4"] == 1.0 and exact["precision@2"] == 1.0
    assert exact["context_chars@4"] == 40.0
    # precision@4: 2 of 4 relevant for sure, 4 of 4 at most
    assert bounds["precision@4"] == (0.5, 1.0)
    assert bounds["precision@3"] == pytest.approx((2 / 3, 1.0))
    # AP@4 over relevance: [1, 1, 0, 1] gives (1 + 1 + 3/4) / 3 = 0.9167, the least;
    # [1, 1, 0, 0], [1, 1, 1, 0] or [1, 1, 1, 1] give 1
    assert bounds["ap@4"] == pytest.approx((2.75 / 3, 1.0))
    # nDCG@4 with linear gain: DCG = 1 + 2/log2(3) + g3/2 + g4/log2(5). Least at
    # (g3, g4) = (0, 2): 3.12321 / ideal [2, 2, 1, 0] 3.76186 = 0.83023; most at (1, 1):
    # 3.19254 / ideal [2, 1, 1, 1] 3.56161 = 0.89638
    lo, hi = bounds["ndcg@4"]
    assert lo == pytest.approx(0.83023, abs=1e-4) and hi == pytest.approx(0.89638, abs=1e-4)
    # nDCG@1: DCG 1 over the ideal's first grade, 2 whatever the rest: exact
    assert exact["ndcg@1"] == 0.5 and "ndcg@1" not in bounds
    # nDCG@2 looks at ranks 1-2, its ideal at every grade: (0, 0) gives 2.26186 / [2, 1]
    # 2.63093 = 0.85972, the most; any 2 below gives 2.26186 / [2, 2] 3.26186 = 0.69343
    assert bounds["ndcg@2"] == pytest.approx((0.69343, 0.85972), abs=1e-4)
    for key in bounds:
        assert key not in exact
    # no stop: plain question_metrics, no bounds
    exact, bounds = question_metrics_partial([1, 2, 0], [10] * 3, range(1, 4), judged=None)
    assert bounds == {} and exact["precision@3"] == pytest.approx(2 / 3)


def test_aggregate_partial_by_hand():
    q1 = {"precision@2": 0.5, "hit_rate@2": 1.0, "mrr@2": 1.0}
    q2 = {"hit_rate@2": 1.0, "mrr@2": 0.5}
    q3 = {"mrr@2": 0.0}  # relevancy lazy judging: hit unknown
    means, bounds = aggregate_partial(
        [q1, q2, q3],
        [{}, {"precision@2": (0.5, 1.0)}, {"hit_rate@2": (0.0, 1.0), "precision@2": (0.5, 1.0)}],
        [2],
    )
    assert bounds["precision@2"] == pytest.approx((0.5, 2.5 / 3))
    assert "precision@2" not in means
    assert means["mrr@2"] == pytest.approx(0.5)
    assert bounds["hit_rate@2"] == pytest.approx((2 / 3, 1.0))
    assert bounds["failures@2"] == (0.0, 1.0) and "failures@2" not in means
    assert means["errors@2"] == 0.0


def test_lazy_run_then_complete_run_pays_only_the_missing_verdicts(tmp_path):
    # the full price, on a cache of its own
    full_judge = ScriptedJudge()
    full = run_experiment(
        load_experiment(EXPERIMENT), results_dir=tmp_path, cache_dir=tmp_path / "c1",
        judge=full_judge,
    )  # fmt: skip
    # lazily, then complete, on another
    lazy_config = load_experiment(EXPERIMENT, ["judge.lazy=true", "sweep.objective=['mrr@k']"])
    est = estimate_run(lazy_config, cache_dir=tmp_path / "c2")
    lazy_judge = ScriptedJudge()
    lazy = run_experiment(
        lazy_config, results_dir=tmp_path, cache_dir=tmp_path / "c2", judge=lazy_judge
    )
    h = lazy.header
    assert h.status == "done"
    paid_lazy = h.stats["judge_calls"]
    assert 0 < paid_lazy < full.header.stats["judge_calls"]
    assert h.stats["hits_not_judged"] > 0
    # the dry run counted the lazy bound: the calls paid lie within it
    assert est["lazy"] is True
    assert est["lazy_judge_calls_min"] <= paid_lazy <= est["lazy_judge_calls_max"]
    assert est["lazy_judge_calls_max"] <= est["judge_calls_max"]
    # the objective's metrics are exact, and equal the full run's
    for k in h.ks:
        for name in ("mrr", "hit_rate", "relevancy_mrr"):
            assert h.metrics[f"{name}@{k}"] == pytest.approx(full.header.metrics[f"{name}@{k}"])
    # what needs unjudged chunks is bounds, never a value, and the bounds hold the truth
    k = max(h.ks)
    assert f"precision@{k}" in h.metric_bounds and f"precision@{k}" not in h.metrics
    for key, (lo, hi) in h.metric_bounds.items():
        assert key not in h.metrics
        if key in full.header.metrics:
            assert lo - 1e-9 <= full.header.metrics[key] <= hi + 1e-9, key
    back = read_run(lazy.run_dir)
    assert back.header.metric_bounds == h.metric_bounds
    assert any(q.bounds for q in back.questions)
    skipped = [jh for q in back.questions for jh in q.hits if not jh.verdict.judged]
    assert skipped and all(jh.verdict.grade is None for jh in skipped)
    summary = format_run_summary(back)
    assert "lazy judging:" in summary and ".." in summary
    # a complete run on the same cache pays exactly the verdicts lazy judging skipped
    again = ScriptedJudge()
    complete = run_experiment(
        load_experiment(EXPERIMENT), results_dir=tmp_path, cache_dir=tmp_path / "c2", judge=again
    )
    assert complete.header.metric_bounds == {}
    assert complete.header.stats["judge_calls"] == full.header.stats["judge_calls"] - paid_lazy
    assert not set(again.calls) & set(lazy_judge.calls)
    assert complete.header.metrics == pytest.approx(full.header.metrics)


def test_dry_run_lazy_bound_reads_the_cache(tmp_path):
    """The lazy bound walks each question in rank order: a cached verdict that settles
    the question ends its walk; the first open pair must be paid, the rest may be."""
    criteria = CriteriaConfig()
    cache = VerdictCache(tmp_path / "v.sqlite")

    def put(q: str, c: str, relevant: bool, complete: bool | None = None) -> None:
        cache.put(
            verdict_key("id", criteria.relevant, q, c), CriterionVerdict("relevant", relevant)
        )
        if complete is not None:
            cache.put(
                verdict_key("id", criteria.complete, q, c), CriterionVerdict("complete", complete)
            )

    put("q1", "a", False)
    put("q1", "b", True, True)  # q1 settled at rank 2 from the cache: nothing to pay
    put("q2", "e", True, False)  # q2: rank 1 known (grade 1), ranks 2-3 open
    questions = [
        [("q1", "a"), ("q1", "b"), ("q1", "c")],
        [("q2", "e"), ("q2", "f"), ("q2", "g")],
        [("q3", "h"), ("q3", "i"), ("q3", "j")],  # nothing cached: all three may be paid
    ]
    must, may = lazy_pairs(
        questions, identity="id", criteria=criteria, cache=cache, target="complete", k=3
    )
    assert must == [("q2", "f"), ("q3", "h")]
    assert may == [("q2", "f"), ("q2", "g"), ("q3", "h"), ("q3", "i"), ("q3", "j")]
    # an objective at k = 2 never pays below rank 2
    _, may = lazy_pairs(
        questions, identity="id", criteria=criteria, cache=cache, target="complete", k=2
    )
    assert may == [("q2", "f"), ("q3", "h"), ("q3", "i")]
    cache.close()


def test_lazy_config_defaults_and_refusals():
    plain = load_experiment(EXPERIMENT, ["sweep.objective=['mrr@k']"])
    assert plain.judge.lazy is None  # `harness run`: complete judging
    assert with_lazy_default(plain).judge.lazy is True  # a sweep on mrr@k: lazy
    # the default objective, soft_mrr@k, needs every chunk's probability: never lazy
    assert with_lazy_default(load_experiment(EXPERIMENT)).judge.lazy is None
    off = load_experiment(EXPERIMENT, ["judge.lazy=false"])
    assert with_lazy_default(off).judge.lazy is False
    precision = load_experiment(EXPERIMENT, ["sweep.objective=['precision@k']"])
    assert with_lazy_default(precision).judge.lazy is None
    with pytest.raises(ConfigError, match=r"judge\.lazy"):
        load_experiment(EXPERIMENT, ["judge.lazy=true", "sweep.objective=['ndcg@k']"])
    with pytest.raises(ConfigError, match="listwise"):
        load_experiment(EXPERIMENT, ["judge.lazy=true", "judge.mode=listwise"])


def test_claims_taken_ahead_for_pairs_never_asked_are_given_up(tmp_path):
    """Claims are taken ahead of the calls (a worker then seldom waits for a claim's
    round trip); those of the pairs a lazy chain skips, and the "complete" of chunks
    judged irrelevant, are given up, so another process can pay them at once."""
    pairs = [(q, c) for q, chunks in RANKED.items() for c in chunks]
    judge = GradeJudge()
    cache = VerdictCache(tmp_path / "v.sqlite")
    _judge_lazily(pairs, judge, "complete", 4, cache=cache)
    criteria = CriteriaConfig()
    texts = {"relevant": criteria.relevant, "complete": criteria.complete}
    paid = {verdict_key(judge.identity(), texts[name], q, c) for q, c, name in judge.calls}
    unpaid = {
        verdict_key(judge.identity(), text, q, c) for q, c in pairs for text in texts.values()
    } - paid
    assert len(paid) == 12 and len(unpaid) == 12
    other = VerdictCache(tmp_path / "v.sqlite")
    deadline = time.monotonic() + 5  # given up at the cache's next flush
    got: set[str] = set()
    while got != unpaid and time.monotonic() < deadline:
        more, stored = other.claim_many(sorted(unpaid - got))
        assert stored == {}
        got |= more
        time.sleep(0.02)
    assert got == unpaid
    _, stored = other.claim_many(sorted(paid))
    assert set(stored) == paid  # what was paid is stored, never claimed again
    other.close()
    cache.close()


def test_the_first_claim_batch_reaches_past_the_pairs_in_flight(tmp_path):
    """Both criteria of the pairs the workers take next are claimed with the first
    pairs: a worker's next call finds its claim already held."""
    pairs = [(q, c) for q, chunks in RANKED.items() for c in chunks]
    judge = GradeJudge()  # 2 workers
    cache = VerdictCache(tmp_path / "v.sqlite")
    batches: list[int] = []
    claim_many = cache.claim_many

    def recorded(keys):
        batches.append(len(keys))
        return claim_many(keys)

    cache.claim_many = recorded  # type: ignore[method-assign]
    judge_pairs(pairs, judge, criteria=CriteriaConfig(), cache=cache, stats=JudgeStats())
    assert batches[0] >= 2 * (judge.concurrency + 1)  # the 2 in flight and those next
    assert sum(batches) == 2 * len(pairs)  # each key claimed once
    cache.close()


@pytest.mark.parametrize(
    "fails, why",
    [
        # the look-up before the workers start: it left the caller waiting forever
        ("get_many", "cannot read this cache"),
        # claims taken ahead
        ("claim_many", "cannot update cache claims"),
    ],
)
def test_a_cache_store_that_fails_fails_the_judging_with_its_error(tmp_path, fails, why):
    """The store's error reaches the caller, not a hang."""
    pairs = [(q, c) for q, chunks in RANKED.items() for c in chunks]
    cache = VerdictCache(tmp_path / "v.sqlite")

    def broken(keys):
        raise HarnessError(f"v.sqlite: {why} (disk I/O error)")

    setattr(cache, fails, broken)
    outcome: list[BaseException] = []

    def judge_all() -> None:
        try:
            judge_pairs(
                pairs, GradeJudge(), criteria=CriteriaConfig(), cache=cache, stats=JudgeStats()
            )
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=judge_all, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), f"judging hung on a store whose {fails} fails"
    assert len(outcome) == 1 and f"{why} (disk I/O error)" in str(outcome[0])
    cache.close()
