"""The generator's model: the judge's client and policies, with a reply cache.

Generation and critique calls go through `harness.llm.client.ChatClient` (retries,
backoff, rate limits, token accounting: the judge's policy) and a cache keyed by
(prompt version, model identity, messages, sampling settings, seed), so a rerun with the
same seed pays nothing. By default the model is the judge's: its endpoint, or the packaged
local model on a llama.cpp server on 127.0.0.1 (offline); `generate.base_url` and
`generate.model` choose another endpoint (`harness.llm.endpoint.generate_endpoint`).
MAX_CONSECUTIVE_FAILURES calls failing in a row (after the client's retries) declare the
endpoint down, as the judge does: the run stops instead of dropping every remaining
candidate as an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import ExperimentConfig
from harness.errors import JudgeUnavailable
from harness.generate.prompts import PROMPT_VERSION
from harness.llm.client import (
    MAX_CONSECUTIVE_FAILURES,
    ChatClient,
    ChatFailed,
    FailureStreak,
    Reply,
    estimate_tokens,
)
from harness.llm.endpoint import generate_endpoint
from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore

FILE = "generations.sqlite"


@dataclass
class GenStats:
    """What the generator's calls cost: paid calls (HTTP requests, retries included),
    cache hits, failed calls and tokens. Thread-safe."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def book(self, calls: int, prompt: int, completion: int, *, error: bool = False) -> None:
        """Add one paid call's cost."""
        with self._lock:
            self.calls += calls
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.errors += error

    def hit(self) -> None:
        """Count one answer read from the cache."""
        with self._lock:
            self.cache_hits += 1

    def to_dict(self) -> dict[str, int]:
        """The counts as plain JSON values."""
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class ReplyCache:
    """Cache key -> reply text, over a signed key-value store (SQLite by default)."""

    def __init__(self, where: str | os.PathLike[str] | KeyValueStore) -> None:
        if isinstance(where, (str, os.PathLike)):
            where = SQLiteStore(where, "generations")
        self.store = where if isinstance(where, SignedStore) else SignedStore(where, "generations")

    def get(self, key: str) -> str | None:
        """The cached reply text, or None."""
        raw = self.store.get_many([key]).get(key)
        return raw.decode("utf-8", "replace") if raw is not None else None

    def put(self, key: str, text: str) -> None:
        """Keep a reply."""
        self.store.put_many({key: text.encode()})

    def close(self) -> None:
        """Close the store."""
        self.store.close()


