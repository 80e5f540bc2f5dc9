"""The one client that speaks to LLMs: any OpenAI-compatible chat endpoint.

The judge, the llm reranker and the question generator all call `ChatClient.chat`, so
retries, backoff, rate limits, logprobs and token accounting have one policy:

- 429 (honouring Retry-After), timeouts, dropped connections and 5xx are retried up to
  `max_retries` times with full-jitter backoff; what still fails raises the SDK's
  `openai.APIError` for the caller to record;
- a refused key (401/403), an unknown model (404) or an endpoint that stays unreachable
  raise `JudgeUnavailable`: grinding on would only record errors;
- an endpoint that refuses logprobs (400, or llama-cpp-python's 500) is asked again
  without them, and from then on never with them.

The API key is held only by the SDK client object: it is never part of a spec, an
identity, a log line or an error message.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loguru import logger

from harness.errors import JudgeUnavailable
from harness.llm.ratelimit import RateLimiter

TopLogprobs = list[tuple[str, float]]
"""A token's alternatives at one position: (token text, natural-log probability)."""


@dataclass(frozen=True)
class Reply:
    """One answer of the endpoint, with what it cost."""

    text: str
    tokens: list[tuple[str, TopLogprobs]]
    """Each generated token with its top alternatives (empty without logprobs)."""
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    """Seconds of the successful request (retries and waits not included)."""
    retries: int
    """Requests retried before this answer came."""


def estimate_tokens(messages: Sequence[dict[str, str]]) -> int:
    """A rough prompt size before the call: 4 characters a token, plus chat overhead."""
    return sum(len(m["content"]) for m in messages) // 4 + 8 * len(messages)


def safe_error(message: str) -> str:
    """An error text without anything that looks like a bearer key, at most 300 chars."""
    return re.sub(r"(sk-|Bearer\s+)[A-Za-z0-9_\-]{6,}", r"\1***", message)[:300]


class ChatClient:
    """Chat completions from one endpoint and model, with our retry and budget policy."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        temperature: float = 0.0,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        logprobs: bool = True,
        limiter: RateLimiter | None = None,
        retry_base_s: float = 0.5,
        retry_cap_s: float = 30.0,
    ) -> None:
        import openai

        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.logprobs = logprobs
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.limiter = limiter
        # Retries are ours (counted, logged, one policy for every endpoint), not the SDK's.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )

    def describe(self) -> str:
        """The endpoint and model, for messages (never the key)."""
        return f"judge endpoint {self.base_url} (model {self.model!r})"

    def _drop_logprobs(self, exc: Exception, kwargs: dict[str, Any]) -> bool:
        """True (and logprobs off from now on) when the endpoint refused logprobs: the
        calls go on without them rather than failing one after another."""
        if not (self.logprobs and "logprob" in str(exc).lower()):
            return False
        logger.warning("{} does not offer logprobs; judging without P(yes)", self.describe())
        self.logprobs = False
        kwargs.pop("logprobs", None)
        kwargs.pop("top_logprobs", None)
        return True

    def backoff_s(self, attempt: int, exc: Exception) -> float:
        """Seconds to wait before retry `attempt` (0-based): the server's Retry-After when
        it gives one (capped), else full jitter: uniform(0, min(cap, base * 2**attempt))."""
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            value = headers.get(name) if hasattr(headers, "get") else None
            if value is not None:
                try:
                    wait = float(value) * scale
                except ValueError:
                    continue
                if 0 <= wait <= self.retry_cap_s:
                    return wait
        return random.uniform(0, min(self.retry_cap_s, self.retry_base_s * 2**attempt))

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
    ) -> Reply:
        """One answer from the endpoint, retrying rate limits (429, honouring Retry-After),
        timeouts, connection drops and 5xx up to `max_retries` times with backoff.

        `grammar` (a GBNF grammar) is sent to llama.cpp servers, which constrain the
        answer to it; other endpoints may reject the unknown field."""
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": max_tokens,
        }
        if self.logprobs:
            kwargs.update(logprobs=True, top_logprobs=top_logprobs)
        if grammar:
            kwargs["extra_body"] = {"grammar": grammar}
        retries = 0
        while True:
            if self.limiter is not None:
                self.limiter.acquire(estimate_tokens(messages) + max_tokens)
            start = time.perf_counter()
            try:
                resp = self._client.chat.completions.create(**kwargs)
                break
            except openai.BadRequestError as exc:
                if self._drop_logprobs(exc, kwargs):
                    continue
                raise
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise JudgeUnavailable(
                    f"{self.describe()} refused the API key (HTTP {exc.status_code}); check "
                    "the key's environment variable"
                ) from None
            except openai.NotFoundError:
                raise JudgeUnavailable(
                    f"{self.describe()} answered 404: unknown model or wrong base_url"
                ) from None
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APIConnectionError,
            ) as exc:
                # APITimeoutError is an APIConnectionError; 5xx are InternalServerError.
                if isinstance(exc, openai.InternalServerError) and self._drop_logprobs(exc, kwargs):
                    continue  # llama-cpp-python answers 500 without --logits_all
                if retries >= self.max_retries:
                    if isinstance(exc, openai.APIConnectionError) and not isinstance(
                        exc, openai.APITimeoutError
                    ):
                        raise JudgeUnavailable(
                            f"{self.describe()} is unreachable ({type(exc).__name__})"
                        ) from None
                    raise
                time.sleep(self.backoff_s(retries, exc))
                retries += 1
        latency = time.perf_counter() - start
        usage = resp.usage
        choice = resp.choices[0]
        lp = getattr(choice, "logprobs", None)
        tokens = [
            (tok.token, [(t.token, t.logprob) for t in tok.top_logprobs or []])
            for tok in ((lp.content or []) if lp is not None else [])
        ]
        return Reply(
            text=choice.message.content or "",
            tokens=tokens,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_s=latency,
            retries=retries,
        )


def token_cost(
    prompt_price_per_mtok: float,
    completion_price_per_mtok: float,
    prompt_tokens: int,
    completion_tokens: int,
) -> float | None:
    """Dollars for these tokens: prompt_tokens * prompt price / 1e6 + completion_tokens *
    completion price / 1e6, rounded to 6 places; None when no price is set. What a run
    paid and what a dry run estimates."""
    if not (prompt_price_per_mtok or completion_price_per_mtok):
        return None
    return round(
        (prompt_tokens * prompt_price_per_mtok + completion_tokens * completion_price_per_mtok)
        / 1e6,
        6,
    )
