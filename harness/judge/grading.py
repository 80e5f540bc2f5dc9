"""Judging many (question, chunk) pairs: the verdict cache first, then the judge.

`judge_pairs` spends calls as the judge's mode says, on one event loop, with
`judge.concurrency` calls in flight; against a server with a prompt cache it groups the
pairs that share a chunk; with a `LazyPlan` it judges each question in rank order and
stops once the objective is settled. It hands each verdict back as it finishes so the
caller can write results as they come. `grade_cached` and `judge_pair` are the same
logic for one verdict or one pair, waited for.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import queue
import statistics
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from harness.config import CriteriaConfig
from harness.judge.protocol import (
    PAIRWISE_MODES,
    QUESTION_FIRST_MODES,
    Judge,
    Pair,
    complete_after,
    not_asked,
    relevant_first,
)
from harness.llm import aio
from harness.stores import VerdictCache, verdict_key
from harness.types import Cost, CriterionVerdict, Verdict


@dataclass
class JudgeStats:
    """What judging cost in one run, summed from the verdicts. Thread-safe.

    `cost.calls` counts every HTTP request (retries and failed ones included), `retries`
    the requests made again, `failed_attempts` those that brought no usable answer; the
    median latency is over answered requests."""

    cost: Cost = field(default_factory=Cost)
    paid_verdicts: int = 0
    errors: int = 0
    cache_hits: int = 0
    call_latencies_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def calls(self) -> int:
        """HTTP requests made, retried and failed ones included."""
        return self.cost.calls

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens the endpoint reported."""
        return self.cost.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        """Completion tokens the endpoint reported."""
        return self.cost.completion_tokens

    @property
    def retries(self) -> int:
        """Requests made again after a failed one."""
        return self.cost.retries

    @property
    def failed_attempts(self) -> int:
        """Requests that brought no usable answer."""
        return self.cost.failed_attempts

    def record(self, verdict: CriterionVerdict) -> None:
        """Add one verdict's cost; a cached verdict counts only as a cache hit."""
        with self.lock:
            if verdict.cached:
                self.cache_hits += 1
                return
            cost = verdict.cost
            self.paid_verdicts += 1
            self.cost += cost
            if cost.answered > 0:
                self.call_latencies_s.append(cost.latency_s / cost.answered)
            if verdict.error:
                self.errors += 1

    def to_dict(self) -> dict[str, Any]:
        """The totals as run-header stats; median call latency in seconds (None: no calls)."""
        with self.lock:
            lat, cost = self.call_latencies_s, self.cost
            return {
                "judge_calls": cost.calls,
                "judge_paid_verdicts": self.paid_verdicts,
                "judge_cache_hits": self.cache_hits,
                "judge_errors": self.errors,
                "judge_retries": cost.retries,
                "judge_failed_attempts": cost.failed_attempts,
                "prompt_tokens": cost.prompt_tokens,
                "completion_tokens": cost.completion_tokens,
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
    worker paying for the same verdict right now is waited for, not paid again. Waits
    for the answer (from a thread without an event loop)."""
    grader = _Grader(judge, cache, stats)
    verdict = aio.run(grader.criterion(question, chunk_text, criterion, criterion_text))
    if cache is not None:
        cache.flush()
    return verdict


def judge_pair(
    judge: Judge,
    cache: VerdictCache | None,
    stats: JudgeStats,
    question: str,
    chunk_text: str,
    criteria: CriteriaConfig,
) -> Verdict:
    """Both criteria for one (question, chunk), one at a time, cache first: "complete"
    is asked only when the chunk was judged relevant (`relevant_first`)."""
    verdict = aio.run(_Grader(judge, cache, stats, criteria).pointwise(question, chunk_text))
    if cache is not None:
        cache.flush()
    return verdict


def cached_pair(
    cache: VerdictCache, identity: str, criteria: CriteriaConfig, q: str, c: str
) -> tuple[CriterionVerdict | None, CriterionVerdict | None]:
    """The cached relevance verdict of a pair and, only when it is a yes, its cached
    "complete" (a "no" needs none). None where nothing was paid yet."""
    return _pair_from(cache.get, identity, criteria, q, c)


def _pair_from(
    get: Callable[[str], CriterionVerdict | None],
    identity: str,
    criteria: CriteriaConfig,
    q: str,
    c: str,
) -> tuple[CriterionVerdict | None, CriterionVerdict | None]:
    """`cached_pair` through any lookup of a verdict key."""
    rel = get(verdict_key(identity, criteria.relevant, q, c))
    if rel is None or not rel.value:
        return rel, None
    return rel, get(verdict_key(identity, criteria.complete, q, c))


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
    on_idle: Callable[[], None] | None = None,
) -> list[Verdict]:
    """Verdicts for (question text, chunk text) pairs, in the order given.

    The judge's `mode` decides the calls: "pointwise", "extractive" and "ensemble" ask
    relevance, then "complete" of relevant chunks; "both", "graded" and "criteria" make
    one call per pair; "listwise" one call per question for its uncached chunks.

    Requests run on one event loop (`harness.llm.aio`), at most `concurrency` (default:
    the judge's own) at a time: as many workers, each awaiting one call (a judge that
    only blocks runs on one thread per worker), or, where a pair's calls come one after
    another on a judge without a prompt cache (pointwise modes, lazy chains), twice as
    many sharing that many call permits, so the last pairs' second calls leave no permit
    idle. A verdict that is already being asked for is awaited, not asked twice.
    Against a judge with a prompt cache of its own (`judge.prompt_cache`, the local
    llama.cpp server) the pairs that share a chunk are judged one after another by one
    worker, whose requests go to a server slot of its own, so the slot keeps the task
    and the passage and computes a passage once for all its questions and both criteria
    (the pairs that share a question, for a mode that puts the question first); in the
    pointwise modes the worker asks a chunk's pairs one criterion at a time (relevance
    of each, then "complete" of the relevant ones), which the prompt's criterion before
    its question turns into prompts that differ only in their last part. Elsewhere
    every pair is independent, so no chunk group becomes a critical path.

    With `lazy`, each chain is judged in rank order and stops once settled; the pairs it
    skips come back as `not_judged()` (listwise judging asks all of a question's chunks
    in one call, so it ignores `lazy`). `on_done(i, verdict)` is called from the calling
    thread as each pair finishes (skipped ones included), so the caller can write results
    as they come; `on_idle()` each time those handed over so far are all it has, before
    it waits for more (the caller writes what they finished in one go). An exception (a
    judge that is down, Ctrl-C) stops the work at once; verdicts already paid are in the
    cache (stored by its writer within its flush interval). The cache's writes are
    batched off the judging path (`VerdictCache`); every verdict is stored before this
    returns.
    """
    width = max(1, concurrency or judge.concurrency)
    items = _work_items(pairs, judge, lazy)
    done: queue.SimpleQueue[_Done] = queue.SimpleQueue()  # a put costs the loop no lock
    grader = _Grader(judge, cache, stats, criteria)
    run = _Run(grader, pairs, lazy.settled if lazy is not None else None, done.put)
    ended = threading.Event()  # the workers are done, or gone after a cancel

    async def run_all() -> None:
        try:
            await run.all(items, width)
        finally:
            ended.set()

    future = aio.submit(run_all()) if items else None
    if future is not None:  # a failure before any worker starts (the cache's first read)
        future.add_done_callback(functools.partial(_hand_over, put=done.put))
    # on an exception the cache's writer (and its close) store what was paid
    verdicts = _collect(done, len(pairs), future, on_done, on_idle, ended)
    if cache is not None:
        cache.flush()  # what was judged is stored when this returns
    return verdicts


_T = TypeVar("_T")


def _hand_over(future: Future[None], put: Callable[[_Done], None]) -> None:
    """Hand the exception `future` ended with to the collecting thread, which raises the
    first it gets (the workers hand theirs over themselves; the look-up before they start
    has no one else to): without it a cache that fails its first read left the caller
    waiting for verdicts forever."""
    if not future.cancelled() and future.exception() is not None:
        put((0, None, future.exception()))


_Done = tuple[int, Verdict | None, BaseException | None]
"""(pair index, its verdict, or the exception that stops the work)."""

_Item = tuple[list[int], bool]
"""Pair indices a worker judges in order, and whether they are a lazy chain."""


def _work_items(
    pairs: Sequence[tuple[str, str]], judge: Judge, lazy: LazyPlan | None
) -> list[_Item]:
    """The pairs as the workers take them: a question's (listwise), a lazy chain, a
    chunk's (a judge with a prompt cache; a question's in QUESTION_FIRST_MODES), or one
    pair each."""
    if judge.mode == "listwise":
        return [(ix, False) for ix in _group(pairs, 0)]
    if lazy is not None:
        return [(list(chain), True) for chain in lazy.chains if chain]
    if judge.prompt_cache:
        # what the prompt puts first is what the server's cache can keep
        by = 0 if judge.mode in QUESTION_FIRST_MODES else 1
        return [(ix, False) for ix in _group(pairs, by)]
    return [([i], False) for i in range(len(pairs))]


def _shares_permits(judge: Judge, items: Sequence[_Item]) -> bool:
    """Whether an item may ask calls one after another on a judge without a server
    prompt cache (whose workers each keep a server slot): a pointwise pair (relevance,
    then completeness) or a lazy chain."""
    if judge.prompt_cache or judge.mode == "listwise":
        return False
    return judge.mode not in PAIRWISE_MODES or any(chain for _, chain in items)


def _group(pairs: Sequence[tuple[str, str]], by: int) -> list[list[int]]:
    """Pair indices grouped by question (by=0) or chunk (by=1), in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(pair[by], []).append(i)
    return list(groups.values())


