"""The one client that speaks to LLMs: any OpenAI-compatible chat endpoint.

The judge, the llm reranker and the question generator all call `ChatClient.chat`, so
retries, backoff, rate limits, logprobs and token accounting have one policy:

- 429 (honouring Retry-After, in seconds or as an HTTP date, up to `max_retry_after_s`),
  timeouts, dropped connections, 5xx and a 200 that is no chat completion
  (`MalformedReply`) are retried up to `max_retries` times with full-jitter backoff; what
  still fails raises `ChatFailed` for the caller to record, with what every attempt cost;
- a refused key (401/403), an unknown model (404), an endpoint that was never reachable
  or that asks to wait longer than `max_retry_after_s` raise `JudgeUnavailable`:
  grinding on would only record errors;
- an endpoint that refuses logprobs (400, or llama-cpp-python's 500) is asked again
  without them, and from then on never with them.

The API key is held only by the SDK client object: it is never part of a spec, an
identity, a log line or an error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
import os
import random
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from harness.errors import JudgeUnavailable
from harness.llm import aio
from harness.llm.ratelimit import RateLimiter
from harness.secrets import redact, redact_url, remember, remember_url

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
    calls: int = 1
    """HTTP requests made for this answer: the answered one, retries and failed ones."""
    failed_attempts: int = 0
    """Of those, the requests that brought no usable answer. `prompt_tokens` and
    `completion_tokens` include theirs where the endpoint reported them."""


@dataclass
class Attempts:
    """What the HTTP requests of one `ChatClient.chat` call cost, failed ones included."""

    calls: int = 0
    """Requests made, retries and failed ones included."""
    retries: int = 0
    """Requests made again after a failed one."""
    failed_attempts: int = 0
    """Requests that brought no usable answer."""
    prompt_tokens: int = 0
    completion_tokens: int = 0


class MalformedReply(Exception):
    """A 200 answer that is no chat completion: not JSON, no `choices`, an empty list, or
    a choice without a message. Retried like a 5xx."""

    def __init__(self, message: str, prompt_tokens: int = 0, completion_tokens: int = 0):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        """The tokens the broken answer still reported (0 when unknown)."""


class ChatFailed(Exception):
    """A request that still failed after the client's retries, or that no retry can fix
    (a 400, a 422): a per-call error for the caller to record, not a reason to stop.

    `error` is one line without the key ("InternalServerError: ..."); `cost` is what the
    attempts cost, to be booked like a successful answer's."""

    def __init__(self, error: str, cost: Attempts) -> None:
        super().__init__(error)
        self.error = error
        self.cost = cost


def estimate_tokens(messages: Sequence[dict[str, str]]) -> int:
    """A rough prompt size before the call: 4 characters a token, plus chat overhead."""
    return sum(len(m["content"]) for m in messages) // 4 + 8 * len(messages)


