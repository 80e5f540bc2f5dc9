"""`sentence-transformers`: any sentence-transformers model from a local folder (or a name
already in the local Hugging Face cache)."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from harness.components.contract import EmbedCost, EmbeddingsExport
from harness.config import EmbedderConfig
from harness.errors import ConfigError, HarnessError
from harness.types import ComponentSpec


def spec(config: EmbedderConfig) -> ComponentSpec:
    """The embedder as logged and as part of the index key."""
    return ComponentSpec(
        name="sentence-transformers", args={"model": config.model, "normalize": True}
    )


def make(config: EmbedderConfig) -> Embeddings:
    """LangChain's HuggingFaceEmbeddings over `config.model`; one clear error if it cannot load."""
    from langchain_huggingface import HuggingFaceEmbeddings

    try:
        return HuggingFaceEmbeddings(
            model_name=config.model,
            model_kwargs={"device": "cpu"},
            encode_kwargs={"normalize_embeddings": True, "batch_size": config.batch_size},
        )
    except Exception as exc:  # a missing folder or an unreachable hub raise many types
        raise HarnessError(
            f"embedder.model: cannot load {config.model!r} with sentence-transformers "
            f"({type(exc).__name__}: {str(exc)[:200]}); give a local model folder"
        ) from None


def validate(config: EmbedderConfig, where: str) -> None:
    """`embedder.model`: a model folder or name, on one line."""
    if not config.model:
        raise ConfigError(
            where, "embedder.model", "sentence-transformers needs a model folder or name"
        )
    if any(ch in config.model for ch in "\r\n\x00"):
        raise ConfigError(where, "embedder.model", "expected a model folder or name on one line")


def export(config: EmbedderConfig) -> EmbeddingsExport:
    """HuggingFaceEmbeddings over the same model."""
    return EmbeddingsExport(
        "from langchain_huggingface import HuggingFaceEmbeddings",
        "HuggingFaceEmbeddings(\n"
        f"        model_name={config.model!r},\n"
        '        encode_kwargs={"normalize_embeddings": True},\n    )',
    )


def languages(config: EmbedderConfig) -> tuple[str, ...]:
    """Any: the model is the user's choice (a multilingual one for documents not in
    English)."""
    return ()


def estimate(config: EmbedderConfig) -> EmbedCost:
    """Free: a local model on the CPU."""
    return EmbedCost()
