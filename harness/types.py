"""Records passed between stages: frozen, and serialisable to plain JSON.

Each record is a `Record`: `to_dict()` and `from_dict()`; the result log is made of these
dicts, so the CLI, tests and notebooks all read the same typed values back.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Self

LOG_VERSION = 1


def plain(value: Any) -> Any:
    """A record (and what it holds) as plain JSON values: dicts, lists, scalars."""
    if value is None or type(value) in _SCALARS:  # most of a result line: checked first
        return value
    names = _record_fields(type(value))
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


_SCALARS = frozenset({str, int, float, bool})


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _record_fields(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass type (None for any other type), looked up once per
    type: `plain` runs over every value of every result line."""
    if cls not in _FIELDS:
        is_record = dataclasses.is_dataclass(cls)
        _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)) if is_record else None
    return _FIELDS[cls]


class Record:
    """What every record shares: `to_dict()` as plain JSON values (`plain`), and
    `from_dict()` back, as keyword arguments (a record whose dict needs reading
    overrides it)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values."""
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        """The record back from `to_dict()`."""
        return cls(**d)


@dataclass(frozen=True)
class Document(Record):
    """A document of the corpus; `source` is the file, URL or file:line it came from."""

    doc_id: str
    text: str
    source: str
    title: str = ""


@dataclass(frozen=True)
class Chunk(Record):
    """A piece of one document; `start_char` is its offset in the document's text."""

    chunk_id: str
    doc_id: str
    text: str
    start_char: int


