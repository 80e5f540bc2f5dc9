"""Judging many (question, chunk) pairs: the verdict cache first, then the judge.

`judge_pairs` spends calls as the judge's mode says, groups pairs so that a server's
prompt cache holds what they share, runs `judge.concurrency` groups at once, and hands
each verdict back as it finishes so the caller can write results as they come.
"""

from __future__ import annotations

import queue
import statistics
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from harness.config import CriteriaConfig
from harness.judge.protocol import PAIRWISE_MODES, Judge
from harness.stores import VerdictCache, verdict_key
from harness.types import CriterionVerdict, Verdict


@dataclass
class JudgeStats:
    """What judging cost in one run, summed from the verdicts. Thread-safe.

    `calls` counts every HTTP request (retries and failed ones included), `retries` the
    requests made again, `failed_attempts` those that brought no usable answer; the
    median latency is over answered requests."""

    calls: int = 0
    paid_verdicts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    cache_hits: int = 0
    retries: int = 0
    failed_attempts: int = 0
    call_latencies_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, verdict: CriterionVerdict) -> None:
        """Add one verdict's cost; a cached verdict counts only as a cache hit."""
        with self.lock:
            if verdict.cached:
                self.cache_hits += 1
                return
            self.paid_verdicts += 1
            self.calls += verdict.calls
            self.prompt_tokens += verdict.prompt_tokens
            self.completion_tokens += verdict.completion_tokens
            self.retries += verdict.retries
            self.failed_attempts += verdict.failed_attempts
            answered = verdict.calls - verdict.failed_attempts
            if answered > 0:
                self.call_latencies_s.append(verdict.latency_s / answered)
            if verdict.error:
                self.errors += 1

    def to_dict(self) -> dict[str, Any]:
        """The totals as run-header stats; median call latency in seconds (None: no calls)."""
        with self.lock:
            lat = self.call_latencies_s
            return {
                "judge_calls": self.calls,
                "judge_paid_verdicts": self.paid_verdicts,
                "judge_cache_hits": self.cache_hits,
                "judge_errors": self.errors,
                "judge_retries": self.retries,
                "judge_failed_attempts": self.failed_attempts,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "judge_call_median_s": round(statistics.median(lat), 4) if lat else None,
            }


def grade_cached(
    judge: Judge,
    cache: VerdictCache | None,
    stats: JudgeStats,
    question: str,
    chunk_text: str,
    criterion: str,
    criterion_text: str,
) -> CriterionVerdict:
    """One criterion, from the cache when it was ever paid for, else from the judge (and
    then cached if it succeeded)."""
    key = verdict_key(judge.identity(), criterion_text, question, chunk_text)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        verdict = CriterionVerdict(**{**hit.to_dict(), "cached": True})
    else:
        verdict = judge.grade(question, chunk_text, criterion, criterion_text)
        if cache is not None:
            cache.put(key, verdict)
    stats.record(verdict)
    return verdict


def judge_pair(
    judge: Judge,
    cache: VerdictCache | None,
    stats: JudgeStats,
    question: str,
    chunk_text: str,
    criteria: CriteriaConfig,
) -> Verdict:
    """Both criteria for one (question, chunk), cache first.

    "complete" is only asked when the chunk was judged relevant: a complete but irrelevant
    chunk grades 0 anyway, so the answer could not change a metric. The skipped verdict is
    recorded as "no" with the reason saying it was not asked.
    """
    relevant = grade_cached(
        judge, cache, stats, question, chunk_text, "relevant", criteria.relevant
    )
    if relevant.value is True:
        complete = grade_cached(
            judge, cache, stats, question, chunk_text, "complete", criteria.complete
        )
    elif relevant.error:
        complete = CriterionVerdict(
            criterion="complete", value=None, error="not asked: relevance failed"
        )
    else:
        complete = _not_asked()
    return Verdict(relevant=relevant, complete=complete)


def _not_asked() -> CriterionVerdict:
    """The "complete" of a chunk judged not relevant: implied "no", never paid for."""
    return CriterionVerdict(
        criterion="complete", value=False, reason="not asked: judged not relevant"
    )


def cached_pair(
    cache: VerdictCache, identity: str, criteria: CriteriaConfig, q: str, c: str
) -> tuple[CriterionVerdict | None, CriterionVerdict | None]:
    """The cached relevance verdict of a pair and, only when it is a yes, its cached
    "complete" (a "no" needs none). None where nothing was paid yet."""
    rel = cache.get(verdict_key(identity, criteria.relevant, q, c))
    if rel is None or not rel.value:
        return rel, None
    return rel, cache.get(verdict_key(identity, criteria.complete, q, c))


