"""Talking to LLMs: the OpenAI-compatible client and the local llama.cpp server.

    ChatClient      retries, backoff, rate limits, logprobs and tokens for one endpoint
    RateLimiter     requests- and tokens-per-minute budgets
    LlamaServer     llama.cpp's server on 127.0.0.1 with a packaged model (llm/local.py)

Used alike by the judge, the llm reranker and the question generator.
"""

from harness.llm.client import (
    ChatClient,
    ChatFailed,
    MalformedReply,
    Reply,
    estimate_tokens,
    safe_error,
    token_cost,
)
from harness.llm.ratelimit import RateLimiter

__all__ = [
    "ChatClient",
    "ChatFailed",
    "MalformedReply",
    "RateLimiter",
    "Reply",
    "estimate_tokens",
    "safe_error",
    "token_cost",
]