def safe_error(message: str) -> str:
    """An error text with every secret redacted (`harness.secrets.redact`: the keys this
    process holds, bearer tokens, `sk-` keys, JWTs, credentials in URLs), at most 300
    chars. Cut after redacting, so a cut never leaves a key's prefix unrecognised."""
    return redact(message)[:300]


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
        max_retry_after_s: float = 300.0,
    ) -> None:
        """`retry_cap_s` caps our own backoff; a server's Retry-After is honoured up to
        `max_retry_after_s`, and a longer one stops the run (`JudgeUnavailable`)."""
        import openai

        remember(api_key)  # an endpoint may echo it in an error body
        remember_url(base_url)
        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.logprobs = logprobs
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.max_retry_after_s = max_retry_after_s
        self.limiter = limiter
        self.sleep: Callable[[float], None] = time.sleep
        """How the client waits between attempts (a test replaces it on this client alone,
        so threads of other clients in the process cannot disturb what it records)."""
        self.answered = False
        """True once the endpoint gave one usable answer: from then on a connection that
        keeps failing is that call's error, not an unreachable endpoint."""
        # Retries are ours (counted, logged, one policy for every endpoint), not the SDK's.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )
        self.timeout_s = timeout_s
        # The asynchronous path (`achat`) posts itself; its session is made on the loop.
        self._url = completions_url(base_url)
        self._headers = {
            "Authorization": f"Bearer {api_key or 'not-needed'}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._session: Any = None
        self._session_pid: int | None = None

    def describe(self) -> str:
        """The endpoint and model, for messages (never the key)."""
        return f"judge endpoint {redact_url(self.base_url)} (model {self.model!r})"

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
        it gives one (retry-after-ms, or Retry-After in seconds or as an HTTP date), else
        full jitter: uniform(0, min(cap, base * 2**attempt)).

        A Retry-After beyond `max_retry_after_s` raises `JudgeUnavailable` naming the wait:
        sleeping for hours or retrying at once against the server's word both do harm."""
        wait = retry_after_s(exc)
        if wait is None:
            return random.uniform(0, min(self.retry_cap_s, self.retry_base_s * 2**attempt))
        if wait > self.max_retry_after_s:
            raise JudgeUnavailable(
                f"{self.describe()} asked to wait {wait:.0f} s before retrying (Retry-After), "
                f"more than judge.max_retry_after_s = {self.max_retry_after_s:g} s; try "
                "again later or raise judge.max_retry_after_s"
            )
        return wait

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
    ) -> Reply:
        """One answer from the endpoint, retrying rate limits (429, honouring Retry-After),
        timeouts, connection drops, 5xx and malformed 200 answers up to `max_retries`
        times with backoff. What still fails raises `ChatFailed` with what its attempts
        cost; a connection that never worked raises `JudgeUnavailable`.

        `grammar` (a GBNF grammar) is sent to llama.cpp servers, which constrain the
        answer to it; other endpoints may reject the unknown field."""
        policy = self._policy(messages, max_tokens, grammar, top_logprobs)
        sent: Any = None
        thrown: Exception | None = None
        while True:
            try:
                op, arg = policy.throw(thrown) if thrown else policy.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            if op == "acquire":
                self.limiter.acquire(arg)  # type: ignore[union-attr]
            elif op == "sleep":
                self.sleep(arg)
            else:
                try:
                    sent = self._post(arg)
                except Exception as exc:  # handed to the policy, which decides
                    thrown = exc

    async def achat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
    ) -> Reply:
        """`chat` on the event loop of `harness.llm.aio`: the same retry, Retry-After,
        budget and logprobs policy, over one pooled aiohttp session that reuses its
        connections, without the SDK's per-request work (its request transform and
        response models cost about 3 ms of CPU a request). Errors are the SDK's own
        exception types, so every caller and message stays the same."""
        policy = self._policy(messages, max_tokens, grammar, top_logprobs)
        sent: Any = None
        thrown: Exception | None = None
        while True:
            try:
                op, arg = policy.throw(thrown) if thrown else policy.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            if op == "acquire":
                await self.limiter.aacquire(arg)  # type: ignore[union-attr]
            elif op == "sleep":
                if self.sleep is time.sleep:
                    await asyncio.sleep(arg)
                else:
                    self.sleep(arg)  # a test's recorder: instant
            else:
                try:
                    sent = await self._apost(arg)
                except Exception as exc:  # handed to the policy, which decides
                    thrown = exc

    def _policy(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        grammar: str | None,
        top_logprobs: int,
    ) -> Generator[tuple[str, Any], Any, Reply]:
        """The retry policy of one call, free of I/O so that `chat` and `achat` share it.

        It yields ("acquire", tokens) for the rate limiter, ("call", request kwargs) for
        a request, which is sent back its (text, tokens, prompt tokens, completion tokens)
        or has the request's exception thrown in, and ("sleep", seconds) between attempts;
        it returns the Reply or raises ChatFailed / JudgeUnavailable."""
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
        cost = Attempts()
        while True:
            if self.limiter is not None:
                yield ("acquire", estimate_tokens(messages) + max_tokens)
            start = time.perf_counter()
            cost.calls += 1
            try:
                text, tokens, prompt_tokens, completion_tokens = yield ("call", kwargs)
                latency = time.perf_counter() - start
                break
            except openai.BadRequestError as exc:
                cost.failed_attempts += 1
                if self._drop_logprobs(exc, kwargs):
                    continue
                raise _failed(exc, cost) from exc
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
                MalformedReply,
            ) as exc:
                # APITimeoutError is an APIConnectionError; 5xx are InternalServerError.
                cost.failed_attempts += 1
                if isinstance(exc, MalformedReply):
                    cost.prompt_tokens += exc.prompt_tokens
                    cost.completion_tokens += exc.completion_tokens
                if isinstance(exc, openai.InternalServerError) and self._drop_logprobs(exc, kwargs):
                    continue  # llama-cpp-python answers 500 without --logits_all
                wait = self.backoff_s(cost.retries, exc)  # raises on a Retry-After too long
                if cost.retries >= self.max_retries:
                    if (
                        isinstance(exc, openai.APIConnectionError)
                        and not isinstance(exc, openai.APITimeoutError)
                        and not self.answered
                    ):
                        raise JudgeUnavailable(
                            f"{self.describe()} is unreachable ({type(exc).__name__})"
                        ) from None
                    # once the endpoint has answered, what keeps failing is this call's
                    # error; the caller's consecutive-failure limit stops a dead endpoint
                    raise _failed(exc, cost) from exc
                yield ("sleep", wait)
                cost.retries += 1
            except openai.APIError as exc:  # 409, 422, ...: asking again will not help
                cost.failed_attempts += 1
                raise _failed(exc, cost) from exc
        self.answered = True
        return Reply(
            text=text,
            tokens=tokens,
            prompt_tokens=cost.prompt_tokens + prompt_tokens,
            completion_tokens=cost.completion_tokens + completion_tokens,
            latency_s=latency,
            retries=cost.retries,
            calls=cost.calls,
            failed_attempts=cost.failed_attempts,
        )

    def _post(self, kwargs: dict[str, Any]) -> Completion:
        """One request through the SDK's synchronous client."""
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except json.JSONDecodeError as exc:
            raise MalformedReply(f"a 200 answer that is not JSON ({exc})") from None
        return _read_completion(resp)

    async def _apost(self, kwargs: dict[str, Any]) -> Completion:
        """One request on the shared event loop: JSON in, JSON out, the SDK's exception
        types for HTTP errors, dropped connections and timeouts."""
        import aiohttp
        import httpx2
        import openai

        if self._session is None or self._session_pid != os.getpid():
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout_s, sock_read=self.timeout_s
                ),
                # proxies from the environment, as the SDK's client takes them (looked up
                # on every request, so only when there are some)
                trust_env=bool(urllib.request.getproxies()),
            )
            self._session_pid = os.getpid()
            aio.on_exit(self._session.close)
        body = {k: v for k, v in kwargs.items() if k != "extra_body"}
        body.update(kwargs.get("extra_body") or {})
        try:
            async with self._session.post(
                self._url, data=json.dumps(body), headers=self._headers
            ) as resp:
                raw = await resp.read()
                status = resp.status
                headers = list(resp.headers.items()) if status >= 300 else []
        except TimeoutError:
            raise openai.APITimeoutError(request=httpx2.Request("POST", self._url)) from None
        except aiohttp.ClientError:
            raise openai.APIConnectionError(request=httpx2.Request("POST", self._url)) from None
        if status >= 300:
            request = httpx2.Request("POST", self._url)
            response = httpx2.Response(status, headers=headers, content=raw, request=request)
            raise self._client._make_status_error_from_response(response)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise MalformedReply(f"a 200 answer that is not JSON ({exc})") from None
        return _read_completion_json(data)


