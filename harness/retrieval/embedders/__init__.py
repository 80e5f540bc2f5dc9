"""Embedders, built from the registry by name, behind a vector cache.

embedder_spec(config)     the {name, args} logged and used in the index key
make_embeddings(config)   the raw LangChain Embeddings (memoised per process)
embedder_languages(config) the languages its model reads (() : any)
CachedEmbedder            embeds each distinct text once per embedder spec
"""

from __future__ import annotations

import functools

from langchain_core.embeddings import Embeddings

from harness.components.registry import EMBEDDERS, component
from harness.config import EmbedderConfig
from harness.retrieval.embedders.base import CachedEmbedder, spec_key
from harness.types import ComponentSpec

__all__ = ["CachedEmbedder", "embedder_languages", "embedder_spec", "make_embeddings", "spec_key"]


def embedder_spec(config: EmbedderConfig) -> ComponentSpec:
    """The embedder as logged and as part of the index key. Never holds a key."""
    return component(EMBEDDERS, config.name).spec(config)


def embedder_languages(config: EmbedderConfig) -> tuple[str, ...]:
    """The languages the embedder's model was trained on; () when it reads many or is the
    user's own choice."""
    return tuple(component(EMBEDDERS, config.name).languages(config))


@functools.lru_cache(maxsize=4)
def make_embeddings(config: EmbedderConfig) -> Embeddings:
    """The raw LangChain embeddings for a config (no vector cache). Memoised per process:
    loading a model takes seconds, and a sweep asks for the same one in every trial."""
    return component(EMBEDDERS, config.name).make(config)
