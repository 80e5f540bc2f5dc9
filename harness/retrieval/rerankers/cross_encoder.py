"""`cross-encoder`: a sentence-transformers cross-encoder (LangChain's
HuggingFaceCrossEncoder) from a local folder or model name the user gives."""

from __future__ import annotations

from collections.abc import Sequence

from harness.components.contract import RerankCost, RetrieverExport
from harness.config import RetrievalConfig
from harness.errors import ConfigError, HarnessError
from harness.retrieval.rerankers.base import Candidate, RerankContext, top
from harness.types import ComponentSpec


class CrossEncoderReranker:
    """A cross-encoder scoring each (question, candidate) pair on the CPU."""

    pool = "dense"

    def __init__(self, fetch_k: int, model: str) -> None:
        if not model:
            raise ConfigError(
                "",
                "retrieval.cross_encoder",
                "the cross-encoder reranker needs a model folder or name (no weights ship with harness)",
            )
        self.spec = ComponentSpec(name="cross-encoder", args={"fetch_k": fetch_k, "model": model})
        try:
            from langchain_community.cross_encoders import HuggingFaceCrossEncoder

            self.model = HuggingFaceCrossEncoder(model_name=model, model_kwargs={"device": "cpu"})
        except Exception as exc:  # missing folder, hub unreachable, not a cross-encoder
            raise HarnessError(
                f"retrieval.cross_encoder: cannot load {model!r} as a cross-encoder "
                f"({type(exc).__name__}: {str(exc)[:200]}); give a local model folder"
            ) from None

    def rerank(
        self, question: str, candidates: Sequence[Candidate], k: int
    ) -> list[tuple[Candidate, float | None]]:
        """Cross-encoder scores over the candidate pool; an empty pool gives []."""
        if not candidates:
            return []
        scores = [float(s) for s in self.model.score([(question, c.text) for c in candidates])]
        return top(candidates, scores, k)


def build(ctx: RerankContext) -> CrossEncoderReranker:
    """The reranker for this experiment."""
    return CrossEncoderReranker(ctx.depth, ctx.config.cross_encoder)


def validate(config: RetrievalConfig, where: str) -> None:
    """`retrieval.cross_encoder`: a model folder or name, one line (it is checked for a
    model only when the reranker is built: other rerankers never need it)."""
    if any(ch in config.cross_encoder for ch in "\r\n\x00"):
        raise ConfigError(
            where, "retrieval.cross_encoder", "expected a model folder or name on one line"
        )


def estimate(config: RetrievalConfig) -> RerankCost:
    """Free: a local model on the CPU."""
    return RerankCost()


def export(config: RetrievalConfig) -> RetrieverExport:
    """CrossEncoderReranker in a ContextualCompressionRetriever over the dense top fetch_k."""
    return RetrieverExport(
        imports=(
            "from langchain_classic.retrievers import ContextualCompressionRetriever",
            "from langchain_classic.retrievers.document_compressors import CrossEncoderReranker",
            "from langchain_community.cross_encoders import HuggingFaceCrossEncoder",
        ),
        body=(
            f"    cross_encoder = HuggingFaceCrossEncoder(model_name={config.cross_encoder!r})",
            "    retriever = ContextualCompressionRetriever(",
            f"        base_compressor=CrossEncoderReranker(model=cross_encoder, top_n={config.k!r}),",
            "        base_retriever=store.as_retriever(",
            f'            search_kwargs={{"k": {config.fetch_k!r}}}',
            "        ),",
            "    )",
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        ),
    )
