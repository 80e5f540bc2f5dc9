"""`openai`: OpenAI's text-embedding-3 models, or any endpoint that speaks that API."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from langchain_core.embeddings import Embeddings

from harness.components.contract import EmbedCost, EmbeddingsExport
from harness.config import EmbedderConfig
from harness.errors import ConfigError
from harness.secrets import key_flaw, read_key, remember_url
from harness.types import ComponentSpec

ENDPOINT = "embedder"
"""The endpoint it calls (`harness.components.endpoints`): embedder.base_url."""
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
"""OpenAI's own endpoint, which needs a key (any other may not)."""
NO_KEY = "not-needed"
"""What an endpoint of one's own is sent when the variable `embedder.api_key_env` names
is unset or empty (or the setting is ""), as the judge's client sends it."""


def spec(config: EmbedderConfig) -> ComponentSpec:
    """The embedder as logged and as part of the index key. Never holds the key."""
    return ComponentSpec(
        name="openai",
        args={
            "model": config.model or DEFAULT_MODEL,
            "base_url": config.base_url or DEFAULT_BASE_URL,
        },
    )


def make(config: EmbedderConfig) -> Embeddings:
    """LangChain's OpenAIEmbeddings with the key from `config.api_key_env` (required for
    OpenAI's endpoint, api.openai.com; optional for another `base_url`)."""
    from langchain_openai import OpenAIEmbeddings

    key = read_key(config.api_key_env)
    if not key and (urlparse(config.base_url or DEFAULT_BASE_URL).hostname == OPENAI_HOST):
        raise ConfigError(
            "",
            "embedder.api_key_env",
            f"the OpenAI embedder needs an API key in ${config.api_key_env}, which is empty",
        )
    flaw = key_flaw(key) if key else None
    if flaw:
        raise ConfigError("", "embedder.api_key_env", f"${config.api_key_env}: the API key {flaw}")
    # A server of one's own (Ollama, vLLM, a llama.cpp server) may want no key. The client
    # is given a stand-in rather than nothing: given nothing, it would send $OPENAI_API_KEY
    # to that server.
    kwargs: dict[str, Any] = {"model": config.model or DEFAULT_MODEL, "api_key": key or NO_KEY}
    if config.base_url:
        remember_url(config.base_url)  # should an error echo its credentials
        # Another OpenAI-compatible server: texts go as text, not as OpenAI's tokens
        # (counting those needs tiktoken's files, fetched from the network).
        kwargs["base_url"] = config.base_url
        kwargs["check_embedding_ctx_length"] = False
    return OpenAIEmbeddings(**kwargs)


def validate(config: EmbedderConfig, where: str) -> None:
    """`embedder.model` and the endpoint fields: values on one line."""
    for name in ("model", "base_url", "api_key_env"):
        if any(ch in getattr(config, name) for ch in "\r\n\x00"):
            raise ConfigError(where, f"embedder.{name}", "expected a value on one line")


def export(config: EmbedderConfig) -> EmbeddingsExport:
    """OpenAIEmbeddings with the same model (the endpoint and key are the user's)."""
    return EmbeddingsExport(
        "from langchain_openai import OpenAIEmbeddings",
        f"OpenAIEmbeddings(model={config.model or DEFAULT_MODEL!r})",
    )


def languages(config: EmbedderConfig) -> tuple[str, ...]:
    """Any: text-embedding-3 models are multilingual, and another endpoint's model is the
    user's choice."""
    return ()


def estimate(config: EmbedderConfig) -> EmbedCost:
    """Paid per text: the dry run embeds nothing."""
    return EmbedCost(free=False)