def _collect(
    done: queue.SimpleQueue[_Done],
    n: int,
    future: Future[None] | None,
    on_done: Callable[[int, Verdict], None] | None,
    on_idle: Callable[[], None] | None,
    ended: threading.Event,
) -> list[Verdict]:
    """The n verdicts as the workers hand them over, passed to `on_done` on this thread
    (and `on_idle()` whenever none is waiting after it); the first exception cancels the
    rest and is raised here, once they are gone (or 5 s have passed), so the caller
    closes its cache after their last claim and verdict."""
    results: list[Verdict | None] = [None] * n
    try:
        for _ in range(n):
            i, verdict, exc = done.get()
            if exc is not None:
                raise exc
            assert verdict is not None
            results[i] = verdict
            if on_done:
                on_done(i, verdict)
            if on_idle and done.empty():
                on_idle()
    except BaseException:
        if future is not None:
            # a cancelled future is done at once, its task is not: wait for the workers
            # to unwind (the requests in flight end at once; a blocking judge's thread
            # is left to finish)
            future.cancel()
            ended.wait(timeout=5)
        raise
    if future is not None:
        future.result()
    return [r for r in results if r is not None]


class _Run:
    """The workers of one `judge_pairs` on the loop, each taking the next item."""

    def __init__(
        self,
        grader: _Grader,
        pairs: Sequence[tuple[str, str]],
        settled: Callable[[Sequence[Verdict]], bool] | None,
        put: Callable[[_Done], None],
    ) -> None:
        self.grader, self.pairs, self.settled, self.put = grader, pairs, settled, put

    async def all(self, items: list[_Item], width: int) -> None:
        """Judge every item with `width` calls in flight at most (`judge_pairs`).

        Claims are taken ahead: as a worker takes an item, the first pair of the item
        `width` places further is claimed, so a worker seldom waits for a claim's round
        trip (a claim held ahead lasts about one call). What was claimed and never asked
        is given up once the work is over. When the first items have a verdict to pay,
        the judge opens its connections (`Judge.warm`) while the rest is looked up."""
        todo = collections.deque(items)
        workers = width
        if width > 1 and _shares_permits(self.grader.judge, items):
            # an item asks its calls one after another: twice the workers share `width`
            # call permits, so no worker's second call leaves a permit idle at the end
            workers = 2 * width
            self.grader.permits = asyncio.Semaphore(width)
        # the pairs the workers start with are looked up first: if one is to be paid,
        # the judge opens its connections while the rest is looked up and claimed
        head = [self.pairs[indices[0]] for indices, _ in items[:workers]]
        await asyncio.to_thread(self.grader.prefetch, head)
        if self.grader.to_pay(head):
            self.grader.judge.warm(min(width, len(items)))
        await asyncio.to_thread(self.grader.prefetch, self.pairs)
        claimed = 0  # items whose first pair is claimed ahead

        def claim_ahead(taken: int) -> None:
            nonlocal claimed
            while claimed < min(len(items), taken + width + 1):
                self.grader.claim_ahead(*self.pairs[items[claimed][0][0]])
                claimed += 1

        async def worker(index: int) -> None:
            with aio.own_thread(index):
                while todo:
                    indices, chain = todo.popleft()
                    try:
                        claim_ahead(len(items) - len(todo))
                        await self.item(indices, chain)
                    except asyncio.CancelledError:
                        raise
                    except BaseException as exc:  # handed to the calling thread, which
                        # re-raises (and cancels the rest); raised here, a KeyboardInterrupt
                        # from a judge's thread would end the loop every later call needs
                        self.put((indices[0], None, exc))
                        return

        try:
            await asyncio.gather(*(worker(i) for i in range(min(workers, len(items)))))
        finally:
            self.grader.unclaim_ahead()

    async def item(self, indices: list[int], chain: bool) -> None:
        """One item's pairs in order; a lazy chain stops once settled."""
        if self.grader.judge.mode == "listwise":
            for i, verdict in await self.grader.listwise(self.pairs, indices):
                self.put((i, verdict, None))
            return
        if not chain and self.grader.by_criterion:
            await self._by_criterion(indices)
            return
        got: list[Verdict] = []
        for n, i in enumerate(indices):
            if n + 1 < len(indices):  # the item's next pair, claimed while this one is asked
                self.grader.claim_ahead(*self.pairs[indices[n + 1]])
            verdict = await self.grader.pair(*self.pairs[i])
            self.put((i, verdict, None))
            got.append(verdict)
            if chain and self.settled is not None and self.settled(got):
                for j in indices[n + 1 :]:
                    self.grader.unclaim_ahead(*self.pairs[j])
                    self.put((j, not_judged(), None))
                return

    async def _by_criterion(self, indices: list[int]) -> None:
        """A chunk's pairs one criterion at a time: the relevance of each, then the
        completeness of the relevant ones. The prompt puts the criterion before the
        question, so one prompt differs from the one before only in its question and
        the server's prompt cache keeps the passage and the criterion's wording."""
        g = self.grader
        pairs = [self.pairs[i] for i in indices]
        for q, c in pairs:
            g.claim_ahead(q, c)
        try:
            rels = [await g.criterion(q, c, "relevant", g.criteria.relevant) for q, c in pairs]
            for i, (q, c), rel in zip(indices, pairs, rels, strict=True):
                ask = functools.partial(g.criterion, q, c, "complete", g.criteria.complete)
                comp = await complete_after(rel, ask)
                self.put((i, Verdict(relevant=rel, complete=comp), None))
        finally:
            for q, c in pairs:
                g.unclaim_ahead(q, c)


