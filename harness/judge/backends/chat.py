"""`chat`: the judge asked through an OpenAI-compatible chat endpoint (`ChatJudge`), or
the packaged local model served by llama.cpp on 127.0.0.1 (the default backend).

An endpoint is used when `judge.base_url` or `judge.model` is set in the experiment or
in HARNESS_JUDGE_BASE_URL / HARNESS_JUDGE_MODEL (`harness.llm.endpoint`); otherwise the
local model is served and the server stopped when the judge is closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.config import JudgeConfig
from harness.errors import ConfigError
from harness.judge.chat import ChatJudge
from harness.judge.fewshot import load_examples
from harness.llm.endpoint import Endpoint, check_judge_endpoint, judge_endpoint

ENDPOINT = "judge"
"""The endpoint it calls (`harness.components.endpoints`): judge.base_url."""


def validate(config: JudgeConfig, where: str) -> None:
    """The model names and endpoint fields are values on one line."""
    for name in ("base_url", "model", "api_key_env", "local_model"):
        if any(ch in getattr(config, name) for ch in "\r\n\x00"):
            raise ConfigError(where, f"judge.{name}", "expected a value on one line")


def check(config: JudgeConfig, where: str) -> None:
    """Refuse an endpoint without a model, or a few-shot exam that cannot give the
    examples asked for, before anything is loaded, indexed or paid."""
    check_judge_endpoint(config, where)
    load_examples(config, where)


def export(config: JudgeConfig) -> str:
    """Nothing to report: the exported file keeps the judge's settings."""
    return ""


def _settings(config: JudgeConfig, endpoint: Endpoint) -> dict[str, Any]:
    """ChatJudge keyword arguments for this config and endpoint (base_url None for the
    local model until it is served)."""
    settings: dict[str, Any] = dict(
        reasons=config.reasons,
        temperature=config.temperature,
        mode=config.effective_mode,
        timeout_s=config.timeout_s,
        max_reply_bytes=config.max_reply_bytes,
        max_retries=config.max_retries,
        max_retry_after_s=config.max_retry_after_s,
        concurrency=config.local_slots if endpoint.is_local else config.concurrency,
        relevant_grade=config.relevant_grade,
        complete_grade=config.complete_grade,
        base_url=endpoint.base_url,
        model=endpoint.model,
        api_key=endpoint.api_key(),
        few_shot=load_examples(config),
    )
    if endpoint.is_local:
        settings["grammar"] = True
        settings["spec_extra"] = {
            "engine": "llama-server",
            "local_model": endpoint.local_name,
            "model_sha256": endpoint.sha256,
        }
    return settings


def judge_settings(config: JudgeConfig, cache_dir: Path) -> tuple[dict[str, Any], Path | None]:
    """ChatJudge keyword arguments for the configured judge, and the local model file
    when no endpoint is configured (then `base_url` is None until a server is started)."""
    endpoint = judge_endpoint(config, cache_dir)
    return _settings(config, endpoint), endpoint.local_model


def identity(config: JudgeConfig, cache_dir: Path) -> str:
    """The verdict-cache identity of the configured judge, without starting or calling it."""
    settings, _ = judge_settings(config, cache_dir)
    return ChatJudge(
        **{**settings, "base_url": settings["base_url"] or "http://unused", "api_key": ""}
    ).identity()


@contextlib.contextmanager
def open(
    config: JudgeConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[ChatJudge]:
    """The judge, ready to grade: an endpoint, or the local model served on 127.0.0.1
    from its first request that is not cached (stopped on exit)."""
    endpoint = judge_endpoint(config, cache_dir)
    settings = _settings(config, endpoint)
    with endpoint.serve_on_demand(parallel=config.local_slots, log_dir=log_dir) as base_url:
        # a local server's slots keep the prompt just read: each worker gets a slot of its
        # own and judges a chunk's pairs back to back on it
        extra: dict[str, Any] = (
            {"prompt_cache": True, "slots": config.local_slots} if endpoint.is_local else {}
        )
        yield ChatJudge(**{**settings, "base_url": base_url}, limiter=endpoint.limiter(), **extra)
