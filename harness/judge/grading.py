"""Judging many (question, chunk) pairs: the verdict cache first, then the judge.

`judge_pairs` spends calls as the judge's mode says, on one event loop, with
`judge.concurrency` calls in flight; against a server with a prompt cache it groups the
pairs that share a chunk; with a `LazyPlan` it judges each question in rank order and
stops once the objective is settled. It hands each verdict back as it finishes so the
caller can write results as they come.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import statistics
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from harness.config import CriteriaConfig
from harness.judge.protocol import PAIRWISE_MODES, Judge
from harness.llm import aio
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
    then cached if it succeeded). A miss first claims the key (`VerdictCache.claim`): a
    worker paying for the same verdict right now is waited for, not paid again."""
    key = verdict_key(judge.identity(), criterion_text, question, chunk_text)
    hit = cache.get(key) if cache is not None else None
    if hit is None and cache is not None:
        hit = cache.claim(key)
    if hit is not None:
        verdict = CriterionVerdict(**{**hit.to_dict(), "cached": True})
    else:
        try:
            verdict = judge.grade(question, chunk_text, criterion, criterion_text)
        except BaseException:
            if cache is not None:
                cache.release(key)
            raise
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


@dataclass(frozen=True)
class LazyPlan:
    """Lazy judging: each chain's pairs (one question's hits, best rank first) are judged
    one after another, and the rest of a chain is left unjudged as soon as
    `settled(verdicts so far)` says the objective's value for that question cannot change.
    """

    chains: Sequence[Sequence[int]]
    """Pair indices per question, in rank order; every pair in exactly one chain."""
    settled: Callable[[Sequence[Verdict]], bool]
    """True once no later verdict of the chain can change the objective."""


NOT_JUDGED = "not judged: lazy judging stopped once the objective was settled"
"""The reason both criteria of a pair lazy judging never asked carry."""


def not_judged() -> Verdict:
    """The verdict of a pair lazy judging skipped: neither criterion asked, no error, no
    cost, and no grade (`Verdict.grade` is None, `Verdict.judged` False): never a "no"."""
    return Verdict(
        relevant=CriterionVerdict("relevant", None, reason=NOT_JUDGED),
        complete=CriterionVerdict("complete", None, reason=NOT_JUDGED),
    )


def judge_pairs(
    pairs: Sequence[tuple[str, str]],
    judge: Judge,
    *,
    criteria: CriteriaConfig,
    cache: VerdictCache | None,
    stats: JudgeStats,
    concurrency: int | None = None,
    on_done: Callable[[int, Verdict], None] | None = None,
    lazy: LazyPlan | None = None,
) -> list[Verdict]:
    """Verdicts for (question text, chunk text) pairs, in the order given.

    The judge's `mode` decides the calls: "pointwise", "extractive" and "ensemble" ask
    relevance, then "complete" of relevant chunks; "both" and "graded" make one call per
    pair; "listwise" one call per question for its uncached chunks.

    Requests run on one event loop (`harness.llm.aio`) when the judge can answer
    asynchronously (ChatJudge), else in `concurrency` threads; `concurrency` (default:
    the judge's own) calls are in flight. A verdict that is already being asked for is
    awaited, not asked twice. Against a judge with a prompt cache of its own
    (`judge.prompt_cache`, the local llama.cpp server) the pairs that share a chunk are
    judged one after another, so the server keeps the passage; elsewhere every pair is
    independent, so no chunk group becomes a critical path.

    With `lazy`, each chain is judged in rank order and stops once settled; the pairs it
    skips come back as `not_judged()` (listwise judging asks all of a question's chunks
    in one call, so it ignores `lazy`). `on_done(i, verdict)` is called from the calling
    thread as each pair finishes (skipped ones included), so the caller can write results
    as they come. An exception (a judge that is down, Ctrl-C) stops the work at once;
    verdicts already paid are in the cache.
    """
    mode = judge.mode
    width = max(1, concurrency or judge.concurrency)
    items: list[tuple[list[int], bool]] = []  # (pair indices judged in order, a lazy chain)
    if mode == "listwise":
        by_question: dict[str, list[int]] = {}
        for i, (question, _) in enumerate(pairs):
            by_question.setdefault(question, []).append(i)
        items = [(ix, False) for ix in by_question.values()]
    elif lazy is not None:
        items = [(list(chain), True) for chain in lazy.chains if chain]
    elif getattr(judge, "prompt_cache", True):
        by_chunk: dict[str, list[int]] = {}
        for i, (_, chunk) in enumerate(pairs):
            by_chunk.setdefault(chunk, []).append(i)
        items = [(ix, False) for ix in by_chunk.values()]
    else:
        items = [([i], False) for i in range(len(pairs))]
    done: queue.Queue[tuple[int, Verdict | None, BaseException | None]] = queue.Queue()
    engine = _Engine(judge, cache, stats, criteria, pairs, width)
    settled = lazy.settled if lazy is not None else None

    def stop_here(got: list[Verdict], rest: Sequence[int]) -> bool:
        if settled is None or not settled(got):
            return False
        for j in rest:
            done.put((j, not_judged(), None))
        return True

    def work_blocking(indices: list[int], chain: bool) -> None:
        """An item on one thread of the pool (a judge without coroutines)."""
        if mode == "listwise":
            for i, verdict in engine.listwise_blocking(indices):
                done.put((i, verdict, None))
            return
        got: list[Verdict] = []
        for n, i in enumerate(indices):
            if engine.stopped.is_set():
                return
            verdict = engine.pair_blocking(i)
            done.put((i, verdict, None))
            got.append(verdict)
            if chain and stop_here(got, indices[n + 1 :]):
                return

    async def work(indices: list[int], chain: bool) -> None:
        if not engine.is_async:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(engine.pool, work_blocking, indices, chain)
            return
        if mode == "listwise":
            for i, verdict in await engine.listwise(indices):
                done.put((i, verdict, None))
            return
        got: list[Verdict] = []
        for n, i in enumerate(indices):
            verdict = await engine.pair(i)
            done.put((i, verdict, None))
            got.append(verdict)
            if chain and stop_here(got, indices[n + 1 :]):
                return

    async def main() -> None:
        todo = collections.deque(items)

        async def worker() -> None:
            while todo:
                indices, chain = todo.popleft()
                try:
                    await work(indices, chain)
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # handed to the calling thread, which re-raises
                    # (and cancels the rest); raised here, a KeyboardInterrupt from a judge's
                    # thread would end the loop every later call needs
                    done.put((indices[0], None, exc))
                    return

        try:
            await asyncio.gather(*(worker() for _ in range(min(width, len(items)))))
        finally:
            engine.close()

    results: list[Verdict | None] = [None] * len(pairs)
    future = aio.submit(main()) if items else None
    try:
        for _ in range(len(pairs)):
            i, verdict, exc = done.get()
            if exc is not None:
                raise exc
            results[i] = verdict
            if on_done:
                on_done(i, verdict)  # type: ignore[arg-type]
    except BaseException:
        if future is not None:
            future.cancel()
            # the requests in flight end at once; a thread of a synchronous judge is left
            with contextlib.suppress(BaseException):
                future.result(timeout=5)
        raise
    if future is not None:
        future.result()
    return [r for r in results if r is not None]


