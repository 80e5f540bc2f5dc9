"""A config read back from a results folder, made safe to act on.

A results folder (a run's header.json, a sweep's sweep.json) is something people share
and anyone can edit. It may say how to chunk, retrieve and judge, but never where a
credential goes: the endpoints and the names of the key variables (`ENDPOINT_FIELDS`)
always come from the user's current sources instead, in this order: the experiment
file the user passes, `--set` overrides, the environment (HARNESS_JUDGE_BASE_URL, read
when the judge is opened), the defaults. The folder's recorded endpoint is only shown:
a warning when the user's differs, and an error when the user gave none at all, rather
than silently judging with another judge.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from loguru import logger

from harness.config.parse import experiment_from_dict
from harness.config.schema import (
    EmbedderConfig,
    ExperimentConfig,
    JudgeConfig,
    RetrievalConfig,
)
from harness.errors import ConfigError
from harness.secrets import redact_url

ENDPOINT_FIELDS: dict[str, tuple[str, str]] = {
    "judge": ("base_url", "api_key_env"),
    "retrieval": ("llm_base_url", "llm_api_key_env"),
    "embedder": ("base_url", "api_key_env"),
}
"""Per config table: (its endpoint field, the field naming its key's variable). These
route a credential, so they are never taken from a results folder."""

_DEFAULTS: dict[str, Any] = {
    "judge": JudgeConfig(),
    "retrieval": RetrievalConfig(),
    "embedder": EmbedderConfig(),
}
_VERB = {"judge": "judged", "retrieval": "reranked (llm reranker)", "embedder": "embedded"}


def _user_endpoint(config: ExperimentConfig, section: str) -> str:
    """The endpoint the user's config resolves to for `section` ("": none given)."""
    url = getattr(getattr(config, section), ENDPOINT_FIELDS[section][0])
    if section == "judge" and not url:
        url = os.environ.get("HARNESS_JUDGE_BASE_URL", "")  # as harness.judge.factory reads it
    return str(url)


def uses_endpoint(config: ExperimentConfig, section: str) -> bool:
    """Whether a run or sweep of `config` calls the endpoint of table `section`: the
    judge always; the llm reranker's and the openai embedder's only when chosen (by the
    config or anywhere in its sweep space)."""
    if section == "retrieval":
        return "llm" in (config.retrieval.reranker, *config.sweep.space.reranker)
    if section == "embedder":
        names = (config.embedder.name, *config.sweep.space.embedder)
        return any(n.split(":", 1)[0] == "openai" for n in names)
    return True


def check_recorded_endpoints(
    recorded: dict[str, Any],
    config: ExperimentConfig,
    *,
    where: str,
    hint: str,
    sections: Sequence[str] = tuple(ENDPOINT_FIELDS),
) -> None:
    """Compare the endpoints a results folder recorded with those of `config` (the
    user's): a warning naming both when they differ, a ConfigError when the folder
    recorded one and the user gave none. Only tables in `sections` that `config` uses
    are checked. `where` is the folder's file, `hint` how else to give the endpoint."""
    for section in sections:
        if not uses_endpoint(config, section):
            continue
        url_field, key_field = ENDPOINT_FIELDS[section]
        table = recorded.get(section)
        old = table.get(url_field) if isinstance(table, dict) else None
        if not isinstance(old, str) or not old:
            continue
        new = _user_endpoint(config, section)
        dotted = f"{section}.{url_field}"
        shown = redact_url(old)
        if not new:
            raise ConfigError(
                where,
                dotted,
                f"{_VERB[section]} by {shown}, which is not taken from a results folder "
                f"(a folder never chooses where a key is sent); give it again with "
                f"--set {dotted}=URL --set {section}.{key_field}=VAR, or {hint}",
            )
        if redact_url(new).rstrip("/") != shown.rstrip("/"):
            logger.warning(
                "{}: {} by {} ({}); now using {}, from your experiment, --set or environment",
                where,
                _VERB[section],
                shown,
                dotted,
                redact_url(new),
            )


def rebase_on_user(
    recorded: dict[str, Any],
    user: ExperimentConfig | None = None,
    overrides: Sequence[str] = (),
    *,
    where: str,
    hint: str,
    sections: Sequence[str] = tuple(ENDPOINT_FIELDS),
) -> ExperimentConfig:
    """The config a results folder recorded (`ExperimentConfig.to_dict()` from a
    header.json or sweep.json), with every field of `ENDPOINT_FIELDS` taken from the
    user instead: from `user` (the experiment file they passed) or else the defaults,
    then `overrides` (`--set`) on top; an empty judge endpoint still falls back to
    HARNESS_JUDGE_BASE_URL when the judge is opened. Then `check_recorded_endpoints`.
    """
    data = dict(recorded)
    for section, names in ENDPOINT_FIELDS.items():
        table = data.get(section, {})
        if not isinstance(table, dict):
            continue  # parsing names the field and what was expected
        table = dict(table)
        for name in names:
            table[name] = (
                getattr(getattr(user, section), name)
                if user is not None
                else getattr(_DEFAULTS[section], name)
            )
        data[section] = table
    config = experiment_from_dict(data, overrides)
    check_recorded_endpoints(recorded, config, where=where, hint=hint, sections=sections)
    return config