def _from_cache(
    judge: Judge,
    cache: VerdictCache | None,
    stats: JudgeStats,
    q: str,
    c: str,
    criteria: CriteriaConfig,
) -> Verdict | None:
    """Both criteria from the cache, or None if either is missing (a relevant "no" needs
    no "complete")."""
    if cache is None:
        return None
    rel, comp = cached_pair(cache, judge.identity(), criteria, q, c)
    if rel is None or (rel.value and comp is None):
        return None
    comp = CriterionVerdict(**{**comp.to_dict(), "cached": True}) if comp else _not_asked()
    rel = CriterionVerdict(**{**rel.to_dict(), "cached": True})
    stats.record(rel)
    if comp.cached:
        stats.record(comp)
    return Verdict(relevant=rel, complete=comp)


def _store(
    judge: Judge,
    cache: VerdictCache | None,
    stats: JudgeStats,
    q: str,
    c: str,
    criteria: CriteriaConfig,
    rel: CriterionVerdict,
    comp: CriterionVerdict,
) -> Verdict:
    for v, text in ((rel, criteria.relevant), (comp, criteria.complete)):
        stats.record(v)
        if cache is not None:
            cache.put(verdict_key(judge.identity(), text, q, c), v)
    return Verdict(relevant=rel, complete=comp)


def judge_pairs(
    pairs: Sequence[tuple[str, str]],
    judge: Judge,
    *,
    criteria: CriteriaConfig,
    cache: VerdictCache | None,
    stats: JudgeStats,
    concurrency: int | None = None,
    on_done: Callable[[int, Verdict], None] | None = None,
) -> list[Verdict]:
    """Verdicts for (question text, chunk text) pairs, in the order given.

    The judge's `mode` decides the calls: "pointwise", "extractive" and "ensemble" ask
    relevance, then "complete" of relevant chunks; "both" and "graded" make one call per
    pair; "listwise" one call per question for its uncached chunks.
    Pairs that share a chunk (pointwise, both) or a question (listwise) are judged by one
    worker one after another, so a server's prompt cache holds what they share;
    `concurrency` such groups (default: the judge's own) are in flight. `on_done(i, verdict)`
    is called from the calling thread as each
    pair finishes, so the caller can write results as they come. An exception (a judge
    that is down, Ctrl-C) stops the work at once; verdicts already paid are in the cache.
    """
    mode = judge.mode
    groups: dict[str, list[int]] = {}
    for i, (question, chunk) in enumerate(pairs):
        groups.setdefault(question if mode == "listwise" else chunk, []).append(i)
    done: queue.Queue[tuple[int, Verdict | None, BaseException | None]] = queue.Queue()
    stop = threading.Event()

    def one(i: int) -> Verdict:
        q, c = pairs[i]
        if mode not in PAIRWISE_MODES:  # pointwise, extractive, ensemble
            return judge_pair(judge, cache, stats, q, c, criteria)
        cached = _from_cache(judge, cache, stats, q, c, criteria)
        if cached is not None:
            return cached
        rel, comp = judge.grade_both(q, c, criteria)
        return _store(judge, cache, stats, q, c, criteria, rel, comp)

    def listwise(indices: list[int]) -> None:
        q = pairs[indices[0]][0]
        todo = []
        for i in indices:
            cached = _from_cache(judge, cache, stats, q, pairs[i][1], criteria)
            if cached is not None:
                done.put((i, cached, None))
            else:
                todo.append(i)
        if todo:
            graded = judge.grade_list(q, [pairs[i][1] for i in todo], criteria)
            for i, (rel, comp) in zip(todo, graded, strict=True):
                done.put(
                    (i, _store(judge, cache, stats, q, pairs[i][1], criteria, rel, comp), None)
                )

    def work(indices: list[int]) -> None:
        try:
            if mode == "listwise":
                listwise(indices)
                return
            for i in indices:
                if stop.is_set():
                    return
                done.put((i, one(i), None))
        except BaseException as exc:  # handed to the calling thread, which re-raises
            done.put((indices[0], None, exc))

    results: list[Verdict | None] = [None] * len(pairs)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency or judge.concurrency))
    try:
        for indices in groups.values():
            pool.submit(work, indices)
        for _ in range(len(pairs)):
            i, verdict, exc = done.get()
            if exc is not None:
                raise exc
            results[i] = verdict
            if on_done:
                on_done(i, verdict)  # type: ignore[arg-type]
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [r for r in results if r is not None]