def completions_url(base_url: str) -> str:
    """The chat completions URL under `base_url`: its path plus /chat/completions, its query
    kept (e.g. an api-version), its user:password part dropped, as the SDK's path sends
    the key in the Authorization header alone."""
    parts = urllib.parse.urlsplit(base_url)
    netloc = parts.netloc.rpartition("@")[2]
    path = parts.path.rstrip("/") + "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, parts.query, ""))


def _failed(exc: Exception, cost: Attempts) -> ChatFailed:
    """The error a call ends with, as one line without the key, and what it cost."""
    return ChatFailed(f"{type(exc).__name__}: {safe_error(str(exc))}", cost)


def _count(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) and value >= 0 else 0


Completion = tuple[str, list[tuple[str, TopLogprobs]], int, int]
"""An answer as read: (text, tokens with their alternatives, prompt tokens, completion tokens)."""


def _read_completion_json(data: Any) -> Completion:
    """`_read_completion` for a decoded JSON body (the asynchronous path reads no SDK
    models): the same checks, the same `MalformedReply` messages."""
    if not isinstance(data, dict):
        raise MalformedReply(
            f"a 200 answer with a {type(data).__name__} instead of a chat completion"
        )
    usage = data.get("usage")
    used = (
        (_count_json(usage, "prompt_tokens"), _count_json(usage, "completion_tokens"))
        if isinstance(usage, dict)
        else (0, 0)
    )
    choices = data.get("choices")
    if not isinstance(choices, list):
        kind = "no `choices`" if choices is None else "`choices` that is not a list"
        raise MalformedReply(f"a 200 answer with {kind}", *used)
    if not choices:
        raise MalformedReply("a 200 answer with `choices: []`", *used)
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if (
        not isinstance(message, dict)
        or "content" not in message
        or not (content is None or isinstance(content, str))
    ):
        raise MalformedReply("a 200 answer whose choice has no message", *used)
    lp = choice.get("logprobs")
    try:
        tokens = [
            (tok["token"], [(t["token"], t["logprob"]) for t in tok.get("top_logprobs") or []])
            for tok in ((lp.get("content") or []) if lp is not None else [])
        ]
    except (AttributeError, TypeError, KeyError):
        tokens = []
    return content or "", tokens, *used


