"""Records passed between stages: frozen, and serialisable to plain JSON.

Each record has `to_dict()` and `from_dict()`; the result log is made of these dicts, so
the CLI, tests and notebooks all read the same typed values back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

LOG_VERSION = 1


def plain(value: Any) -> Any:
    """A record (and what it holds) as plain JSON values: dicts, lists, scalars."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Document:
    """A document of the corpus; `source` is the file, URL or file:line it came from."""

    doc_id: str
    text: str
    source: str
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class Chunk:
    """A piece of one document; `start_char` is its offset in the document's text."""

    chunk_id: str
    doc_id: str
    text: str
    start_char: int

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class Question:
    """One evaluation question."""

    question_id: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk. `rank` is 1-based; `score` is the first-stage similarity
    (cosine, higher is better); `rerank_score` is set only when a reranker ran."""

    chunk_id: str
    rank: int
    score: float
    rerank_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hit:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class ComponentSpec:
    """A pluggable component as written to the log: enough to rebuild it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ComponentSpec:
        """The record back from `to_dict()`; a missing `args` means no arguments."""
        return cls(name=d["name"], args=dict(d.get("args", {})))


@dataclass(frozen=True)
class CriterionVerdict:
    """The judge's answer on one criterion for one (question, chunk).

    `value` is None exactly when `error` is set: a failed verdict is never "no".
    `p_yes` is the judge's probability of "yes" when the endpoint returns logprobs.
    `calls`, tokens and `latency_s` are what this verdict cost when it was paid for (a
    re-ask after malformed output is a second call); `cached` marks a verdict read from
    the cache in this run, which cost nothing here.
    """

    criterion: str
    value: bool | None
    p_yes: float | None = None
    reason: str = ""
    raw: str = ""
    error: str | None = None
    cached: bool = False
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CriterionVerdict:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class Verdict:
    """Both criteria for one (question, chunk)."""

    relevant: CriterionVerdict
    complete: CriterionVerdict

    @property
    def error(self) -> str | None:
        """The criteria's errors joined by "; "; None if both were judged."""
        errors = [c.error for c in (self.relevant, self.complete) if c.error]
        return "; ".join(errors) if errors else None

    @property
    def grade(self) -> int | None:
        """0 irrelevant, 1 relevant, 2 relevant and complete; None if judging failed.

        A chunk judged complete but not relevant gets 0: completeness without relevance
        is a judge inconsistency, and the metrics ask for both.
        """
        if self.error:
            return None
        if not self.relevant.value:
            return 0
        return 2 if self.complete.value else 1

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return {"relevant": self.relevant.to_dict(), "complete": self.complete.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """The record back from `to_dict()`."""
        return cls(
            relevant=CriterionVerdict.from_dict(d["relevant"]),
            complete=CriterionVerdict.from_dict(d["complete"]),
        )


@dataclass(frozen=True)
class JudgedHit:
    """A hit with its chunk and the judge's verdict on it."""

    hit: Hit
    chunk: Chunk
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return {
            "hit": self.hit.to_dict(),
            "chunk": self.chunk.to_dict(),
            "verdict": self.verdict.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgedHit:
        """The record back from `to_dict()`."""
        return cls(
            hit=Hit.from_dict(d["hit"]),
            chunk=Chunk.from_dict(d["chunk"]),
            verdict=Verdict.from_dict(d["verdict"]),
        )


@dataclass(frozen=True)
class QuestionResult:
    """One line of questions.jsonl: the question, its graded hits and its metrics.

    `metrics` maps `name@k` to this question's value; a metric whose top k holds a
    failed verdict is absent, and `error` says why.
    """

    question: Question
    hits: tuple[JudgedHit, ...]
    metrics: dict[str, float]
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return {
            "question": self.question.to_dict(),
            "hits": [h.to_dict() for h in self.hits],
            "metrics": dict(self.metrics),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QuestionResult:
        """The record back from `to_dict()`; a missing `error` means none."""
        return cls(
            question=Question.from_dict(d["question"]),
            hits=tuple(JudgedHit.from_dict(h) for h in d["hits"]),
            metrics=dict(d["metrics"]),
            error=d.get("error"),
        )
