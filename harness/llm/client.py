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
  without them, and from then on never with them;
- a request the endpoint will never take (400, 413 too large, 409, 422) fails at once:
  waiting will not shrink it.

Each request is bounded: `timeout_s` is its deadline as a whole (an endpoint dripping a
byte a second is cut off), and a reply body is read, and inflated, only up to
`max_reply_bytes` (a bigger one, or an answer longer than its tokens could make, is a
`MalformedReply`).

The API key is held only by the client (its request headers): it is never part of a
spec, an identity, a log line or an error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
import os
import random
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from harness.errors import JudgeUnavailable
from harness.llm import aio, http
from harness.llm.ratelimit import RateLimiter
from harness.secrets import key_flaw, redact, redact_url, remember, remember_url
from harness.types import Cost

TopLogprobs = list[tuple[str, float]]
"""A token's alternatives at one position: (token text, natural-log probability)."""


@dataclass(frozen=True)
class Reply:
    """One answer of the endpoint, with what it cost."""

    text: str
    tokens: list[tuple[str, TopLogprobs]]
    """Each generated token with its top alternatives (empty without logprobs)."""
    cost: Cost
    """The HTTP requests made for this answer: the answered one, retries and failed ones
    (their tokens included where the endpoint reported them); `latency_s` is the
    answered request's, retries and waits not included."""


class MalformedReply(Exception):
    """A 200 answer that is no chat completion: not JSON, no `choices`, an empty list, a
    choice without a message, a body over the size cap or an answer longer than the
    tokens asked for could make. Retried like a 5xx."""

    def __init__(self, message: str, prompt_tokens: int = 0, completion_tokens: int = 0):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        """The tokens the broken answer still reported (0 when unknown)."""


class ChatFailed(Exception):
    """A request that still failed after the client's retries, or that no retry can fix
    (a 400, a 413, a 422): a per-call error for the caller to record, not a reason to stop.

    `error` is one line without the key ("InternalServerError: ..."); `cost` is what the
    attempts cost, to be booked like a successful answer's."""

    def __init__(self, error: str, cost: Cost) -> None:
        super().__init__(error)
        self.error = error
        self.cost = cost


MAX_CONSECUTIVE_FAILURES = 8
"""Calls failing in a row (after the client's retries) that declare an endpoint down, by
default: the judge's and the question generator's (`FailureStreak`)."""


class FailureStreak:
    """How many calls to one endpoint have failed in a row, counted across the threads
    and tasks that call it; `limit` is where its caller declares the endpoint down."""

    def __init__(self, limit: int = MAX_CONSECUTIVE_FAILURES, count: int = 0) -> None:
        self.limit = limit
        self._count = count
        self._lock = threading.Lock()

    def failed(self) -> int:
        """One more call failed: the streak's length now."""
        with self._lock:
            self._count += 1
            return self._count

    def answered(self) -> None:
        """A call was answered: the streak ends."""
        with self._lock:
            self._count = 0

    def fork(self, limit: int | None = None) -> FailureStreak:
        """A streak of its own for a copy of the caller, starting where this one stands."""
        with self._lock:
            return FailureStreak(self.limit if limit is None else limit, self._count)


ON_DEMAND_LABEL = "http://127.0.0.1 (local judge, started on first request)"
"""A client's `base_url` (and its judge's logged spec) while its local server is not yet
started: the port is chosen when it starts."""
MAX_REPLY_BYTES = 1_000_000
"""The default cap on a reply body, decoded (judge.max_reply_bytes): a judge's answer is a
few tokens, a generated question set a few kilobytes."""

CHARS_PER_TOKEN_MAX = 64
"""An answer longer than this many characters a token asked for is no answer of the model
(a 10 MB "yes..." is a broken or hostile endpoint), and is malformed."""

_ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""Content-Encoding -> zlib window bits: the encodings the client asks for and inflates
itself, so that it can stop at the size cap (a gzip bomb inflates to nothing more)."""


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
        base_url: str | Callable[[], str],
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
        max_reply_bytes: int = MAX_REPLY_BYTES,
        slots: int = 0,
    ) -> None:
        """`timeout_s` bounds each request as a whole (connecting, sending, reading), not
        only the gap between bytes; `max_reply_bytes` caps a reply's body, decoded.
        `slots`: the slot count of a llama.cpp server (0 elsewhere); each numbered worker
        (`aio.worker_index`) then sends its requests to a slot of its own (`id_slot`), so
        the slot's prompt cache holds what that worker asked last: the task and the
        passage it is grading.
        `retry_cap_s` caps our own backoff; a server's Retry-After is honoured up to
        `max_retry_after_s`, and a longer one stops the run (`JudgeUnavailable`).
        `base_url` may be a function giving it, called (off the event loop) by the first
        request: a local server started on demand (`harness.llm.local.OnDemandServer`)."""
        remember(api_key)  # an endpoint may echo it in an error body
        flaw = key_flaw(api_key)
        if flaw:
            raise JudgeUnavailable(f"the API key {flaw}")
        self._start: Callable[[], str] | None = None
        if callable(base_url):
            self._start, base_url = base_url, ON_DEMAND_LABEL
        else:
            remember_url(base_url)
        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.logprobs = logprobs
        self.logprobs_refused = False
        """True once the endpoint refused logprobs: no request asks for them again."""
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.max_retry_after_s = max_retry_after_s
        self.max_reply_bytes = max_reply_bytes
        self.slots = slots
        self.limiter = limiter
        self.timeout_s = timeout_s
        self.sleep: Callable[[float], None] = time.sleep
        """How the client waits between attempts (a test replaces it on this client alone,
        so threads of other clients in the process cannot disturb what it records)."""
        self.answered = False
        """True once the endpoint gave one usable answer: from then on a connection that
        keeps failing is that call's error, not an unreachable endpoint."""
        self._api_key = api_key
        self._sdk_client: Any = None
        self._lazy_lock = threading.Lock()  # what is made on first use: SDK client, URL
        self._url = "" if self._start else completions_url(base_url)
        self._headers = {
            "Authorization": f"Bearer {api_key or 'not-needed'}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": ", ".join(_ENCODINGS),
        }
        self._pool: http.Pool | None = None
        self._pool_pid: int | None = None

    def describe(self) -> str:
        """The endpoint and model, for messages (never the key)."""
        return f"judge endpoint {redact_url(self.base_url)} (model {self.model!r})"

    def _drop_logprobs(self, exc: Exception, kwargs: dict[str, Any]) -> bool:
        """True (and logprobs off from now on) when the endpoint refused the logprobs this
        request asked for: the calls go on without them rather than failing one after
        another. Decided by the request, not by the client: the requests in flight when
        the first refusal came back asked for them too, and are asked again without."""
        if "logprobs" not in kwargs or "logprob" not in str(exc).lower():
            return False
        if not self.logprobs_refused:
            logger.warning("{} does not offer logprobs; judging without P(yes)", self.describe())
            self.logprobs_refused = True
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

    @property
    def _sdk(self) -> Any:
        """The OpenAI SDK's client for this endpoint and key, made on first use: it turns
        an error response into the SDK's exception type (so every caller and message stays
        the same) and serves the Files and Batches endpoints; requests are posted by
        `_post`. Importing the SDK and making its client take ~0.8 s of CPU, which a run
        whose calls all succeed never pays."""
        with self._lazy_lock:
            if self._sdk_client is None:
                import openai

                self._sdk_client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self._api_key or "not-needed",
                    timeout=self.timeout_s,
                    max_retries=0,
                )
            return self._sdk_client

    def sdk(self, max_retries: int) -> Any:
        """The OpenAI SDK's client for this endpoint and key, retrying `max_retries`
        times (the Files and Batches endpoints go through it: `harness.judge.batch`)."""
        return self._sdk.with_options(max_retries=max_retries)

    def request_body(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
        temperature: float | None = None,
        logprobs: bool | None = None,
    ) -> dict[str, Any]:
        """The JSON body of a chat completion request, as `achat` posts it (and a batch
        file carries it: `harness.judge.batch`); `temperature` None is the client's, and
        so is `logprobs` None (True asks for them unless the endpoint refused them)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens,
        }
        if (self.logprobs if logprobs is None else logprobs) and not self.logprobs_refused:
            body.update(logprobs=True, top_logprobs=top_logprobs)
        if grammar:
            body["grammar"] = grammar
        worker = aio.worker_index()
        if self.slots and worker is not None:
            body.update(id_slot=worker % self.slots, cache_prompt=True)
        return body

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
        temperature: float | None = None,
        logprobs: bool | None = None,
    ) -> Reply:
        """`achat` for a caller without an event loop: run on the loop of
        `harness.llm.aio`, waited for here (from any thread but the loop's own)."""
        return aio.run(
            self.achat(
                messages,
                max_tokens=max_tokens,
                grammar=grammar,
                top_logprobs=top_logprobs,
                temperature=temperature,
                logprobs=logprobs,
            )
        )

    async def achat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        grammar: str | None = None,
        top_logprobs: int = 5,
        temperature: float | None = None,
        logprobs: bool | None = None,
    ) -> Reply:
        """One answer from the endpoint, retrying rate limits (429, honouring Retry-After),
        timeouts, connection drops, 5xx and malformed 200 answers up to `max_retries`
        times with backoff. What still fails raises `ChatFailed` with what its attempts
        cost; a connection that never worked raises `JudgeUnavailable`.

        `grammar` (a GBNF grammar) is sent to llama.cpp servers, which constrain the
        answer to it; other endpoints may reject the unknown field. `temperature`
        overrides the client's for this request, and `logprobs` its choice of asking for
        the tokens' alternatives. Requests go over the
        kept connections of `harness.llm.http` on the loop of `harness.llm.aio`, without
        the SDK's per-request work (its request transform and response models cost about
        3 ms of CPU a request); errors are the SDK's exception types."""
        body = self.request_body(
            messages,
            max_tokens=max_tokens,
            grammar=grammar,
            top_logprobs=top_logprobs,
            temperature=temperature,
            logprobs=logprobs,
        )
        if not self._url:  # a local server started on demand: before the call's clock
            await asyncio.to_thread(self._started)
        cost = Cost()
        while True:
            if self.limiter is not None:
                await self.limiter.aacquire(estimate_tokens(messages) + max_tokens)
            start = time.perf_counter()
            cost += Cost(calls=1)
            try:
                text, tokens, prompt_tokens, completion_tokens = await self._post(body, max_tokens)
            except Exception as exc:  # what to do about it is `_failed_attempt`'s to say
                await self._load_sdk()
                cost, wait = self._failed_attempt(exc, body, cost)
                if wait is not None:
                    await self._wait(wait)
                    cost += Cost(retries=1)
                continue
            self.answered = True
            latency = time.perf_counter() - start
            used = Cost(
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_s=latency
            )
            return Reply(text=text, tokens=tokens, cost=cost + used)

    def _failed_attempt(
        self, exc: Exception, body: dict[str, Any], cost: Cost
    ) -> tuple[Cost, float | None]:
        """The policy for a request that failed: (the cost with this attempt booked,
        seconds to wait before retrying, or None to ask again at once without logprobs);
        raises `ChatFailed` when asking again cannot help or the retries are spent, and
        `JudgeUnavailable` when the endpoint cannot serve at all."""
        import openai

        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            raise JudgeUnavailable(
                f"{self.describe()} refused the API key (HTTP {exc.status_code}); check "
                "the key's environment variable"
            ) from None
        if isinstance(exc, openai.NotFoundError):
            raise JudgeUnavailable(
                f"{self.describe()} answered 404: unknown model or wrong base_url"
            ) from None
        if not isinstance(exc, (openai.APIError, MalformedReply)):
            raise exc  # a fault of ours, not the endpoint's: never an error verdict
        cost += Cost(failed_attempts=1)
        if isinstance(exc, MalformedReply):
            cost += Cost(prompt_tokens=exc.prompt_tokens, completion_tokens=exc.completion_tokens)
        # a 400 may be our logprobs, and llama-cpp-python answers 500 without --logits_all
        refused = isinstance(exc, (openai.BadRequestError, openai.InternalServerError))
        if refused and self._drop_logprobs(exc, body):
            return cost, None
        transient = (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APIConnectionError,  # timeouts included
            MalformedReply,
        )
        if not isinstance(exc, transient):  # 400, 409, 413, 422: asking again will not help
            raise _failed(exc, cost) from exc
        wait = self.backoff_s(cost.retries, exc)  # raises on a Retry-After too long
        if cost.retries < self.max_retries:
            return cost, wait
        if (
            isinstance(exc, openai.APIConnectionError)
            and not isinstance(exc, openai.APITimeoutError)
            and not self.answered
        ):
            raise JudgeUnavailable(
                f"{self.describe()} is unreachable ({type(exc).__name__})"
            ) from None
        # once the endpoint has answered, what keeps failing is this call's error; the
        # caller's consecutive-failure limit stops a dead endpoint
        raise _failed(exc, cost) from exc

    async def _wait(self, seconds: float) -> None:
        if self.sleep is time.sleep:
            await asyncio.sleep(seconds)
        else:
            self.sleep(seconds)  # a test's recorder: instant

    def warm(self, calls: int) -> None:
        """On the loop, before a burst of `calls` requests in flight: start opening as
        many connections (none for a local server not started yet)."""
        if self._url:
            self._open_pool().warm(calls)

    def _open_pool(self) -> http.Pool:
        """This client's keep-alive connections on the loop (a forked child makes its
        own), through the environment's proxy if it names one for the URL."""
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = http.Pool(self._url, self._headers, proxy=http.env_proxy(self._url))
            self._pool_pid = os.getpid()
            aio.on_exit(self._pool.close)
        return self._pool

    def _started(self) -> None:
        """Start the server of an on-demand `base_url` (once: requests arriving meanwhile
        wait for it) and send the requests to it from now on."""
        assert self._start is not None
        with self._lazy_lock:
            if not self._url:
                url = self._start()
                self.base_url, self._url = url, completions_url(url)

    async def _load_sdk(self) -> None:
        """Import the SDK and make its client (`_sdk`) off the event loop, once: on the
        loop, its ~0.8 s of imports stalled every request in flight, and with a short
        `timeout_s` made answers already on their way time out."""
        if self._sdk_client is None:
            await asyncio.to_thread(lambda: self._sdk)

    async def _post(self, body: dict[str, Any], max_tokens: int) -> Completion:
        """One request, over within `timeout_s` (a server dripping bytes included): JSON
        in, JSON out, the SDK's exception types for HTTP errors, dropped connections and
        timeouts; `MalformedReply` for a 200 that is no usable chat completion."""
        pool = self._open_pool()
        try:
            async with asyncio.timeout(self.timeout_s):
                resp = await pool.post(json.dumps(body).encode(), self.max_reply_bytes)
        except TimeoutError:
            await self._load_sdk()
            raise _sdk_error("APITimeoutError", self._url) from None
        except http.HttpError:
            await self._load_sdk()
            raise _sdk_error("APIConnectionError", self._url) from None
        raw, cut = _inflate(resp, self.max_reply_bytes)
        if resp.status >= 300:  # the body, cut or not, is only read for its message
            await self._load_sdk()
            import httpx2

            headers = [(k, v) for k, v in resp.headers if k.lower() != "content-encoding"]
            request = httpx2.Request("POST", self._url)
            response = httpx2.Response(resp.status, headers=headers, content=raw, request=request)
            raise self._sdk._make_status_error_from_response(response)
        if cut:
            raise MalformedReply(
                f"a 200 answer over {self.max_reply_bytes} bytes (judge.max_reply_bytes); "
                "not read further"
            )
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise MalformedReply(f"a 200 answer that is not JSON ({exc})") from None
        completion = _read_completion_json(data)
        limit = CHARS_PER_TOKEN_MAX * max(1, max_tokens)
        if len(completion[0]) > limit:
            raise MalformedReply(
                f"a 200 answer of {len(completion[0])} characters, more than {max_tokens} "
                "tokens can hold",
                *completion[2:],
            )
        return completion