def _count_json(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _read_completion(resp: Any) -> Completion:
    """(text, tokens with their alternatives, prompt tokens, completion tokens) of a chat
    completion; `MalformedReply` when the 200 answer is none. Logprobs that cannot be read
    are dropped rather than losing the answer."""
    usage = getattr(resp, "usage", None)
    used = (_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))
    choices = getattr(resp, "choices", None)
    if not isinstance(choices, list):
        kind = "no `choices`" if choices is None else "`choices` that is not a list"
        if not hasattr(resp, "choices"):
            kind = f"a {type(resp).__name__} instead of a chat completion"
        raise MalformedReply(f"a 200 answer with {kind}", *used)
    if not choices:
        raise MalformedReply("a 200 answer with `choices: []`", *used)
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not hasattr(message, "content") or not (content is None or isinstance(content, str)):
        raise MalformedReply("a 200 answer whose choice has no message", *used)
    lp = getattr(choices[0], "logprobs", None)
    try:
        tokens = [
            (tok.token, [(t.token, t.logprob) for t in tok.top_logprobs or []])
            for tok in ((lp.content or []) if lp is not None else [])
        ]
    except (AttributeError, TypeError):
        tokens = []
    return content or "", tokens, *used


def retry_after_s(exc: Exception) -> float | None:
    """The wait an error response asks for, in seconds (never negative): its
    retry-after-ms, else its Retry-After in seconds or as an HTTP date; None without one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not hasattr(headers, "get"):
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        with contextlib.suppress(ValueError):
            if math.isfinite(float(ms)):
                return max(0.0, float(ms) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        if math.isfinite(float(value)):
            return max(0.0, float(value))
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


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
