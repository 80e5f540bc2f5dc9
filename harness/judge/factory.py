"""Building the configured judge: an endpoint, or the packaged local model on llama.cpp.

An endpoint is used when `judge.base_url` or `judge.model` is set in the experiment or in
HARNESS_JUDGE_BASE_URL / HARNESS_JUDGE_MODEL; otherwise harness serves the packaged local
model on 127.0.0.1 and stops the server when the judge is closed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.config import JudgeConfig
from harness.errors import ConfigError
from harness.judge.chat import ChatJudge
from harness.llm.local import LlamaServer, resolve_model
from harness.llm.ratelimit import RateLimiter
from harness.secrets import read_key

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def check_endpoint(config: JudgeConfig, where: str) -> None:
    """Refuse an endpoint without a model before anything is loaded, indexed or paid;
    the error names `where` (the experiment file) and `judge.model`."""
    base_url = config.base_url or os.environ.get("HARNESS_JUDGE_BASE_URL", "")
    model = config.model or os.environ.get("HARNESS_JUDGE_MODEL", "")
    if base_url and not model:
        raise ConfigError(
            where, "judge.model", "a judge endpoint needs a model name (or HARNESS_JUDGE_MODEL)"
        )


def judge_settings(config: JudgeConfig, cache_dir: Path) -> tuple[dict[str, Any], Path | None]:
    """ChatJudge keyword arguments for the configured judge, and the local model file
    when no endpoint is configured (then `base_url` is None until a server is started)."""
    base_url = config.base_url or os.environ.get("HARNESS_JUDGE_BASE_URL", "")
    model = config.model or os.environ.get("HARNESS_JUDGE_MODEL", "")
    common: dict[str, Any] = dict(
        reasons=config.reasons,
        temperature=config.temperature,
        mode=config.effective_mode,
        timeout_s=config.timeout_s,
        max_reply_bytes=config.max_reply_bytes,
        max_retries=config.max_retries,
        max_retry_after_s=config.max_retry_after_s,
        concurrency=config.concurrency,
        relevant_grade=config.relevant_grade,
        complete_grade=config.complete_grade,
    )
    if base_url or model:
        if not model:
            raise ConfigError(
                "", "judge.model", "a judge endpoint needs a model name (or HARNESS_JUDGE_MODEL)"
            )
        endpoint = {
            "base_url": base_url or DEFAULT_BASE_URL,
            "model": model,
            "api_key": read_key(config.api_key_env),
        }
        return {**common, **endpoint}, None
    path, sha = resolve_model(config.local_model, cache_dir)
    local = {
        "base_url": None,
        "model": config.local_model if not config.local_model.endswith(".gguf") else path.stem,
        "api_key": "",
        "grammar": True,
        "spec_extra": {
            "engine": "llama-server",
            "local_model": config.local_model,
            "model_sha256": sha,
        },
    }
    return {**common, **local}, path


def judge_identity(config: JudgeConfig, cache_dir: Path) -> str:
    """The verdict-cache identity of the configured judge, without starting or calling it."""
    settings, _ = judge_settings(config, cache_dir)
    return ChatJudge(
        **{**settings, "base_url": settings["base_url"] or "http://unused", "api_key": ""}
    ).identity()


@contextlib.contextmanager
def open_judge(
    config: JudgeConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[ChatJudge]:
    """The judge a config asks for, ready to grade: an endpoint, or the packaged local
    model served by llama.cpp on 127.0.0.1 (stopped on exit)."""
    settings, local_model = judge_settings(config, cache_dir)
    limiter = (
        RateLimiter(config.requests_per_minute, config.tokens_per_minute)
        if config.requests_per_minute or config.tokens_per_minute
        else None
    )
    if local_model is None:
        yield ChatJudge(**settings, limiter=limiter)
        return
    server = LlamaServer(
        local_model,
        alias=settings["model"],
        parallel=config.concurrency,
        log_path=(log_dir / "llama-server.log") if log_dir else None,
    )
    with server:
        # its slots keep the passage just read: judge a chunk's pairs back to back
        yield ChatJudge(
            **{**settings, "base_url": server.base_url}, limiter=limiter, prompt_cache=True
        )