def _sdk_error(name: str, url: str) -> Exception:
    """The SDK's exception `name` (APITimeoutError, APIConnectionError) for a request to
    `url`; the SDK is imported only when a request fails."""
    import httpx2
    import openai

    return getattr(openai, name)(request=httpx2.Request("POST", url))


def _inflate(resp: http.Response, limit: int) -> tuple[bytes, bool]:
    """(the body of `resp`, decoded, of at most `limit` bytes; True when there was more):
    the pool read at most `limit` bytes of it, and they are inflated only up to `limit`,
    so neither a huge body nor a gzip bomb is ever held whole."""
    encoding = resp.header("Content-Encoding").strip().lower()
    if encoding in ("", "identity"):
        return resp.body, resp.cut
    if encoding not in _ENCODINGS:
        raise MalformedReply(f"a reply in an encoding not asked for ({encoding[:40]!r})")
    inflate = zlib.decompressobj(_ENCODINGS[encoding])
    try:
        out = inflate.decompress(resp.body, limit + 1)
        if len(out) <= limit and not resp.cut:
            out += inflate.flush()
    except zlib.error as exc:
        raise MalformedReply(f"a {encoding} reply that does not inflate ({exc})") from None
    return out[:limit], resp.cut or len(out) > limit


def completions_url(base_url: str) -> str:
    """The chat completions URL under `base_url`: its path plus /chat/completions, its query
    kept (e.g. an api-version), its user:password part dropped, as the SDK's path sends
    the key in the Authorization header alone."""
    parts = urllib.parse.urlsplit(base_url)
    netloc = parts.netloc.rpartition("@")[2]
    path = parts.path.rstrip("/") + "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, parts.query, ""))


