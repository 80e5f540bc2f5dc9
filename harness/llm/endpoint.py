"""The `Endpoint` component: where a model is asked, resolved once for every caller.

The judge (`harness.judge.backends.chat`), generation (`harness.generate.llm`) and the
llm reranker (`harness.pipeline.prepare`) each ask an OpenAI-compatible model. An
`Endpoint` is that model resolved from the experiment: the base URL (or the packaged
local model, served by llama.cpp on 127.0.0.1 while `serve` lasts), the model name,
the key (read from the named environment variable through `harness.secrets.read_key`,
never stored) and the rate limits. Which fields of an experiment are endpoints is
listed in `harness.components.endpoints`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import ExperimentConfig, JudgeConfig, RetrievalConfig
from harness.config.validate import check_endpoint_url
from harness.errors import ConfigError
from harness.llm.ratelimit import RateLimiter
from harness.secrets import key_flaw, read_key, redact_url

if TYPE_CHECKING:
    from harness.llm.local import OnDemandServer

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where a model name without a base URL is asked."""


@dataclass(frozen=True)
class Endpoint:
    """A resolved model endpoint: a URL and model, or the packaged local model."""

    base_url: str | None
    """The OpenAI-compatible endpoint; None for the local model (known once served)."""
    model: str
    """The model name sent with each request (the alias of the local model)."""
    api_key_env: str = ""
    """The environment variable holding the key ("" for none)."""
    local_model: Path | None = None
    """The verified .gguf file of the local model (None for a remote endpoint)."""
    local_name: str = ""
    """The local model as configured (a packaged name or a .gguf path)."""
    sha256: str = ""
    """The local model file's sha256."""
    verified: bool = True
    """Whether the local model file was read and its sha256 checked: a packaged model's
    is checked only when its server starts (`serve_on_demand`), so a run whose verdicts
    are all cached never reads the 1 GB file."""
    requests_per_minute: float = 0
    tokens_per_minute: float = 0

    @property
    def is_local(self) -> bool:
        """Whether this is the packaged local model on a llama.cpp server."""
        return self.local_model is not None

    def api_key(self) -> str:
        """The key from `api_key_env` ("" for the local model or an unset variable); one
        that cannot be sent (`key_flaw`) is a `ConfigError` naming the variable."""
        if self.is_local:
            return ""
        key = read_key(self.api_key_env)
        flaw = key_flaw(key)
        if flaw:
            raise ConfigError("", f"${self.api_key_env}", f"the API key {flaw}")
        return key

    def limiter(self) -> RateLimiter | None:
        """A rate limiter for the configured budget, shared by every request (None: none)."""
        if self.requests_per_minute or self.tokens_per_minute:
            return RateLimiter(self.requests_per_minute, self.tokens_per_minute)
        return None

    def identity(self) -> str:
        """The model's cache identity: the local model's sha256, or the endpoint
        (credentials removed) and the model name."""
        if self.is_local:
            return f"local:{self.model}:{self.sha256}"
        return f"{redact_url(self.base_url or '')}|{self.model}"

    @contextlib.contextmanager
    def serve(self, *, parallel: int = 4, log_dir: Path | None = None) -> Iterator[str]:
        """The base URL to send requests to while the context lasts: the endpoint's own,
        or a llama.cpp server started for the local model (stopped on exit)."""
        with self.serve_on_demand(parallel=parallel, log_dir=log_dir) as url:
            yield url if isinstance(url, str) else url()

    @contextlib.contextmanager
    def serve_on_demand(
        self, *, parallel: int = 4, log_dir: Path | None = None
    ) -> Iterator[str | OnDemandServer]:
        """`serve`, but the local model's server starts only when the returned
        `OnDemandServer` is first called (by the first request that is not cached); an
        endpoint's own URL is given as it is."""
        if self.local_model is None:
            yield self.base_url or DEFAULT_BASE_URL
            return
        from harness.llm.local import LlamaServer, OnDemandServer, verify_model_file

        path, sha256 = self.local_model, self.sha256
        server = LlamaServer(
            path,
            alias=self.model,
            parallel=parallel,
            log_path=(log_dir / "llama-server.log") if log_dir else None,
        )
        check = None if self.verified else (lambda: verify_model_file(path, sha256))
        with OnDemandServer(server, check) as on_demand:
            yield on_demand


def _judge_url_and_model(config: JudgeConfig) -> tuple[str, str]:
    return (
        config.base_url or os.environ.get("HARNESS_JUDGE_BASE_URL", ""),
        config.model or os.environ.get("HARNESS_JUDGE_MODEL", ""),
    )


def has_judge_endpoint(config: JudgeConfig) -> bool:
    """Whether the judge is an endpoint (`judge.base_url`/`model` or their environment
    variables) rather than the packaged local model."""
    base_url, model = _judge_url_and_model(config)
    return bool(base_url or model)


def check_judge_endpoint(config: JudgeConfig, where: str) -> None:
    """Refuse a judge endpoint without a model, or with a base URL that is no http(s)
    URL, before anything is loaded, indexed or paid; the error names `where` (the
    experiment file) and the field (or the environment variable it came from)."""
    base_url, model = _judge_url_and_model(config)
    check_endpoint_url(
        base_url, where, "judge.base_url" if config.base_url else "HARNESS_JUDGE_BASE_URL"
    )
    if base_url and not model:
        raise ConfigError(
            where, "judge.model", "a judge endpoint needs a model name (or HARNESS_JUDGE_MODEL)"
        )


def judge_endpoint(config: JudgeConfig, cache_dir: Path) -> Endpoint:
    """The judge's endpoint: `judge.base_url`/`model` (or HARNESS_JUDGE_BASE_URL /
    HARNESS_JUDGE_MODEL), else the packaged local model (its file verified against its
    sha256 when its server starts)."""
    base_url, model = _judge_url_and_model(config)
    limits: dict[str, Any] = {
        "requests_per_minute": config.requests_per_minute,
        "tokens_per_minute": config.tokens_per_minute,
    }
    if base_url or model:
        check_judge_endpoint(config, "")
        return Endpoint(base_url or DEFAULT_BASE_URL, model, config.api_key_env, **limits)
    from harness.llm.local import PACKAGED_MODELS, resolve_model

    path, sha = resolve_model(config.local_model, cache_dir, verify=False)
    name = config.local_model
    return Endpoint(
        None,
        name if not name.endswith(".gguf") else path.stem,
        "",
        local_model=path,
        local_name=name,
        sha256=sha,
        verified=config.local_model not in PACKAGED_MODELS,  # a path's hash was just read
        **limits,
    )


def generate_endpoint(config: ExperimentConfig, cache_dir: Path) -> Endpoint:
    """Generation's endpoint: `generate.base_url`/`model` when set, else the judge's
    (its local model when it has none); the judge's rate limits either way."""
    g, j = config.generate, config.judge
    if g.base_url or g.model:
        return Endpoint(
            g.base_url or DEFAULT_BASE_URL,
            g.model,
            g.api_key_env,
            requests_per_minute=j.requests_per_minute,
            tokens_per_minute=j.tokens_per_minute,
        )
    return judge_endpoint(j, cache_dir)


def reranker_endpoint(config: RetrievalConfig) -> Endpoint | None:
    """The llm reranker's own endpoint (`retrieval.llm_base_url`/`llm_model`), or None
    when it uses the judge's endpoint and model."""
    if not (config.llm_model or config.llm_base_url):
        return None
    return Endpoint(
        config.llm_base_url or DEFAULT_BASE_URL, config.llm_model, config.llm_api_key_env
    )