class Generator:
    """Asks the model, cache first. `identity` names the model and endpoint kind (never
    the key); `grammar` is True for llama.cpp servers, which take GBNF grammars.
    `max_consecutive_failures` calls failing in a row raise `JudgeUnavailable`, and so
    does every paid call after that (cached answers are still read)."""

    def __init__(
        self,
        client: ChatClient | None,
        identity: str,
        cache: ReplyCache | None,
        *,
        seed: int,
        temperature: float = 0.0,
        grammar: bool = False,
        stats: GenStats | None = None,
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
    ) -> None:
        self.client = client
        self.temperature = temperature
        self.identity = identity
        self.cache = cache
        self.seed = seed
        self.grammar = grammar
        self.stats = stats or GenStats()
        self._streak = FailureStreak(max_consecutive_failures)
        self._down: str | None = None

    @property
    def local(self) -> bool:
        """True for the packaged local model on its llama.cpp server (the only server
        this generator sends grammars to)."""
        return self.grammar

    def key(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        check: bool = False,
        p_yes: bool = False,
    ) -> str:
        """The cache key of one request: prompt version, model, messages, sampling, seed;
        `p_yes` (a reply kept with its probabilities: `ask_p_yes`) keys it apart."""
        temperature = 0.0 if check else self.temperature
        parts: list[Any] = [PROMPT_VERSION, self.identity, messages, max_tokens, temperature]
        parts.append(self.seed)
        if p_yes:
            parts.append("p_yes")
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def cached(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        check: bool = False,
        p_yes: bool = False,
    ) -> str | None:
        """The cached reply to this request, without calling (None: not cached)."""
        if self.cache is None:
            return None
        return self.cache.get(self.key(messages, max_tokens, check, p_yes))

    def ask(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        check: bool = False,
    ) -> str:
        """The reply text, from the cache or one paid call (kept in the cache). Raises
        ChatFailed when the call still fails after the client's retries, and
        JudgeUnavailable once calls have failed `max_consecutive_failures` times in a row.

        `check` asks at temperature 0: a filter's question (a critique score, "is it
        answered?", the source's answer) takes the model's most likely reply, where the
        writing calls sample at `temperature` for varied questions. Sampled at 0.7 (and
        no seed sent to the server), a yes the model holds at 60% would come out no
        about one time in three (0.6 and 0.4 raised to 1/0.7 and renormalised: 0.64 and
        0.36), and a run from a cold cache filtered differently. Greedy is not
        bit-exact either: the local server's batched arithmetic differs with what else
        it is running, so a near tie can still go either way between cold runs (two
        cold `--n 6` runs on the handbook scored one same question's groundedness 4 and
        5). Sending the server a seed as well did not make such runs write the same
        questions, so it is not sent."""
        hit = self.cached(messages, max_tokens, check)
        if hit is not None:
            self.stats.hit()
            return hit
        reply = self._paid(messages, max_tokens, grammar, 0.0 if check else None)
        if self.cache is not None:
            self.cache.put(self.key(messages, max_tokens, check), reply.text)
        return reply.text

    def ask_p_yes(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
    ) -> tuple[str, list[float | None]]:
        """A check's reply (temperature 0, as `ask` with `check`) and P(yes) at each of
        its yes/no answers, in order (`harness.judge.parsing.p_yes_per_answer`; empty
        where the endpoint gives no logprobs), from the cache or one paid call that asks
        for logprobs; kept in the cache with them, under a key of their own."""
        from harness.judge.parsing import p_yes_per_answer

        hit = self.cached(messages, max_tokens, check=True, p_yes=True)
        if hit is not None:
            obj = json.loads(hit)
            self.stats.hit()
            return str(obj["text"]), [p if p is None else float(p) for p in obj["p_yes"]]
        reply = self._paid(messages, max_tokens, grammar, 0.0, logprobs=True)
        p = p_yes_per_answer(reply.tokens)
        if self.cache is not None:
            key = self.key(messages, max_tokens, check=True, p_yes=True)
            self.cache.put(key, json.dumps({"text": reply.text, "p_yes": p}))
        return reply.text, p

    def _paid(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        grammar: str | None,
        temperature: float | None,
        logprobs: bool | None = None,
    ) -> Reply:
        """One paid call (the grammar sent to a local server only), booked in the stats
        and the failure streak."""
        if self.client is None:
            raise ChatFailed("no model to ask (dry run)", cost=_no_cost())
        if self._down is not None:
            raise JudgeUnavailable(self._down)
        try:
            reply = self.client.chat(
                messages,
                max_tokens=max_tokens,
                grammar=grammar if self.grammar else None,
                temperature=temperature,
                logprobs=logprobs,
            )
        except ChatFailed as exc:
            c = exc.cost
            self.stats.book(c.calls, c.prompt_tokens, c.completion_tokens, error=True)
            self._count_failure(exc.error)
            raise
        self._streak.answered()
        self.stats.book(reply.cost.calls, reply.cost.prompt_tokens, reply.cost.completion_tokens)
        return reply

    def _count_failure(self, error: str) -> None:
        """One more call failed in a row; at the streak's limit the endpoint is declared
        down, and stays so for every later paid call."""
        failures = self._streak.failed()
        if failures >= self._streak.limit and self._down is None:
            where = self.client.describe() if self.client is not None else self.identity
            self._down = (
                f"generation stopped: {where} failed {failures} calls in a row; last error: {error}"
            )
        down = self._down
        if down is not None:
            raise JudgeUnavailable(down) from None


def _no_cost() -> Any:
    from harness.types import Cost

    return Cost()


@contextlib.contextmanager
def open_generator(
    config: ExperimentConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[Generator]:
    """A Generator for the experiment, its cache in `cache_dir`; the endpoint is
    `harness.llm.endpoint.generate_endpoint`'s (a local llama.cpp server is started for
    the local model, and stopped on exit)."""
    endpoint = generate_endpoint(config, cache_dir)
    j = config.judge
    cache = ReplyCache(cache_dir / FILE)
    try:
        with endpoint.serve(parallel=j.concurrency, log_dir=log_dir) as base_url:
            client = ChatClient(
                base_url=base_url,
                model=endpoint.model,
                api_key=endpoint.api_key(),
                temperature=config.generate.temperature,
                timeout_s=j.timeout_s,
                max_retries=j.max_retries,
                logprobs=False,
                limiter=endpoint.limiter(),
                max_retry_after_s=j.max_retry_after_s,
            )
            yield Generator(
                client,
                endpoint.identity(),
                cache,
                seed=config.generate.seed,
                temperature=config.generate.temperature,
                grammar=endpoint.is_local,
            )
    finally:
        cache.close()


def dry_generator(config: ExperimentConfig, cache_dir: Path) -> Generator:
    """A Generator that only reads the cache (for --dry-run): nothing is started or paid."""
    path = cache_dir / FILE
    cache = ReplyCache(path) if path.is_file() else None
    return Generator(
        None,
        generate_endpoint(config, cache_dir).identity(),
        cache,
        seed=config.generate.seed,
        temperature=config.generate.temperature,
    )


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    """The estimated prompt tokens of a request (the client's rough 4 chars a token)."""
    return estimate_tokens(messages)
