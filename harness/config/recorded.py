"""A config read back from a results folder, made safe to act on.

A results folder (a run's header.json, a sweep's sweep.json) is something people share
and anyone can edit. It may say how to chunk, retrieve and judge, but never where a
credential goes: the endpoint fields of every component (judge, generate, llm reranker,
embedder, batch, and components' own settings; listed in `harness.components.endpoints`)
always come from the user's current sources instead, in this order: the experiment
file the user passes, `--set` overrides, the environment (HARNESS_JUDGE_BASE_URL, read
when the judge is opened), the defaults. The folder's recorded endpoint is only shown:
a warning when the user's differs, and an error when the user gave none at all, rather
than silently judging with another judge. Nor does a folder choose what is fetched: its
URL sources are refused unless the user's experiment gives the sources.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from loguru import logger

from harness.components.endpoints import EndpointFields, endpoint_fields, replace_endpoints
from harness.components.registry import load
from harness.config.parse import experiment_from_dict
from harness.config.schema import CorpusConfig, ExperimentConfig, QuestionsConfig
from harness.errors import ConfigError
from harness.secrets import redact_url

_DEFAULTS = ExperimentConfig(name="", path="", corpus=CorpusConfig(), questions=QuestionsConfig())
"""Where the endpoint fields come from when the user gives no experiment file."""

_VERB = {
    "judge": "judged",
    "llm reranker": "reranked (llm reranker)",
    "embedder": "embedded",
    "generate": "generated",
    "batch": "judged in batches",
}


def _user_endpoint(config: ExperimentConfig, e: EndpointFields) -> str:
    """The endpoint the user's config resolves to for `e` ("": none given)."""
    url = getattr(getattr(config, e.table, None), e.url, "")
    if e.component == "judge" and not url:
        url = os.environ.get("HARNESS_JUDGE_BASE_URL", "")  # as the judge's endpoint reads it
    return str(url or "")


def uses_endpoint(config: ExperimentConfig, component: str) -> bool:
    """Whether a run or sweep of `config` calls the endpoint of `component` (an
    `EndpointFields.component`): whether one of the components it may use (its judge
    backend, its reranker and embedder or any in its sweep space) declares that endpoint
    as its own (the module's `ENDPOINT`). Generation and batches are other commands'."""
    chosen = [
        ("judge", config.judge.backend),
        *(("reranker", n) for n in (config.retrieval.reranker, *config.sweep.space.reranker)),
        *(
            ("embedder", n.split(":", 1)[0])
            for n in (config.embedder.name, *config.sweep.space.embedder)
        ),
    ]
    return any(getattr(load(kind, name), "ENDPOINT", "") == component for kind, name in chosen)


def _selected(sections: Sequence[str]) -> list[EndpointFields]:
    """The endpoint fields of the components or tables named in `sections`."""
    return [e for e in endpoint_fields() if e.component in sections or e.table in sections]


def check_recorded_endpoints(
    recorded: dict[str, Any],
    config: ExperimentConfig,
    *,
    where: str,
    hint: str,
    sections: Sequence[str] | None = None,
) -> None:
    """Compare the endpoints a results folder recorded with those of `config` (the
    user's): a warning naming both when they differ, a ConfigError when the folder
    recorded one and the user gave none. Only components `config` uses are checked
    (those in `sections`, components or tables, when given). `where` is the folder's
    file, `hint` how else to give the endpoint."""
    for e in endpoint_fields() if sections is None else _selected(sections):
        if not uses_endpoint(config, e.component):
            continue
        table = recorded.get(e.table)
        old = table.get(e.url) if isinstance(table, dict) else None
        if not isinstance(old, str) or not old:
            continue
        new = _user_endpoint(config, e)
        shown = redact_url(old)
        if not new:
            raise ConfigError(
                where,
                e.dotted,
                f"{_VERB[e.component]} by {shown}, which is not taken from a results folder "
                f"(a folder never chooses where a key is sent); give it again with "
                f"--set {e.dotted}=URL --set {e.table}.{e.key_env}=VAR, or {hint}",
            )
        if redact_url(new).rstrip("/") != shown.rstrip("/"):
            logger.warning(
                "{}: {} by {} ({}); now using {}, from your experiment, --set or environment",
                where,
                _VERB[e.component],
                shown,
                e.dotted,
                redact_url(new),
            )


def _is_url(source: Any) -> bool:
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


def check_recorded_sources(recorded: dict[str, Any], *, where: str, hint: str) -> None:
    """Refuse a results folder's URL sources: a folder never chooses what is fetched;
    they come from the user's experiment file (`hint` says how to give it)."""
    corpus = recorded.get("corpus")
    sources = corpus.get("sources") if isinstance(corpus, dict) else None
    urls = [s for s in sources if _is_url(s)] if isinstance(sources, list) else []
    if urls:
        raise ConfigError(
            where,
            "corpus.sources",
            f"lists {len(urls)} URL(s) ({redact_url(urls[0])[:80]!r}...), which are not "
            f"fetched on a results folder's word; give the sources in {hint}",
        )


def rebase_on_user(
    recorded: dict[str, Any],
    user: ExperimentConfig | None = None,
    overrides: Sequence[str] = (),
    *,
    where: str,
    hint: str,
    sections: Sequence[str] | None = None,
    loads_corpus: bool = True,
) -> ExperimentConfig:
    """The config a results folder recorded (`ExperimentConfig.to_dict()` from a
    header.json or sweep.json), with every endpoint field of every component
    (`harness.components.endpoints`) taken from the user instead: from `user` (the
    experiment file they passed) or else the defaults, then `overrides` (`--set`) on
    top; an empty judge endpoint still falls back to HARNESS_JUDGE_BASE_URL when the
    judge is opened. Then `check_recorded_endpoints` (for `sections` when given).

    A command that loads the corpus (`loads_corpus`) takes the sources from `user`; with
    no `user`, the folder's sources are used only when none is a URL (a folder never
    chooses what is fetched).
    """
    data = replace_endpoints(recorded, user, _DEFAULTS)
    if loads_corpus:
        if user is not None:
            data["corpus"] = {**data.get("corpus", {}), "sources": list(user.corpus.sources)}
            # the user's paths are relative to their file, which `path` no longer names
            data["corpus"]["sources"] = [user.resolve_path(p) for p in user.corpus.sources]
        else:
            check_recorded_sources(recorded, where=where, hint=hint)
    config = experiment_from_dict(data, overrides)
    check_recorded_endpoints(recorded, config, where=where, hint=hint, sections=sections)
    return config