def _failed(exc: Exception, cost: Cost) -> ChatFailed:
    """The error a call ends with, as one line without the key, and what it cost."""
    return ChatFailed(f"{type(exc).__name__}: {safe_error(str(exc))}", cost)


Completion = tuple[str, list[tuple[str, TopLogprobs]], int, int]
"""An answer as read: (text, tokens with their alternatives, prompt tokens, completion tokens)."""


def _read_completion_json(data: Any) -> Completion:
    """(text, tokens with their alternatives, prompt tokens, completion tokens) of a
    decoded chat completion; `MalformedReply` when the 200 answer is none. Logprobs that
    cannot be read are dropped rather than losing the answer."""
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


def read_completion(data: Any) -> Completion:
    """`(text, tokens, prompt tokens, completion tokens)` of a decoded chat completion
    (a batch result line's body, say), read as an online answer is; `MalformedReply`
    when it is none."""
    return _read_completion_json(data)


def _count_json(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def retry_after_s(exc: Exception) -> float | None:
    """The wait an error response asks for, in seconds (never negative): its
    retry-after-ms, else its Retry-After in seconds or as an HTTP date; None without one."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if headers is None or not hasattr(headers, "get"):
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
    used = Cost(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    return used.usd(prompt_price_per_mtok, completion_price_per_mtok)