class _Grader:
    """The calls for some pairs, on the event loop: the cache first, a verdict already in
    flight awaited rather than asked twice, then the judge's coroutines."""

    def __init__(
        self,
        judge: Judge,
        cache: VerdictCache | None,
        stats: JudgeStats,
        criteria: CriteriaConfig | None = None,
    ) -> None:
        self.judge, self.cache, self.stats = judge, cache, stats
        self.criteria = criteria or CriteriaConfig()
        self.identity = judge.identity()
        self.flying: dict[str, asyncio.Future[Any]] = {}
        self.known: dict[str, CriterionVerdict] = {}
        """Verdicts read from the cache in one go (`prefetch`) or paid by this grader."""
        self.missing: set[str] = set()
        """Keys `prefetch` found absent: looked up again only by the claim that pays."""
        self._claims: list[tuple[str, asyncio.Future[CriterionVerdict | None], bool]] = []
        self._early: dict[str, asyncio.Future[CriterionVerdict | None]] = {}
        """Claims taken before their call (`claim_ahead`), for `_pay` to take up."""
        self._claimer: asyncio.Future[None] | None = None
        self._key_memo: dict[tuple[str, str, str], str] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        self.permits: asyncio.Semaphore | None = None
        """Call permits shared by the workers (`_Run.all`), else one call per worker."""
        self.by_criterion = judge.prompt_cache and judge.mode not in (
            *PAIRWISE_MODES,
            "listwise",
        )
        """Whether a chunk's pairs are judged one criterion at a time (`_Run._by_criterion`):
        a judge with a prompt cache of its own, in a mode that asks one criterion a call."""

    def prefetch(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Read the cached verdicts of both criteria of `pairs` in one query, so judging
        them looks nothing up one by one (and hash their keys, which the claims reuse)."""
        if self.cache is None:
            return
        looked = self.known.keys() | self.missing
        # hashed once, here; what an earlier prefetch looked up is not read again
        keys = [k for q, c in pairs for k in self._keys(q, c) if k not in looked]
        self.known.update(self.cache.get_many(keys))
        self.missing.update(k for k in keys if k not in self.known)

    def to_pay(self, pairs: Sequence[tuple[str, str]]) -> bool:
        """Whether a call may be paid for `pairs`: no cache, or a key `prefetch` found
        absent (a verdict paid meanwhile by another worker is found by its claim)."""
        return self.cache is None or any(k in self.missing for p in pairs for k in self._keys(*p))

    def _lookup(self, key: str) -> CriterionVerdict | None:
        """The cached verdict of `key`: from `prefetch` when it looked, else the cache."""
        if key in self.known:
            return self.known[key]
        if key in self.missing or self.cache is None:
            return None
        return self.cache.get(key)

    async def _claim(self, key: str) -> CriterionVerdict | None:
        """`VerdictCache.claim` of `key`, taken together with the keys the other workers
        claim at the same moment (one statement for them all, off the loop); a key another
        live worker holds is then waited for alone."""
        return await self._claim_soon(key)

    def _claim_soon(self, key: str, wait: bool = True) -> asyncio.Future[CriterionVerdict | None]:
        """Queue `key` for the next claim batch; its future is what `_claim` returns, or
        `_BUSY` without `wait` when another live worker holds the key."""
        fut: asyncio.Future[CriterionVerdict | None] = asyncio.get_running_loop().create_future()
        self._claims.append((key, fut, wait))
        if self._claimer is None or self._claimer.done():
            self._claimer = asyncio.ensure_future(self._claim_batches())
        return fut

    async def _claim_batches(self) -> None:
        """Claim the queued keys, batch after batch, until none are queued."""
        cache = self.cache
        assert cache is not None
        while self._claims:
            batch, self._claims = self._claims, []
            try:
                got, paid = await asyncio.to_thread(cache.claim_many, [k for k, *_ in batch])
            except BaseException as exc:
                for _, fut, _ in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for key, fut, wait in batch:
                if key in got:
                    if fut.done():  # its worker is gone: nobody pays
                        cache.release(key)
                    else:
                        fut.set_result(None)
                elif key in paid:
                    if not fut.done():
                        fut.set_result(paid[key])
                elif not wait:
                    if not fut.done():
                        fut.set_result(_BUSY)
                else:
                    task = asyncio.ensure_future(self._claim_alone(key, fut))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _claim_alone(self, key: str, fut: asyncio.Future[CriterionVerdict | None]) -> None:
        """A key another worker holds: wait for it (`VerdictCache.claim`), off the loop."""
        cache = self.cache
        assert cache is not None
        try:
            got = await asyncio.to_thread(cache.claim, key)
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc)
            return
        if not fut.done():
            fut.set_result(got)
        elif got is None:
            cache.release(key)

    async def _once(self, key: str, ask: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
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
        """One criterion: the cache, the same ask in flight, or the judge."""
        key = self._key(text, q, c)
        hit = self._lookup(key)
        if hit is not None:
            verdict = replace(hit, cached=True)
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
        if cache is not None:
            early = self._early.pop(key, None)
            claimed = await early if early is not None else _BUSY
            if claimed is _BUSY:
                claimed = await self._claim(key)
            if claimed is not None:  # another worker paid for it meanwhile
                return replace(claimed, cached=True)
        try:
            verdict = await self._call(lambda: self.judge.agrade(q, c, name, text))
        except BaseException:
            if cache is not None:
                cache.release(key)
            raise
        if cache is not None:
            cache.put(key, verdict)  # stored by the cache's writer, off this path
            if not verdict.error:
                self.known[key] = verdict
        return verdict

    async def _call(self, ask: Callable[[], Awaitable[_T]]) -> _T:
        """One call to the judge, under a shared call permit when the workers share them.
        A judge over HTTP gives the permit up as its answer arrives (`aio.CallPermit`),
        so the next worker's request goes out while this answer is parsed and stored."""
        if self.permits is None:
            return await ask()
        permit = aio.CallPermit(self.permits)
        await permit.hold()
        with aio.holding(permit):
            return await ask()

    async def pointwise(self, q: str, c: str) -> Verdict:
        """Both criteria one at a time, "complete" only of a relevant chunk."""

        async def ask(name: str, text: str) -> CriterionVerdict:
            return await self.criterion(q, c, name, text)

        # both criteria are claimed in one batch (unless claimed ahead already), so a
        # relevant chunk's second call needs no claim round trip
        self.claim_ahead(q, c)
        try:
            rel, comp = await relevant_first(ask, self.criteria)
        finally:
            self.unclaim_ahead(q, c)  # what was not asked
        return Verdict(relevant=rel, complete=comp)

    def _key(self, text: str, q: str, c: str) -> str:
        """`verdict_key` of a criterion of a pair, hashed once per grader (a pair's keys
        are wanted by its claims, its lookups and its release)."""
        key = self._key_memo.get((text, q, c))
        if key is None:
            key = self._key_memo[(text, q, c)] = verdict_key(self.identity, text, q, c)
        return key

    def _keys(self, q: str, c: str) -> tuple[str, str]:
        return self._key(self.criteria.relevant, q, c), self._key(self.criteria.complete, q, c)

    def claim_ahead(self, q: str, c: str) -> None:
        """Queue early claims of a pair's criteria that are neither known, asked nor
        claimed already, without waiting for another holder (`_BUSY`): `_pay` takes them
        up. Only the pointwise modes claim (one call per criterion)."""
        if self.cache is None or self.judge.mode in PAIRWISE_MODES or self.judge.mode == "listwise":
            return
        for key in self._keys(q, c):
            if key not in self._early and key not in self.flying and self._lookup(key) is None:
                self._early[key] = self._claim_soon(key, wait=False)

    def unclaim_ahead(self, q: str | None = None, c: str | None = None) -> None:
        """Give up the early claims nobody took up: a pair's, or without a pair every
        one left; they go at the cache's next flush."""
        keys = list(self._early) if q is None or c is None else self._keys(q, c)
        for key in keys:
            early = self._early.pop(key, None)
            if early is not None:
                early.add_done_callback(self._unclaim_early(key))

    def _unclaim_early(self, key: str) -> Callable[[asyncio.Future[Any]], None]:
        cache = self.cache
        assert cache is not None

        def done(fut: asyncio.Future[Any]) -> None:
            if not fut.cancelled() and fut.exception() is None and fut.result() is None:
                cache.release_later(key)

        return done

    async def pair(self, q: str, c: str) -> Verdict:
        """Both criteria of a pair, as the judge's mode spends calls."""
        if self.judge.mode not in PAIRWISE_MODES:  # pointwise, extractive, ensemble
            return await self.pointwise(q, c)
        cached = self._from_cache(q, c)
        if cached is not None:
            return cached

        async def pay() -> Verdict:
            paid = await self._claim_pair(q, c)
            if paid is not None:
                return paid
            try:
                graded = await self._call(lambda: self.judge.agrade_both(q, c, self.criteria))
            except BaseException:
                self._release_pair(q, c)
                raise
            return self._store(q, c, graded)

        key = "both\0" + self._key(self.criteria.relevant, q, c)
        verdict, shared = await self._once(key, pay)
        if not shared:
            return verdict
        rel, comp = _shared_copy(verdict.relevant), _shared_copy(verdict.complete)
        for v in (rel, comp):
            if v.asked:  # a "complete" never asked is no cache hit
                self.stats.record(v)
        return Verdict(relevant=rel, complete=comp)

    async def listwise(
        self, pairs: Sequence[tuple[str, str]], indices: list[int]
    ) -> list[tuple[int, Verdict]]:
        """A question's pairs: the cached ones, those another worker paid meanwhile
        (`_claim_pair`), then one call for the rest."""
        out: list[tuple[int, Verdict]] = []
        todo: list[int] = []
        for i in indices:
            cached = self._from_cache(*pairs[i])
            if cached is not None:
                out.append((i, cached))
            else:
                todo.append(i)
        if todo:
            claims = await asyncio.gather(
                *(self._claim_pair(*pairs[i]) for i in todo), return_exceptions=True
            )
            failed = next((r for r in claims if isinstance(r, BaseException)), None)
            if failed is not None:
                for i, r in zip(todo, claims, strict=True):
                    if r is None:  # held: given up, as nobody pays it now
                        self._release_pair(*pairs[i])
                raise failed
            out += [(i, r) for i, r in zip(todo, claims, strict=True) if isinstance(r, Verdict)]
            todo = [i for i, r in zip(todo, claims, strict=True) if r is None]
        if todo:
            q = pairs[todo[0]][0]
            try:
                graded = await self.judge.agrade_list(q, [pairs[i][1] for i in todo], self.criteria)
            except BaseException:
                for i in todo:
                    self._release_pair(*pairs[i])
                raise
            out += [(i, self._store(*pairs[i], g)) for i, g in zip(todo, graded, strict=True)]
        return out

    async def _claim_pair(self, q: str, c: str) -> Verdict | None:
        """Before paying both criteria of a pair in one call (pairwise and listwise
        modes): claim the pair across workers (`VerdictCache.claim`) by its relevance
        key, which stands for both (they are stored together). None: this grader holds
        the claim and pays (`_store` releases it, `_release_pair` if paying fails); else
        the pair another worker paid meanwhile, read from the store (a cache hit)."""
        if self.cache is None or await self._claim(self._key(self.criteria.relevant, q, c)) is None:
            return None
        cache = self.cache
        # read again, past what `prefetch` found missing; None (its "complete" is not
        # stored) leaves it to be paid here
        return await asyncio.to_thread(self._from_cache, q, c, cache.get)

    def _release_pair(self, q: str, c: str) -> None:
        """Give up the claim `_claim_pair` took, when paying failed."""
        if self.cache is not None:
            self.cache.release(self._key(self.criteria.relevant, q, c))

    def _from_cache(
        self, q: str, c: str, get: Callable[[str], CriterionVerdict | None] | None = None
    ) -> Verdict | None:
        """Both criteria from the cache (through `get`, default what `prefetch` read),
        or None if either is missing (a relevant "no" needs no "complete")."""
        if self.cache is None:
            return None
        rel, comp = _pair_from(get or self._lookup, self.identity, self.criteria, q, c)
        if rel is None or (rel.value and comp is None):
            return None
        rel = replace(rel, cached=True)
        self.stats.record(rel)
        if comp is not None:
            comp = replace(comp, cached=True)
            self.stats.record(comp)
        return Verdict(relevant=rel, complete=comp or not_asked())

    def _store(self, q: str, c: str, graded: Pair) -> Verdict:
        """A pair's fresh verdicts, counted and kept in the cache."""
        rel, comp = graded
        for v, text in ((rel, self.criteria.relevant), (comp, self.criteria.complete)):
            self.stats.record(v)
            if self.cache is not None:
                key = verdict_key(self.identity, text, q, c)
                self.cache.put(key, v)
                if not v.error:
                    self.known[key] = v
        return Verdict(relevant=rel, complete=comp)


_BUSY = CriterionVerdict("busy", None, reason="claimed by another live worker")
"""What an early claim gets (by identity) when another worker holds the key."""


def _shared_copy(verdict: CriterionVerdict) -> CriterionVerdict:
    """A verdict another pair paid for in this same moment: a cache hit when it
    succeeded; an error is this pair's error too, at no cost of its own."""
    if verdict.error is None:
        return replace(verdict, cached=True)
    return verdict.with_cost(Cost())