class _Engine:
    """The calls of one `judge_pairs`, on the event loop: the cache first, a verdict
    already in flight awaited rather than asked twice, then the judge (its coroutine
    methods when it has them, else its blocking ones in a thread pool)."""

    def __init__(
        self,
        judge: Judge,
        cache: VerdictCache | None,
        stats: JudgeStats,
        criteria: CriteriaConfig,
        pairs: Sequence[tuple[str, str]],
        width: int,
    ) -> None:
        self.judge, self.cache, self.stats, self.criteria = judge, cache, stats, criteria
        self.pairs = pairs
        self.identity = judge.identity()
        self.is_async = hasattr(judge, "agrade")
        self.pool = None if self.is_async else ThreadPoolExecutor(max_workers=width)
        self.flying: dict[str, asyncio.Future[Any]] = {}
        self.stopped = threading.Event()

    def close(self) -> None:
        """Let the thread pool go (a blocking call still running finishes on its own)."""
        self.stopped.set()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def pair_blocking(self, i: int) -> Verdict:
        """`pair` for a judge without coroutines, on a pool thread."""
        q, c = self.pairs[i]
        if self.judge.mode not in PAIRWISE_MODES:  # pointwise, extractive, ensemble
            return judge_pair(self.judge, self.cache, self.stats, q, c, self.criteria)
        cached = _from_cache(self.judge, self.cache, self.stats, q, c, self.criteria)
        if cached is not None:
            return cached
        rel, comp = self.judge.grade_both(q, c, self.criteria)
        return _store(self.judge, self.cache, self.stats, q, c, self.criteria, rel, comp)

    def _cached_list(self, indices: list[int]) -> tuple[list[tuple[int, Verdict]], list[int]]:
        """A question's pairs split in two: (index, verdict) from the cache, and the indices
        the listwise call must still grade."""
        q = self.pairs[indices[0]][0]
        out: list[tuple[int, Verdict]] = []
        todo = []
        for i in indices:
            cached = _from_cache(
                self.judge, self.cache, self.stats, q, self.pairs[i][1], self.criteria
            )
            if cached is not None:
                out.append((i, cached))
            else:
                todo.append(i)
        return out, todo

    def _stored_list(
        self, todo: list[int], graded: Sequence[tuple[CriterionVerdict, CriterionVerdict]]
    ) -> list[tuple[int, Verdict]]:
        """The listwise call's verdicts for `todo`, stored in the cache and counted."""
        judge, cache, stats, criteria = self.judge, self.cache, self.stats, self.criteria
        return [
            (i, _store(judge, cache, stats, *self.pairs[i], criteria, rel, comp))
            for i, (rel, comp) in zip(todo, graded, strict=True)
        ]

    def listwise_blocking(self, indices: list[int]) -> list[tuple[int, Verdict]]:
        """`listwise` for a judge without coroutines, on a pool thread."""
        out, todo = self._cached_list(indices)
        if todo:
            q = self.pairs[todo[0]][0]
            graded = self.judge.grade_list(q, [self.pairs[i][1] for i in todo], self.criteria)
            out += self._stored_list(todo, graded)
        return out

    async def _call(self, name: str, *args: Any) -> Any:
        if self.is_async:
            return await getattr(self.judge, "a" + name)(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, getattr(self.judge, name), *args)

    async def _once(self, key: str, ask: Callable[[], Any]) -> tuple[Any, bool]:
        """(ask()'s result, False), or (the result of the same ask in flight, True)."""
        if key in self.flying:
            return await asyncio.shield(self.flying[key]), True
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.flying[key] = fut
        try:
            result = await ask()
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: a waiter may not exist
            raise
        finally:
            self.flying.pop(key, None)
        fut.set_result(result)
        return result, False

    async def criterion(self, q: str, c: str, name: str, text: str) -> CriterionVerdict:
        """One criterion: `grade_cached` on the loop."""
        key = verdict_key(self.identity, text, q, c)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            verdict = CriterionVerdict(**{**hit.to_dict(), "cached": True})
        else:
            verdict, shared = await self._once(key, lambda: self._pay(key, q, c, name, text))
            if shared:
                verdict = _shared_copy(verdict)
        self.stats.record(verdict)
        return verdict

    async def _pay(self, key: str, q: str, c: str, name: str, text: str) -> CriterionVerdict:
        """Claim the verdict across workers (`VerdictCache.claim`, which may wait for
        another process, so off the loop), ask the judge, keep what it said."""
        cache = self.cache
        if cache is not None and hasattr(cache, "claim"):
            claimed = await asyncio.to_thread(cache.claim, key)
            if claimed is not None:  # another worker paid for it meanwhile
                return CriterionVerdict(**{**claimed.to_dict(), "cached": True})
        try:
            verdict = await self._call("grade", q, c, name, text)
        except BaseException:
            if cache is not None and hasattr(cache, "release"):
                cache.release(key)
            raise
        if cache is not None:
            cache.put(key, verdict)
        return verdict

    async def pair(self, i: int) -> Verdict:
        """Both criteria of pair i, as the judge's mode spends calls."""
        q, c = self.pairs[i]
        criteria = self.criteria
        if self.judge.mode not in PAIRWISE_MODES:  # pointwise, extractive, ensemble
            rel = await self.criterion(q, c, "relevant", criteria.relevant)
            if rel.value is True:
                comp = await self.criterion(q, c, "complete", criteria.complete)
            elif rel.error:
                comp = CriterionVerdict(
                    criterion="complete", value=None, error="not asked: relevance failed"
                )
            else:
                comp = _not_asked()
            return Verdict(relevant=rel, complete=comp)
        cached = _from_cache(self.judge, self.cache, self.stats, q, c, criteria)
        if cached is not None:
            return cached
        key = "both\0" + verdict_key(self.identity, criteria.relevant, q, c)
        (rel, comp), shared = await self._once(
            key, lambda: self._call("grade_both", q, c, criteria)
        )
        if shared:
            rel, comp = _shared_copy(rel), _shared_copy(comp)
            for v in (rel, comp):
                self.stats.record(v)
            return Verdict(relevant=rel, complete=comp)
        return _store(self.judge, self.cache, self.stats, q, c, criteria, rel, comp)

    async def listwise(self, indices: list[int]) -> list[tuple[int, Verdict]]:
        """A question's pairs: the cached ones, then one call for the rest."""
        out, todo = self._cached_list(indices)
        if todo:
            q = self.pairs[todo[0]][0]
            graded = await self._call(
                "grade_list", q, [self.pairs[i][1] for i in todo], self.criteria
            )
            out += self._stored_list(todo, graded)
        return out


def _shared_copy(verdict: CriterionVerdict) -> CriterionVerdict:
    """A verdict another pair paid for in this same moment: a cache hit when it
    succeeded; an error is this pair's error too, at no cost of its own."""
    if verdict.error is None:
        return replace(verdict, cached=True)
    return replace(
        verdict,
        calls=0,
        prompt_tokens=0,
        completion_tokens=0,
        latency_s=0.0,
        retries=0,
        failed_attempts=0,
    )
