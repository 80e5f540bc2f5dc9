"""The registries: a component's name in an experiment file -> the module that is it.

Adding a reranker, an embedder or a judge backend is one new module plus one line here
(see `harness.components.contract` for what the module provides). Modules are imported
only when their component is used, by name, so a registry line costs nothing and
nothing registers itself at import time.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EMBEDDERS: dict[str, str] = {
    "local-minilm": "harness.retrieval.embedders.local_minilm",
    "openai": "harness.retrieval.embedders.openai",
    "sentence-transformers": "harness.retrieval.embedders.sentence_transformers",
}
"""`embedder.name` -> module with `spec`, `make`, `validate` and `export`."""

RERANKERS: dict[str, str] = {
    "none": "harness.retrieval.rerankers.none",
    "bm25": "harness.retrieval.rerankers.bm25",
    "hybrid": "harness.retrieval.rerankers.hybrid",
    "mmr": "harness.retrieval.rerankers.mmr",
    "cross-encoder": "harness.retrieval.rerankers.cross_encoder",
    "llm": "harness.retrieval.rerankers.llm",
}
"""`retrieval.reranker` -> module with `build`, `validate`, `estimate` and `export`."""

JUDGES: dict[str, str] = {
    "chat": "harness.judge.backends.chat",
}
"""`judge.backend` -> module with `check`, `identity`, `open`, `validate` and `export`."""

KINDS: dict[str, dict[str, str]] = {
    "reranker": RERANKERS,
    "embedder": EMBEDDERS,
    "judge": JUDGES,
}
"""Component kind -> its registry."""


def component(table: dict[str, str], name: str) -> ModuleType:
    """The module registered under `name` (KeyError for an unknown name: config
    validation names the field before anything gets here)."""
    return importlib.import_module(table[name])


def load(kind: str, name: str) -> ModuleType:
    """The module of the `kind` component (reranker, embedder, judge) called `name`."""
    return component(KINDS[kind], name)