@dataclass(frozen=True)
class SourceSpan(Record):
    """Where a generated question came from: characters `start`..`end` (end exclusive) of
    the document `doc_id`'s text. Spans are independent of any chunking; a chunk counts
    as the source when it overlaps the span (`harness.metrics.source`)."""

    doc_id: str
    start: int
    end: int
    digest: str | None = None
    """`span_digest` of the span's text when it was written (`harness generate` writes
    it), so a document edited since reads as changed; None when unknown (hand-written
    spans, sets written before it)."""

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON; without `digest` when it is unknown, as sets before it read."""
        d: dict[str, Any] = {"doc_id": self.doc_id, "start": self.start, "end": self.end}
        if self.digest is not None:
            d["digest"] = self.digest
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SourceSpan:
        """The record back from `to_dict()`."""
        digest = d.get("digest")
        return cls(
            doc_id=str(d["doc_id"]),
            start=int(d["start"]),
            end=int(d["end"]),
            digest=None if digest is None else str(digest),
        )


def span_digest(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of `text` (UTF-8): a source span's
    fingerprint of the characters it covers."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Question(Record):
    """One evaluation question.

    The optional fields come from generated question sets (`harness generate`): `type`
    (simple, multi-passage, paraphrased, distracting, situational, unanswerable), `topic`
    (a short label), `source` (the passage or passages it was written from; empty when
    unknown or for unanswerable questions), `answer`, and `extra` (every other field of
    the question's line, e.g. its critique scores), all kept in the log as they were read.
    """

    question_id: str
    text: str
    type: str | None = None
    topic: str | None = None
    source: tuple[SourceSpan, ...] = ()
    answer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values; optional fields only where set, so a plain
        question (and a log written before they existed) reads back to the same JSON."""
        out: dict[str, Any] = {"question_id": self.question_id, "text": self.text}
        for name in ("type", "topic", "answer"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.source:
            out["source"] = [s.to_dict() for s in self.source]
        if self.extra:
            out["extra"] = plain(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        """The record back from `to_dict()`."""
        return cls(
            question_id=d["question_id"],
            text=d["text"],
            type=d.get("type"),
            topic=d.get("topic"),
            source=tuple(SourceSpan.from_dict(s) for s in d.get("source") or ()),
            answer=d.get("answer"),
            extra=dict(d.get("extra") or {}),
        )


@dataclass(frozen=True)
class Hit(Record):
    """One retrieved chunk. `rank` is 1-based; `score` is the first-stage similarity
    (cosine, higher is better); `rerank_score` is set only when a reranker ran."""

    chunk_id: str
    rank: int
    score: float
    rerank_score: float | None = None


@dataclass(frozen=True)
class ComponentSpec(Record):
    """A pluggable component as written to the log: enough to rebuild it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ComponentSpec:
        """The record back from `to_dict()`; a missing `args` means no arguments."""
        return cls(name=d["name"], args=dict(d.get("args", {})))


@dataclass(frozen=True)
class Cost(Record):
    """What some LLM calls cost: HTTP requests, tokens, time, retries and failed attempts.

    `calls` counts every HTTP request (retried and failed ones included), `retries` the
    requests made again, `failed_attempts` those that brought no usable answer (429, 5xx,
    timeouts, dropped connections, malformed 200s); `latency_s` is the time of the
    answered ones. Costs add up with `+` and `sum(costs, Cost())`."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    failed_attempts: int = 0

    def __add__(self, other: Cost) -> Cost:
        """Both costs together, field by field."""
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(  # spelled out: this runs a few times per verdict on the judging loop
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_s=self.latency_s + other.latency_s,
            retries=self.retries + other.retries,
            failed_attempts=self.failed_attempts + other.failed_attempts,
        )

    def __radd__(self, other: object) -> Cost:
        """`0 + cost` is the cost, so `sum(costs)` needs no start value."""
        if other == 0:
            return self
        return NotImplemented

    @classmethod
    def of(cls, record: Any) -> Cost:
        """The cost fields of a record that carries them flat (a `CriterionVerdict`)."""
        return cls(**{n: getattr(record, n) for n in _COST_FIELDS})

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values (the keys a verdict carries them under)."""
        return plain(self)

    @property
    def answered(self) -> int:
        """The requests that brought a usable answer."""
        return self.calls - self.failed_attempts

    def usd(self, prompt_per_mtok: float, completion_per_mtok: float) -> float | None:
        """Dollars for these tokens at prices per million tokens, rounded to 6 places;
        None when no price is set."""
        if not (prompt_per_mtok or completion_per_mtok):
            return None
        paid = self.prompt_tokens * prompt_per_mtok + self.completion_tokens * completion_per_mtok
        return round(paid / 1e6, 6)


_COST_FIELDS = tuple(f.name for f in dataclasses.fields(Cost))


@dataclass(frozen=True)
class CriterionVerdict(Record):
    """The judge's answer on one criterion for one (question, chunk).

    `value` is None exactly when `error` is set: a failed verdict is never "no".
    `p_yes` is the judge's probability of "yes" when the endpoint returns logprobs.
    `calls`, tokens and `latency_s` are what this verdict cost when it was paid for (a
    re-ask after malformed output is a second call; `calls` counts every HTTP request,
    retried and failed ones included, `latency_s` only answered ones); `cached` marks a
    verdict read from the cache in this run, which cost nothing here.
    """

    criterion: str
    value: bool | None
    p_yes: float | None = None
    p_raw: float | None = None
    """The judge's own P(yes) when a calibration replaced `p_yes` (and set `value` from
    it); None when no calibration was applied. The verdict cache always holds the raw."""
    distribution: tuple[float, ...] | None = None
    """Graded judging: P(grade = 0, 1, 2, 3). `p_yes` is then P(grade >= the cut-off of
    this criterion), so "complete"'s p_yes is already P(relevant and complete)."""
    evidence: str | None = None
    """Extractive judging: the passage's sentence the judge copied as the answer."""
    reason: str = ""
    raw: str = ""
    error: str | None = None
    cached: bool = False
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    failed_attempts: int = 0
    """Of `calls`, the HTTP requests that brought no usable answer (429, 5xx, timeouts,
    dropped connections, malformed 200s), booked on error verdicts and successful alike."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CriterionVerdict:
        """The record back from `to_dict()`."""
        dist = d.get("distribution")
        return cls(**{**d, "distribution": tuple(dist) if dist is not None else None})

    @property
    def cost(self) -> Cost:
        """What this verdict cost when it was paid for (its flat cost fields)."""
        return Cost.of(self)

    def with_cost(self, cost: Cost) -> CriterionVerdict:
        """This verdict with its cost fields replaced by `cost`."""
        return dataclasses.replace(self, **cost.to_dict())

    @property
    def asked(self) -> bool:
        """False for the implied "no" of a "complete" never asked (pointwise judging asks
        it only of relevant chunks)."""
        return not self.reason.startswith("not asked")

    @property
    def probability(self) -> float | None:
        """P(yes): the judge's probability, else its answer as 0 or 1; None if it failed."""
        if self.error is not None or self.value is None:
            return None
        return self.p_yes if self.p_yes is not None else float(self.value)


@dataclass(frozen=True)
class Verdict(Record):
    """Both criteria for one (question, chunk)."""

    relevant: CriterionVerdict
    complete: CriterionVerdict

    def probabilities(self) -> tuple[float, float] | None:
        """(P(relevant), P(relevant and complete)) for soft metrics; None if judging failed.

        Graded judging gives the joint probability directly (P(grade >= 2)); the other
        modes ask "complete" of a relevant chunk, so it is P(relevant) x P(complete), and
        a "complete" never asked (judged not relevant) counts as 0.
        """
        p_rel = self.relevant.probability
        if p_rel is None or self.complete.error is not None:
            return None
        if not self.complete.asked:
            return p_rel, 0.0
        p_comp = self.complete.probability
        if p_comp is None:
            return None
        if self.complete.distribution is not None:
            return p_rel, min(p_comp, p_rel)
        return p_rel, p_rel * p_comp

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
        if self.error or not self.judged:
            return None
        if not self.relevant.value:
            return 0
        return 2 if self.complete.value else 1

    @property
    def judged(self) -> bool:
        """False for a pair lazy judging skipped once its question was settled: neither
        criterion asked, no error, no grade (never read as "no")."""
        return not (self.relevant.value is None and self.relevant.error is None)

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
class JudgedHit(Record):
    """A hit with its chunk and the judge's verdict on it."""

    hit: Hit
    chunk: Chunk
    verdict: Verdict
    flags: tuple[str, ...] = ()
    """What a reader should know about the chunk, e.g. "addresses the grader: <the
    sentence>" for text that tries to instruct the judge."""

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values (flags only where there are some)."""
        return {
            "hit": self.hit.to_dict(),
            "chunk": self.chunk.to_dict(),
            "verdict": self.verdict.to_dict(),
            **({"flags": list(self.flags)} if self.flags else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgedHit:
        """The record back from `to_dict()`."""
        return cls(
            hit=Hit.from_dict(d["hit"]),
            chunk=Chunk.from_dict(d["chunk"]),
            verdict=Verdict.from_dict(d["verdict"]),
            flags=tuple(d.get("flags", ())),
        )


FAILURE_LABELS = ("missed", "split", "judge-missed", "multi-part", "not-in-corpus")
"""Why a question with no relevant-and-complete chunk in the top k failed (see Failure)."""


@dataclass(frozen=True)
class Failure(Record):
    """Why a question failed: from its source spans when they say, else from judging a
    wider pool than the top k (`harness.pipeline.failures`).

    `label` is one of FAILURE_LABELS: "missed" (the answer is in the corpus, ranked below
    k: a pool chunk is relevant and complete, or a chunk outside the top k holds the
    source span), "split" (chunks are relevant but none complete, and one joined with its
    neighbour in the document is: a chunk-boundary problem), "judge-missed" (a chunk of
    the top k holds the source span and the judge did not call it complete),
    "multi-part" (the answer needs several source spans and the top k holds a chunk of
    each: no single chunk can be complete) or "not-in-corpus" (nothing in the pool
    answers: a gap in the documents).
    """

    label: str
    rank: int | None = None
    """missed: the answering chunk's rank in the dense list over the whole corpus (None:
    found by BM25 only, or below the ranks searched); split: the relevant chunk's dense
    rank, if it has one; judge-missed: its rank in the top k; multi-part: None (the reason
    gives each part's chunk and rank)."""
    chunk_id: str | None = None
    """missed: the answering chunk (or the one holding the span); split: the relevant
    chunk that answers with its neighbour; judge-missed: the chunk holding the span."""
    reason: str = ""
    """One sentence for a reader: what was found, and what to try."""


@dataclass(frozen=True)
class QuestionResult(Record):
    """One line of questions.jsonl: the question, its graded hits and its metrics.

    `metrics` maps `name@k` to this question's value; a metric whose top k holds a
    failed verdict is absent, and `error` says why. A failure explained at the run's k
    also carries its label's count there (e.g. `failures_missed@4` = 1).
    """

    question: Question
    hits: tuple[JudgedHit, ...]
    metrics: dict[str, float]
    error: str | None = None
    failure: Failure | None = None
    """Why the question failed (failures.explain), None when it did not fail or was not
    explained."""
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Lazy judging stopped before the last hit: `name@k` -> (least, most) of each metric
    that depends on the hits left unjudged (absent from `metrics`, never a value)."""

    def to_dict(self) -> dict[str, Any]:
        """This record as plain JSON values (`failure` only where there is one, so logs
        written before it read back to the same JSON)."""
        return {
            "question": self.question.to_dict(),
            "hits": [h.to_dict() for h in self.hits],
            "metrics": dict(self.metrics),
            "error": self.error,
            **({"failure": self.failure.to_dict()} if self.failure is not None else {}),
            **({"bounds": {k: list(v) for k, v in self.bounds.items()}} if self.bounds else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QuestionResult:
        """The record back from `to_dict()`; a missing `error` or `failure` means none."""
        failure = d.get("failure")
        return cls(
            question=Question.from_dict(d["question"]),
            hits=tuple(JudgedHit.from_dict(h) for h in d["hits"]),
            metrics=dict(d["metrics"]),
            error=d.get("error"),
            failure=Failure.from_dict(failure) if failure is not None else None,
            bounds={k: (float(v[0]), float(v[1])) for k, v in d.get("bounds", {}).items()},
        )
