"""The component registries: a name in an experiment file -> the module that builds it.

Adding an embedder or a reranker is one new module plus one line here; the module
provides `spec(config) -> ComponentSpec` and a builder (`make(config)` for embedders,
`build(ctx)` for rerankers), and the contract suite in tests/retrieval runs against it.
Modules are imported only when their component is used, so a registry line costs nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EMBEDDERS: dict[str, str] = {
    "local-minilm": "harness.retrieval.embedders.local_minilm",
    "openai": "harness.retrieval.embedders.openai",
    "sentence-transformers": "harness.retrieval.embedders.sentence_transformers",
}
"""Embedder name -> module with `spec(EmbedderConfig)` and `make(EmbedderConfig)`."""

RERANKERS: dict[str, str] = {
    "none": "harness.retrieval.rerankers.none",
    "bm25": "harness.retrieval.rerankers.bm25",
    "hybrid": "harness.retrieval.rerankers.hybrid",
    "mmr": "harness.retrieval.rerankers.mmr",
    "cross-encoder": "harness.retrieval.rerankers.cross_encoder",
    "llm": "harness.retrieval.rerankers.llm",
}
"""Reranker name -> module with `build(RerankContext) -> Reranker`."""


def component(table: dict[str, str], name: str) -> ModuleType:
    """The module registered under `name` (KeyError for an unknown name: config
    validation names the field before anything gets here)."""
    return importlib.import_module(table[name])
