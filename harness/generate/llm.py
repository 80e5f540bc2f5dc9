"""The generator's model: the judge's client and policies, with a reply cache.

Generation and critique calls go through `harness.llm.client.ChatClient` (retries,
backoff, rate limits, token accounting: the judge's policy) and a cache keyed by
(prompt version, model identity, messages, sampling settings, seed), so a rerun with the
same seed pays nothing. By default the model is the judge's: its endpoint, or the packaged
local model on a llama.cpp server on 127.0.0.1 (offline); `generate.base_url` and
`generate.model` choose another endpoint.
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
from harness.generate.prompts import PROMPT_VERSION
from harness.llm.client import ChatClient, ChatFailed, estimate_tokens
from harness.llm.ratelimit import RateLimiter
from harness.secrets import read_key, redact_url
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
    the key); `grammar` is True for llama.cpp servers, which take GBNF grammars."""

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
    ) -> None:
        self.client = client
        self.temperature = temperature
        self.identity = identity
        self.cache = cache
        self.seed = seed
        self.grammar = grammar
        self.stats = stats or GenStats()

    def key(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """The cache key of one request: prompt version, model, messages, sampling, seed."""
        blob = json.dumps(
            [PROMPT_VERSION, self.identity, messages, max_tokens, self.temperature, self.seed],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def cached(self, messages: list[dict[str, str]], max_tokens: int) -> str | None:
        """The cached reply to this request, without calling (None: not cached)."""
        if self.cache is None:
            return None
        return self.cache.get(self.key(messages, max_tokens))

    def ask(
        self, messages: list[dict[str, str]], *, max_tokens: int, grammar: str | None = None
    ) -> str:
        """The reply text, from the cache or one paid call (kept in the cache). Raises
        ChatFailed when the call still fails after the client's retries."""
        hit = self.cached(messages, max_tokens)
        if hit is not None:
            self.stats.hit()
            return hit
        if self.client is None:
            raise ChatFailed("no model to ask (dry run)", cost=_no_cost())
        try:
            reply = self.client.chat(
                messages, max_tokens=max_tokens, grammar=grammar if self.grammar else None
            )
        except ChatFailed as exc:
            c = exc.cost
            self.stats.book(c.calls, c.prompt_tokens, c.completion_tokens, error=True)
            raise
        self.stats.book(reply.cost.calls, reply.cost.prompt_tokens, reply.cost.completion_tokens)
        if self.cache is not None:
            self.cache.put(self.key(messages, max_tokens), reply.text)
        return reply.text


def _no_cost() -> Any:
    from harness.types import Cost

    return Cost()


def endpoint_settings(config: ExperimentConfig, cache_dir: Path) -> dict[str, Any]:
    """Where generation goes: `generate.base_url`/`model` when set, else the judge's
    endpoint, else the judge's local model (then `local_model` is its file and
    `base_url` is None until a server starts)."""
    g = config.generate
    if g.base_url or g.model:
        from harness.judge.factory import DEFAULT_BASE_URL

        return {
            "base_url": g.base_url or DEFAULT_BASE_URL,
            "model": g.model,
            "api_key_env": g.api_key_env,
            "local_model": None,
        }
    from harness.judge.factory import judge_settings

    settings, local = judge_settings(config.judge, cache_dir)
    return {
        "base_url": settings["base_url"],
        "model": settings["model"],
        "api_key_env": config.judge.api_key_env,
        "local_model": local,
        "sha": settings.get("spec_extra", {}).get("model_sha256", ""),
    }


def identity_of(settings: dict[str, Any]) -> str:
    """The cache identity of an endpoint's model: the local model's sha256, or the
    endpoint (credentials removed) and model name."""
    if settings.get("local_model") is not None:
        return f"local:{settings['model']}:{settings.get('sha', '')}"
    return f"{redact_url(settings['base_url'])}|{settings['model']}"


@contextlib.contextmanager
def open_generator(
    config: ExperimentConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[Generator]:
    """A Generator for the experiment, its cache in `cache_dir`; a local llama.cpp
    server is started for it when no endpoint is configured, and stopped on exit."""
    settings = endpoint_settings(config, cache_dir)
    j = config.judge
    limiter = (
        RateLimiter(j.requests_per_minute, j.tokens_per_minute)
        if j.requests_per_minute or j.tokens_per_minute
        else None
    )
    cache = ReplyCache(cache_dir / FILE)

    def client(base_url: str, api_key: str) -> ChatClient:
        return ChatClient(
            base_url=base_url,
            model=settings["model"],
            api_key=api_key,
            temperature=config.generate.temperature,
            timeout_s=j.timeout_s,
            max_retries=j.max_retries,
            logprobs=False,
            limiter=limiter,
            max_retry_after_s=j.max_retry_after_s,
        )

    try:
        identity = identity_of(settings)
        local = settings["local_model"]
        if local is None:
            key = read_key(settings["api_key_env"])
            yield Generator(
                client(settings["base_url"], key),
                identity,
                cache,
                seed=config.generate.seed,
                temperature=config.generate.temperature,
            )
            return
        from harness.llm.local import LlamaServer

        server = LlamaServer(
            local,
            alias=settings["model"],
            parallel=j.concurrency,
            log_path=(log_dir / "llama-server.log") if log_dir else None,
        )
        with server:
            yield Generator(
                client(server.base_url, ""),
                identity,
                cache,
                seed=config.generate.seed,
                temperature=config.generate.temperature,
                grammar=True,
            )
    finally:
        cache.close()


def dry_generator(config: ExperimentConfig, cache_dir: Path) -> Generator:
    """A Generator that only reads the cache (for --dry-run): nothing is started or paid."""
    settings = endpoint_settings(config, cache_dir)
    path = cache_dir / FILE
    cache = ReplyCache(path) if path.is_file() else None
    return Generator(
        None,
        identity_of(settings),
        cache,
        seed=config.generate.seed,
        temperature=config.generate.temperature,
    )


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    """The estimated prompt tokens of a request (the client's rough 4 chars a token)."""
    return estimate_tokens(messages)
