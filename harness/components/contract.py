"""What a component module provides, per kind, and the records it hands back.

Every component is one module registered in `harness.components.registry`. Its settings
of its own live in `[<table>.settings.<name>]` of the experiment (`retrieval` for a
reranker, `embedder`, `judge` for a judge backend): the module declares them as a frozen
dataclass `Settings` (defaults included), the config parser reads the table into it
(type errors name the file and the field) and calls the module's `validate`; the module
reads them back with `settings_of`. A setting naming an endpoint or a key's variable
must be called `base_url` / `api_key_env` (or end so): `harness.components.endpoints`
strips those from anything read from a results folder. A module that calls one of the
endpoints listed there names it in `ENDPOINT` (e.g. "judge", "llm reranker"), so the
folder's recorded endpoint is checked against the user's when it is chosen.

The functions each kind provides are the Protocols below; the contract suites in
tests/retrieval and tests/components run against every registered module.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

NO_EQUIVALENT = "has no stock LangChain equivalent"
"""The words `export-config` reports for a component without an export."""


@dataclass(frozen=True)
class RetrieverExport:
    """A reranker's part of the exported LangChain code: the lines inside
    `build_retriever(documents)` after `store` (the FAISS store), `chunks` and
    `embeddings` exist, ending with `def retrieve(question)`; every value in them is
    written with `repr()`, never pasted as text."""

    imports: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    words: bool = False
    """Whether the code uses `words(text)`, harness's BM25 tokenizer."""
    note: str = ""
    """Non-empty when this is no stock equivalent (the code keeps a marked step
    instead): `export-config` reports it."""


@dataclass(frozen=True)
class EmbeddingsExport:
    """An embedder's part of the exported code: its import line and the Python
    expression that builds it (values through `repr()`)."""

    import_line: str
    expression: str
    note: str = ""
    """Non-empty when this is not the same model in LangChain: reported."""


@dataclass(frozen=True)
class RerankCost:
    """What a reranker costs, for the dry run."""

    free: bool = True
    """Ranking costs nothing and needs no model call: the dry run builds it, so the
    judged pairs are the real ones."""
    grades_candidates: bool = False
    """A model is asked whether each dense candidate is relevant (one call per
    (question, candidate) not in the verdict cache): the llm reranker."""


@dataclass(frozen=True)
class EmbedCost:
    """What an embedder costs, for the dry run."""

    free: bool = True
    """Embedding costs nothing (a local model): the dry run builds the index, so the
    judged pairs are the real ones; a paid one is not called (stand-ins instead)."""


class RerankerModule(Protocol):
    """A reranker (`retrieval.reranker`). Its built object holds its logged `spec`."""

    def validate(self, config: Any, where: str) -> None:
        """Check its settings in `config` (a RetrievalConfig); ConfigError names the field."""
        ...

    def build(self, ctx: Any) -> Any:
        """The reranker for a RerankContext; its `.spec` is what the log records."""
        ...

    def estimate(self, config: Any) -> RerankCost:
        """What ranking costs, for the dry run."""
        ...

    def export(self, config: Any) -> RetrieverExport:
        """Its LangChain code (or a marked step with a `note`)."""
        ...


class EmbedderModule(Protocol):
    """An embedder (`embedder.name`)."""

    def spec(self, config: Any) -> Any:
        """The ComponentSpec logged and used in the index key (never a key)."""
        ...

    def make(self, config: Any) -> Any:
        """LangChain Embeddings for an EmbedderConfig."""
        ...

    def validate(self, config: Any, where: str) -> None:
        """Check its settings in `config` when it is the chosen embedder."""
        ...

    def estimate(self, config: Any) -> EmbedCost:
        """What embedding costs, for the dry run."""
        ...

    def export(self, config: Any) -> EmbeddingsExport:
        """Its LangChain constructor."""
        ...

    def languages(self, config: Any) -> tuple[str, ...]:
        """The languages its model was trained on, by their English names (`harness.corpus.
        language`); () for a model that reads many or one the user chose. A run whose
        documents are mostly in others warns (`pipeline.prepare.language_warning`)."""
        ...


class JudgeModule(Protocol):
    """A judge backend (`judge.backend`)."""

    def validate(self, config: Any, where: str) -> None:
        """Check its settings in `config` (a JudgeConfig)."""
        ...

    def check(self, config: Any, where: str) -> None:
        """Refuse, before anything is loaded or paid, what cannot judge."""
        ...

    def identity(self, config: Any, cache_dir: Path) -> str:
        """The verdict-cache identity, without starting or calling anything (dry runs)."""
        ...

    def open(
        self, config: Any, *, cache_dir: Path, log_dir: Path | None
    ) -> AbstractContextManager[Any]:
        """The Judge, ready to grade, for as long as the context lasts."""
        ...


def settings_of(config: Any, name: str, cls: type[T]) -> T:
    """A component's own settings, `cls` (its `Settings`), from `config.settings[name]`
    (defaults for what the experiment does not set)."""
    tables: Mapping[str, Any] = getattr(config, "settings", {}) or {}
    return cls(**dict(tables.get(name, {})))


def export_note(kind: str, name: str) -> str:
    """The report line of a component without a stock LangChain equivalent."""
    return f"{kind} {name!r} {NO_EQUIVALENT}"
