"""The report's data: pure functions from log records to one typed page record per page.

A page is a frozen record (`RunPage`, `SweepPage`, `ComparePage`) of frozen records; the
renderer (`render.py`) and the figures (`figures.py`) read only these, by attribute, so
what a page shows is unit-tested here and its schema is the classes below. `page.to_json()`
is the page's data as the browser's script reads it: each record's fields under their own
names, NaN and infinities as null, records of the log (a recommendation, a component spec)
and the analysis results (`validate_run`, `validate_sweep`) as they write themselves.

Nothing here draws or escapes. The
numbers are the log's own (header metrics and intervals, sweep.json's best trial,
recommendation and cost) or come from the same functions `show` and `compare` use
(`harness.analysis.compare_runs`, the sweep's `SweepBook` and `paired_bootstrap`);
nothing is recomputed another way.

Chunk texts are stored once per page in `texts` and referenced by index from every hit
(a sweep's trials retrieve the same chunks again and again). Every string goes through
`harness.secrets.redact_obj` before it leaves `page_data`'s callers (see `render.py`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.compare import Comparison
from harness.judge.calibration import trust_statement
from harness.log import (
    Recommendation,
    RunHeader,
    RunLog,
    RunStats,
    SweepLog,
    TrialRecord,
    effective_status,
)
from harness.metrics import (
    COUNTS,
    HEADLINE_METRICS,
    METRIC_NAMES,
    metric_key,
    paired_bootstrap,
)
from harness.report.text import (
    HARD_BESIDE,
    failure_counts,
    headline_metrics,
    short_name,
    unlabelled_note,
)
from harness.types import ComponentSpec, CriterionVerdict, JudgedHit, QuestionResult
from harness.words import CJK
from harness.words import words as text_words

OUTCOMES = ("complete", "relevant", "miss", "error", "not run")
"""A question's outcome at a k, as the heatmap colours it: a relevant-and-complete chunk in
the top k; relevant chunks only; nothing relevant; judging failed; never judged (a pruned
trial stopped before it)."""

CURVE_METRICS = HEADLINE_METRICS
"""The metrics drawn against k on a run's page: the headline's (a run without soft
metrics draws the other two)."""

HEADLINE = (*HEADLINE_METRICS, "relevancy_mrr")
"""The per-question metrics a question's data holds: the run's headline in its order
(its row shows these three), then relevancy_mrr."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_PAIR = re.compile(rf"[{CJK}]{{2}}")
_STOP_WORDS = frozenset(
    _WORD.findall(
        "a an and are at be by can do does did for from has have how in is it its of on or "
        "the their there this to was were what when where which who whom why will with you "
        "your i we our they them be been being should could would may might must shall"
    )
)


def to_json(value: Any) -> Any:
    """A page record (or any value it holds) as the JSON the page's script reads: a record's
    fields under their names, a log or analysis record as its own `to_dict()`, tuples as
    lists, NaN and infinities as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        own = getattr(value, "to_dict", None)
        if own is not None:
            return to_json(own())
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def question_words(text: str) -> list[str]:
    """The words of a question worth marking in a chunk: lower-cased, at least 3
    characters, no stop words, each once, in order of appearance; in Chinese and
    Japanese, which write no spaces, its character pairs (`harness.words`)."""
    seen: dict[str, None] = {}
    for run in text_words(text):
        if _CJK_PAIR.fullmatch(run):
            seen.setdefault(run, None)
            continue
        for w in _WORD.findall(run):
            if len(w) >= 3 and w not in _STOP_WORDS:
                seen.setdefault(w, None)
    return list(seen)


def word_marks(text: str, marked: Sequence[str]) -> list[list[int]]:
    """[start, end) character spans of `text` where one of `marked` (lower-case) occurs as
    a whole word, case-insensitively (a Chinese or Japanese pair wherever it occurs:
    those scripts have no word boundaries to find); sorted, overlapping and touching
    spans joined into one. No words give no spans."""
    if not marked:
        return []

    def alternatives(ws: Sequence[str]) -> str:
        return "|".join(re.escape(w) for w in sorted(ws, key=len, reverse=True)) or "(?!)"

    pairs = [w for w in marked if _CJK_PAIR.fullmatch(w)]
    whole = [w for w in marked if not _CJK_PAIR.fullmatch(w)]
    # a word ends where a letter of another script begins ("Docker中" marks "Docker")
    word = rf"(?<![^\W_{CJK}])(?:{alternatives(whole)})(?![^\W_{CJK}])"
    spans = [(m.start(), m.end()) for m in re.finditer(word, text, re.IGNORECASE)]
    # pairs overlap ("配置" after "中配"): each found where it starts, then joined
    spans += [
        (m.start(), m.start() + 2) for m in re.finditer(rf"(?=(?:{alternatives(pairs)}))", text)
    ]
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


class TextTable:
    """Chunk texts stored once per page: `ref(text)` is the index into `texts`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str) -> int:
        """The index of `text`, added on first sight."""
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


# ---------------------------------------------------------------- graded chunks


@dataclass(frozen=True)
class Criterion:
    """One criterion's verdict on a chunk: yes/no, its probability, reason and error."""

    value: bool | None
    p: float | None
    reason: str
    error: str | None
    evidence: Any

    @classmethod
    def of(cls, cv: CriterionVerdict) -> Criterion:
        """The verdict as the page shows it."""
        return cls(cv.value, cv.p_yes, cv.reason, cv.error, cv.evidence)


@dataclass(frozen=True)
class Hit:
    """One graded chunk: rank, similarity and rerank score, both verdicts, the grade (0/1/2,
    None on error), the chunk's text (an index into the page's `texts`), the spans of the
    question's words in it and its failure flags."""

    rank: int
    chunk_id: str
    doc_id: str
    score: float | None
    rerank_score: float | None
    grade: int | None
    relevant: Criterion
    complete: Criterion
    text: int
    marks: list[list[int]]
    flags: tuple[str, ...]


def hit_data(jh: JudgedHit, words: Sequence[str], texts: TextTable) -> Hit:
    """One graded chunk of a question whose marked words are `words`."""
    v = jh.verdict
    return Hit(
        rank=jh.hit.rank,
        chunk_id=jh.chunk.chunk_id,
        doc_id=jh.chunk.doc_id,
        score=jh.hit.score,
        rerank_score=jh.hit.rerank_score,
        grade=v.grade,
        relevant=Criterion.of(v.relevant),
        complete=Criterion.of(v.complete),
        text=texts.ref(jh.chunk.text),
        marks=word_marks(jh.chunk.text, words),
        flags=tuple(jh.flags),
    )


def _hits(
    q: QuestionResult, texts: TextTable, words: Sequence[str] | None = None
) -> tuple[Hit, ...]:
    """Every graded chunk of `q`, its words marked (`words`, or the question's own)."""
    marked = question_words(q.question.text) if words is None else words
    return tuple(hit_data(jh, marked, texts) for jh in q.hits)


def outcome(q: QuestionResult | None, k: int) -> str:
    """The question's outcome at k (one of OUTCOMES): "error" when its hit rate at k is
    missing (a failed verdict in the top k), "not run" when there is no result."""
    if q is None:
        return "not run"
    hit = q.metrics.get(f"hit_rate@{k}")
    if hit is None:
        return "error"
    if hit >= 1:
        return "complete"
    if any(jh.hit.rank <= k and jh.verdict.relevant.value for jh in q.hits):
        return "relevant"
    return "miss"


def _headline(q: QuestionResult, k: int) -> dict[str, float | None]:
    return {name: q.metrics.get(f"{name}@{k}") for name in HEADLINE}


# ---------------------------------------------------------------- runs


@dataclass(frozen=True)
class QuestionRow:
    """A question row: id, text, type and topics (when recorded), its headline metrics at
    k, outcome, error, failure explanation and graded chunks."""

    id: str
    text: str
    type: str | None
    topics: tuple[str, ...]
    metrics: dict[str, float | None]
    outcome: str
    error: str | None
    failure: dict[str, Any] | None
    hits: tuple[Hit, ...]


def _topics(q: QuestionResult) -> tuple[str, ...]:
    """The question's topics, where the question records carry them (generated questions)."""
    topic = getattr(q.question, "topic", None)
    if topic is None or topic == "":
        return ()
    if isinstance(topic, str):
        return (topic,)
    return tuple(str(t) for t in topic)


def question_data(q: QuestionResult, k: int, texts: TextTable) -> QuestionRow:
    """A question's row at k."""
    qtype = getattr(q.question, "type", None)
    return QuestionRow(
        id=q.question.question_id,
        text=q.question.text,
        type=None if qtype in (None, "") else str(qtype),
        topics=_topics(q),
        metrics=_headline(q, k),
        outcome=outcome(q, k),
        error=q.error,
        failure=q.failure.to_dict() if q.failure is not None else None,
        hits=_hits(q, texts),
    )


@dataclass(frozen=True)
class MetricRow:
    """A metric at every k of the run, with its 95% interval (None where there is none)."""

    name: str
    values: tuple[float | None, ...]
    ci: tuple[list[float] | None, ...]


def metric_rows(header: RunHeader) -> list[MetricRow]:
    """The metrics table of `show`/`run` (same rows, same order)."""
    return [
        MetricRow(
            name=name,
            values=tuple(header.metrics.get(f"{name}@{k}") for k in header.ks),
            ci=tuple(
                list(header.metrics_ci[f"{name}@{k}"])
                if f"{name}@{k}" in header.metrics_ci
                else None
                for k in header.ks
            ),
        )
        for name in (*METRIC_NAMES, *COUNTS)
    ]


@dataclass(frozen=True)
class Curve:
    """A metric's mean and 95% interval against k."""

    k: tuple[int, ...]
    mean: tuple[float | None, ...]
    ci: tuple[list[float | None], ...]


def _curve(h: RunHeader, name: str) -> Curve:
    return Curve(
        k=tuple(h.ks),
        mean=tuple(h.metrics.get(f"{name}@{kk}") for kk in h.ks),
        ci=tuple(list(h.metrics_ci.get(f"{name}@{kk}", (None, None))) for kk in h.ks),
    )


def judge_stats(stats: RunStats) -> list[tuple[str, Any]]:
    """The run's stats as (name, value) rows: the judge's calls, cache hits, errors,
    tokens, cost and times first, then every other recorded number."""
    recorded = stats.to_dict()
    first = (
        "judge_calls",
        "judge_cache_hits",
        "judge_errors",
        "judge_retries",
        "judge_failed_attempts",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "judge_s",
        "index_s",
        "total_s",
    )
    rows = [(key, recorded[key]) for key in first if key in recorded]
    rows += [
        (key, value)
        for key, value in recorded.items()
        if key not in first and isinstance(value, (int, float, str, bool))
    ]
    return rows


@dataclass(frozen=True)
class RunIdentity:
    """Which run, its status and size."""

    run_id: str
    name: str
    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    warnings: tuple[str, ...]
    run_dir: str
    k: int | None
    n_questions: int
    n_chunks: int | None


def _run_identity(run: RunLog) -> RunIdentity:
    h = run.header
    return RunIdentity(
        run_id=h.run_id,
        name=h.name,
        status=effective_status(h),
        started_at=h.started_at,
        finished_at=h.finished_at,
        error=h.error,
        warnings=tuple(h.warnings),
        run_dir=str(run.run_dir),
        k=h.k,
        n_questions=h.data.get("n_questions", len(run.questions)),
        n_chunks=h.data.get("n_chunks"),
    )


@dataclass(frozen=True)
class Filters:
    """The values the question table can be filtered by."""

    outcome: tuple[str, ...]
    type: tuple[str, ...]
    topic: tuple[str, ...]


def _filters(questions: Sequence[QuestionRow]) -> Filters:
    """Outcomes that occur; types and topics only where the questions carry them."""
    return Filters(
        outcome=tuple(o for o in OUTCOMES if any(q.outcome == o for q in questions)),
        type=tuple(sorted({q.type for q in questions if q.type})),
        topic=tuple(sorted({t for q in questions for t in q.topics})),
    )


# ---------------------------------------------------------------- labels (validate)


@dataclass(frozen=True)
class Confusion:
    """Judge against labels on one criterion: yes/yes, yes/no, no/yes, no/no."""

    tp: int
    fp: int
    fn: int
    tn: int


@dataclass(frozen=True)
class Agreement:
    """`validate_run`'s agreement on one criterion (only `n` = 0 when nothing compared)."""

    criterion: str
    n: int
    confusion: Confusion | None = None
    accuracy: float | None = None
    kappa: float | None = None
    kappa_ci95: list[float] | None = None
    auc: float | None = None
    judge_yes_rate: float | None = None
    human_yes_rate: float | None = None

    @classmethod
    def of(cls, criterion: str, a: Mapping[str, Any]) -> Agreement:
        """Read from `validate_run`'s agreement mapping of the criterion."""
        if not a.get("n"):
            return cls(criterion, 0)
        c = a["confusion"]
        return cls(
            criterion,
            a["n"],
            Confusion(c["tp"], c["fp"], c["fn"], c["tn"]),
            a["accuracy"],
            a["kappa"],
            a.get("kappa_ci95"),
            a.get("auc"),
            a["judge_yes_rate"],
            a["human_yes_rate"],
        )


@dataclass(frozen=True)
class MetricPair:
    """A metric at the validation's k by the judge and by the labels."""

    name: str
    judge: float | None
    human: float | None


@dataclass(frozen=True)
class CorrectedEstimate:
    """A label-corrected (PPI) estimate of a metric over the whole run."""

    metric: str
    judge_only: float
    ppi: float
    ci95: list[float]
    n_labelled: int


VALIDATED_METRICS = ("hit_rate", "mrr", "relevancy_mrr", "precision", "ndcg")
"""The metrics the judge-against-labels section compares."""


@dataclass(frozen=True)
class RunValidation:
    """`validate_run`'s result, typed for the page; `to_dict` is the result as it was
    given (what the page's JSON holds)."""

    result: Mapping[str, Any]
    questions_labelled: int
    questions_in_run: int
    k: int
    relevant_grade: int
    complete_grade: int
    unjudged: str
    """How the chunks the labels do not list counted, in words (`unlabelled_note`)."""
    agreement: tuple[Agreement, ...]
    metrics: tuple[MetricPair, ...]
    corrected: tuple[CorrectedEstimate, ...]

    @classmethod
    def of(cls, v: Mapping[str, Any]) -> RunValidation:
        """Read from `validate_run`'s mapping."""
        k = v["k"]
        return cls(
            result=v,
            questions_labelled=v["questions_labelled"],
            questions_in_run=v["questions_in_run"],
            k=k,
            relevant_grade=v["relevant_grade"],
            complete_grade=v["complete_grade"],
            unjudged=unlabelled_note(v),
            agreement=tuple(Agreement.of(c, a) for c, a in v["agreement"].items()),
            metrics=tuple(
                MetricPair(
                    f"{name}@{k}",
                    v["metrics"]["judge"].get(f"{name}@{k}"),
                    v["metrics"]["human"].get(f"{name}@{k}"),
                )
                for name in VALIDATED_METRICS
            ),
            corrected=tuple(
                CorrectedEstimate(key, p["judge_only"], p["ppi"], p["ci95"], p["n_labelled"])
                for key, p in (v.get("ppi") or {}).items()
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as `validate_run` returned it."""
        return dict(self.result)


@dataclass(frozen=True)
class TrialAgreement:
    """A trial's metric by the judge and by the labels (`validate_sweep`'s rows)."""

    number: int
    judge: float
    human: float


@dataclass(frozen=True)
class SweepValidation:
    """`validate_sweep`'s result, typed for the page; `to_dict` is the result as given."""

    result: Mapping[str, Any]
    metric: str
    trials: int
    kendall_tau: float | None
    top: tuple[tuple[TrialAgreement, TrialAgreement], ...]
    """The i-th best trial by the judge beside the i-th best by the labels."""
    rows: tuple[TrialAgreement, ...]

    @classmethod
    def of(cls, v: Mapping[str, Any]) -> SweepValidation:
        """Read from `validate_sweep`'s mapping."""

        def trial(r: Mapping[str, Any]) -> TrialAgreement:
            return TrialAgreement(r["number"], r["judge"], r["human"])

        return cls(
            result=v,
            metric=v["metric"],
            trials=v["trials"],
            kendall_tau=v["kendall_tau"],
            top=tuple(
                (trial(a), trial(b))
                for a, b in zip(v["top_by_judge"], v["top_by_human"], strict=True)
            ),
            rows=tuple(trial(r) for r in v.get("rows") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as `validate_sweep` returned it."""
        return dict(self.result)


# ---------------------------------------------------------------- the run page


@dataclass(frozen=True)
class RunTrust:
    """How far a run's numbers can be trusted, for the page's first section: the verdict
    (trusted, biased, untrusted, or None when unknown), the statement (with what to run
    when the judge's error rates are unknown, `judge.calibration.trust_statement`), what
    the rates rest on (exam or labels) and the corrected complete-rate with its interval."""

    verdict: str | None
    statement: str
    basis: str | None
    complete_rate: dict[str, Any] | None

    @staticmethod
    def of(trust: Mapping[str, Any] | None) -> RunTrust:
        """From a run header's `stats.trust` (None in older logs)."""
        t = dict(trust or {})
        statement = trust_statement(t)
        verdict = t.get("verdict") or (statement.split(":", 1)[0] if t else None)
        rate = t.get("complete_rate")
        return RunTrust(
            verdict=verdict if isinstance(verdict, str) else None,
            statement=statement,
            basis=t.get("basis"),
            complete_rate=dict(rate) if isinstance(rate, Mapping) else None,
        )


@dataclass(frozen=True)
class Headline:
    """A headline metric at the run's k: soft_mrr first, mrr and hit_rate beside it."""

    key: str
    value: float
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class RunPage:
    """The page of one run."""

    kind: str
    title: str
    run: RunIdentity
    ks: tuple[int, ...]
    metrics: tuple[MetricRow, ...]
    curves: dict[str, Curve]
    failure_counts: dict[str, float]
    """`harness.report.text.failure_counts`: each label's count (and "not explained")."""
    judge: tuple[tuple[str, Any], ...]
    questions: tuple[QuestionRow, ...]
    filters: Filters
    texts: tuple[str, ...]
    config: dict[str, Any]
    components: dict[str, ComponentSpec]
    data: dict[str, Any]
    validation: RunValidation | None
    validation_note: str | None
    trust: RunTrust
    headline: tuple[Headline, ...]

    def to_json(self) -> dict[str, Any]:
        """The page's data as the page's script reads it."""
        return dict(to_json(self))


def run_page(
    run: RunLog,
    *,
    validation: Mapping[str, Any] | None = None,
    validation_note: str | None = None,
) -> RunPage:
    """The page of one run: identity, metrics at every k with intervals, the curves of
    soft MRR, MRR and hit rate against k, the judge's stats, every question with its
    graded chunks (filters: outcome, error, type, topic), the configuration and component
    specs, and the `validate_run` result when labels were given (else `validation_note`
    says why not)."""
    h = run.header
    k = h.k or 1
    texts = TextTable()
    questions = tuple(question_data(q, k, texts) for q in run.questions)
    return RunPage(
        kind="run",
        title=f"run {h.run_id}",
        run=_run_identity(run),
        ks=tuple(h.ks),
        metrics=tuple(metric_rows(h)),
        curves={
            name: _curve(h, name)
            for name in CURVE_METRICS
            if any(f"{name}@{kk}" in h.metrics for kk in h.ks)
        },
        failure_counts=failure_counts(h),
        judge=tuple(judge_stats(h.stats)),
        questions=questions,
        filters=_filters(questions),
        texts=tuple(texts.texts),
        config=h.config,
        components=dict(h.components),
        data=h.data,
        validation=RunValidation.of(validation) if validation is not None else None,
        validation_note=validation_note,
        trust=RunTrust.of(h.stats.trust),
        headline=tuple(Headline(*row) for row in headline_metrics(h)),
    )


# ---------------------------------------------------------------- sweeps


def _objective_key(objective: str, params: Mapping[str, Any]) -> str | None:
    k = params.get("k")
    return metric_key(objective, int(k)) if k is not None else None


def _rank_key(direction: str) -> Any:
    sign = 1.0 if direction == "maximize" else -1.0

    def key(t: TrialRecord) -> tuple[float, int]:
        return (-sign * (t.values or [0.0])[0], t.number)

    return key


@dataclass(frozen=True)
class Difference:
    """A trial's paired difference to the best on the objective, with its interval."""

    trial: int
    mean: float
    low: float
    high: float
    n: int


def forest(
    best: int | None,
    per_question: Mapping[int, Mapping[str, float]],
    numbers: Iterable[int],
    *,
    confidence: float = 0.95,
) -> list[Difference]:
    """Each trial's paired difference to the best (trial - best, on the objective, over the
    questions both answered) with its percentile bootstrap interval: the same
    `paired_bootstrap` and defaults as the sweep's "cannot be told apart" marks. Trials
    sharing fewer than two questions with the best are left out."""
    if best is None or best not in per_question:
        return []
    base = per_question[best]
    out = []
    for n in numbers:
        if n == best or n not in per_question:
            continue
        other = per_question[n]
        shared = [q for q in base if q in other]
        if len(shared) < 2:
            continue
        mean, low, high = paired_bootstrap(
            [base[q] for q in shared], [other[q] for q in shared], confidence=confidence
        )
        out.append(Difference(n, mean, low, high, len(shared)))
    return out


@dataclass(frozen=True)
class Sampler:
    """How Optuna proposed the settings."""

    name: str
    seed: int | None
    reason: str = ""
    """Why it is not the experiment's own sampler (a small space runs as a grid)."""


@dataclass(frozen=True)
class TrialCounts:
    """Trials by how they ended."""

    complete: int
    pruned: int
    failed: int
    repeats: int = 0


@dataclass(frozen=True)
class SweepIdentity:
    """Which sweep, its status, objectives, search and storage."""

    sweep_id: str
    status: str
    updated_at: str | None
    error: str | None
    objective: tuple[str, ...]
    directions: tuple[str, ...]
    sampler: Sampler
    pruner: Any
    trials_requested: int | None
    counts: TrialCounts
    storage: str | None
    sweep_dir: str
    warnings: tuple[str, ...] = ()


def _sweep_identity(sweep: SweepLog) -> SweepIdentity:
    s = sweep.summary
    return SweepIdentity(
        sweep_id=s.sweep_id,
        status=effective_status(s),
        updated_at=s.updated_at,
        error=s.error,
        objective=tuple(s.objective),
        directions=tuple(s.directions),
        sampler=Sampler(s.sampler.name, s.sampler.seed, s.sampler.reason),
        pruner=s.pruner,
        trials_requested=s.n_trials_requested,
        counts=TrialCounts(s.counts.complete, s.counts.pruned, s.counts.failed, s.counts.repeats),
        storage=s.storage,
        sweep_dir=str(sweep.sweep_dir),
        warnings=tuple(s.warnings),
    )


@dataclass(frozen=True)
class BoardRow:
    """A trial on the leaderboard: its rank (complete trials only), settings, objective
    values with their interval, the marks (best, recommended, tie, Pareto front) and its
    paired difference to the best."""

    rank: int | None
    number: int
    state: str
    params: dict[str, Any]
    values: list[float] | None
    ci: list[float] | None
    context_chars: float | None
    best: bool
    recommended: bool
    tie: bool
    pareto: bool
    p_holm: float | None
    diff: Difference | None
    hard: dict[str, float | None]
    """The yes/no counts beside the objective: mrr and hit_rate at the trial's k (None
    without a run)."""
    questions_done: int | None
    duration_s: float | None
    error: str | None
    run_dir: str | None


@dataclass(frozen=True)
class _Marks:
    """Which trials the summary marks: the best, the ties, the Pareto front, Holm p-values
    of the recommendation's paired test, and the recommended trial."""

    best: int | None
    ties: frozenset[int]
    front: frozenset[int]
    p_holm: dict[int, float]
    recommended: int | None


def _marks(sweep: SweepLog) -> _Marks:
    s = sweep.summary
    best = s.best[0].number if s.best and len(s.objective) == 1 else None
    rec = s.recommendation
    if rec is not None:
        ties = frozenset(rec.indistinguishable)
        p_holm = {t.trial: t.p_holm for t in rec.comparisons}
    else:
        ties = (
            frozenset(s.best[0].indistinguishable or [])
            if s.best and best is not None
            else frozenset()
        )
        p_holm = {}
    front = frozenset(b.number for b in s.best) if len(s.objective) > 1 else frozenset()
    return _Marks(best, ties, front, p_holm, rec.trial if rec is not None else None)


def _board_row(
    t: TrialRecord,
    rank: int | None,
    run: RunLog | None,
    objective: str,
    marks: _Marks,
    diff: Difference | None,
) -> BoardRow:
    key = _objective_key(objective, t.params) if objective else None
    ci = run.header.metrics_ci.get(key) if run is not None and key else None
    k = t.params.get("k")
    return BoardRow(
        rank=rank,
        number=t.number,
        state=t.state,
        params=t.params,
        values=t.values,
        ci=list(ci) if ci is not None else None,
        context_chars=run.header.metrics.get(f"context_chars@{k}") if run is not None else None,
        best=t.number == marks.best,
        recommended=t.number == marks.recommended,
        tie=t.number in marks.ties,
        pareto=t.number in marks.front,
        p_holm=marks.p_holm.get(t.number),
        diff=diff,
        hard={
            name: run.header.metrics.get(f"{name}@{k}") if run is not None else None
            for name in HARD_BESIDE
        },
        questions_done=t.questions_done,
        duration_s=t.duration_s,
        error=t.error,
        run_dir=t.run_dir,
    )


def _leaderboard(
    sweep: SweepLog, runs: Mapping[int, RunLog], marks: _Marks
) -> tuple[tuple[BoardRow, ...], tuple[Difference, ...]]:
    """The leaderboard (complete trials ranked by the first objective, then the others)
    and the forest of the complete trials' differences to the best, in rank order."""
    from harness.sweep import SweepBook

    s = sweep.summary
    trials = list(sweep.trials)
    objective = s.objective[0] if s.objective else ""
    direction = s.directions[0] if s.directions else "maximize"
    book = SweepBook(tuple(s.objective[:1]))
    for t in trials:
        book.add(t, runs.get(t.number))
    complete = sorted(
        (t for t in trials if t.state == "complete" and t.values), key=_rank_key(direction)
    )
    others = [t for t in trials if t not in complete]
    diffs = {
        d.trial: d
        for d in forest(
            marks.best, book.per_question, [t.number for t in complete], confidence=0.95
        )
    }
    board = tuple(
        _board_row(
            t,
            rank if t in complete else None,
            runs.get(t.number),
            objective,
            marks,
            diffs.get(t.number),
        )
        for rank, t in enumerate([*complete, *others], 1)
    )
    return board, tuple(diffs[t.number] for t in complete if t.number in diffs)


@dataclass(frozen=True)
class TrialPoint:
    """A trial as the search plots read it."""

    number: int
    state: str
    params: dict[str, Any]
    values: list[float] | None


@dataclass(frozen=True)
class Heatmap:
    """Questions x trials: each trial's outcome index (into OUTCOMES) per question."""

    questions: tuple[str, ...]
    question_text: tuple[str, ...]
    trials: tuple[int, ...]
    outcome: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Cell:
    """A heatmap cell: what a trial retrieved for a question, at the trial's k."""

    k: int
    outcome: str
    error: str | None
    metrics: dict[str, float | None]
    hits: tuple[Hit, ...]


def _heatmap(
    sweep: SweepLog, runs: Mapping[int, RunLog], texts: TextTable
) -> tuple[Heatmap, dict[str, dict[str, Cell]]]:
    """One heatmap row per trial with a run, one column per question (in order of first
    appearance), and every cell's chunks by trial number and question id."""
    with_runs = [t for t in sweep.trials if t.number in runs]
    qids: dict[str, str] = {}
    for t in with_runs:
        for q in runs[t.number].questions:
            qids.setdefault(q.question.question_id, q.question.text)
    rows, cells = [], {}
    for t in with_runs:
        run = runs[t.number]
        k = run.header.k or int(t.params.get("k", 1))
        by_id = {q.question.question_id: q for q in run.questions}
        rows.append(tuple(OUTCOMES.index(outcome(by_id.get(qid), k)) for qid in qids))
        cells[str(t.number)] = {
            qid: Cell(k, outcome(q, k), q.error, _headline(q, k), _hits(q, texts))
            for qid, q in by_id.items()
        }
    heat = Heatmap(
        questions=tuple(qids),
        question_text=tuple(qids.values()),
        trials=tuple(t.number for t in with_runs),
        outcome=tuple(rows),
    )
    return heat, cells


def _varied(trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """The parameters that take more than one value over the trials."""
    return tuple(
        sorted(
            {
                name
                for t in trials
                for name in t.params
                if len({repr(u.params.get(name)) for u in trials if name in u.params}) > 1
            }
        )
    )


@dataclass(frozen=True)
class SweepCost:
    """What the sweep's judging cost, and what it would have without the cache."""

    judge_calls: int
    judge_cache_hits: int
    judge_errors: int
    distinct_verdicts: int
    naive_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


@dataclass(frozen=True)
class SweepPage:
    """The page of a sweep."""

    kind: str
    title: str
    sweep: SweepIdentity
    best: int | None
    front: tuple[int, ...]
    recommendation: Recommendation | None
    importances: dict[str, float]
    importances_note: str | None
    leaderboard: tuple[BoardRow, ...]
    forest: tuple[Difference, ...]
    params: tuple[str, ...]
    trials: tuple[TrialPoint, ...]
    heatmap: Heatmap
    cells: dict[str, dict[str, Cell]]
    texts: tuple[str, ...]
    cost: SweepCost
    config: dict[str, Any]
    space: dict[str, Any]
    validation: SweepValidation | None
    validation_note: str | None
    recommended_trust: RunTrust | None
    """The recommended trial's trust statement (None without a recommendation or its run)."""

    def to_json(self) -> dict[str, Any]:
        """The page's data as the page's script reads it."""
        return dict(to_json(self))


def sweep_page(
    sweep: SweepLog,
    runs: Mapping[int, RunLog],
    *,
    validation: Mapping[str, Any] | None = None,
    validation_note: str | None = None,
) -> SweepPage:
    """The page of a sweep, from sweep.json, trials.jsonl and each trial's run (`runs`,
    by trial number; a trial without a run folder is simply absent).

    The leaderboard ranks complete trials by the first objective (then pruned, failed),
    each with its objective's 95% interval from its own run header, and marks the best,
    the recommended trial and the trials the recommendation's paired test (or, without
    one, the best trial's bootstrap) cannot separate from the best; `forest` holds each
    trial's paired difference to the best. The heatmap has one row per trial with a run
    and one column per question: its outcome at the trial's k and the chunks retrieved.
    """
    s = sweep.summary
    marks = _marks(sweep)
    board, diffs = _leaderboard(sweep, runs, marks)
    texts = TextTable()
    heat, cells = _heatmap(sweep, runs, texts)
    st = s.stats
    return SweepPage(
        kind="sweep",
        title=f"sweep {s.sweep_id}",
        sweep=_sweep_identity(sweep),
        best=marks.best,
        front=tuple(sorted(marks.front)),
        recommendation=s.recommendation,
        importances=dict(s.importances),
        importances_note=s.importances_note,
        leaderboard=board,
        forest=diffs,
        params=_varied(sweep.trials),
        trials=tuple(TrialPoint(t.number, t.state, t.params, t.values) for t in sweep.trials),
        heatmap=heat,
        cells=cells,
        texts=tuple(texts.texts),
        cost=SweepCost(
            st.judge_calls,
            st.judge_cache_hits,
            st.judge_errors,
            st.distinct_verdicts,
            st.naive_calls,
            st.prompt_tokens,
            st.completion_tokens,
            st.cost_usd,
        ),
        config=s.config,
        space=s.space,
        validation=SweepValidation.of(validation) if validation is not None else None,
        validation_note=validation_note,
        recommended_trust=(
            RunTrust.of(runs[marks.recommended].header.stats.trust)
            if marks.recommended is not None and marks.recommended in runs
            else None
        ),
    )


# ---------------------------------------------------------------- comparisons


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


@dataclass(frozen=True)
class ComparedRun:
    """A run of the comparison: its label ([0], [1], ...), name, folder and size."""

    label: str
    name: str
    run_dir: str
    status: str
    n_questions: int
    judge_calls: Any


@dataclass(frozen=True)
class SettingRow:
    """A setting whose value differs between the runs, with each run's value."""

    setting: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class ComparedMetric:
    """A metric at the shared k, one value per run."""

    metric: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class RunDifference:
    """A run's paired difference to the first run on a metric, with its interval."""

    metric: str
    run: int
    mean: float
    low: float
    high: float
    n: int
    significant: bool


@dataclass(frozen=True)
class Change:
    """A question whose change metric moved: its value and graded chunks before (the first
    run) and after (run `run`)."""

    question_id: str
    text: str
    run: int
    before: float
    after: float
    better: bool
    hits_before: tuple[Hit, ...]
    hits_after: tuple[Hit, ...]
    outcome_before: str
    outcome_after: str


@dataclass(frozen=True)
class ComparePage:
    """The page of a comparison."""

    kind: str
    title: str
    k: int
    change_metric: str
    shared_questions: int
    runs: tuple[ComparedRun, ...]
    settings: tuple[SettingRow, ...]
    metrics: tuple[ComparedMetric, ...]
    differences: tuple[RunDifference, ...]
    changes: tuple[Change, ...]
    texts: tuple[str, ...]
    notes: tuple[str, ...] = ()
    """What a reader of the differences should know first (`Comparison.notes`)."""

    def to_json(self) -> dict[str, Any]:
        """The page's data as the page's script reads it."""
        return dict(to_json(self))


def _differing_settings(runs: Sequence[RunLog]) -> tuple[SettingRow, ...]:
    """The settings (flattened config keys, except the file's path) the runs disagree on."""
    flats = [_flat(r.header.config) for r in runs]
    keys = sorted({key for f in flats for key in f})
    return tuple(
        SettingRow(key, tuple(f.get(key) for f in flats))
        for key in keys
        if len({repr(f.get(key)) for f in flats}) > 1 and key != "path"
    )


def _changes(runs: Sequence[RunLog], comp: Comparison, texts: TextTable) -> tuple[Change, ...]:
    """Every changed question with the first run's chunks and the other run's."""
    index = {str(r.run_dir): i for i, r in enumerate(runs)}
    by_q = [{q.question.question_id: q for q in r.questions} for r in runs]
    out = []
    for c in comp.changes:
        i = index[c.run]
        before, after = by_q[0][c.question_id], by_q[i][c.question_id]
        words = question_words(c.text)
        out.append(
            Change(
                question_id=c.question_id,
                text=c.text,
                run=i,
                before=c.before,
                after=c.after,
                better=c.after > c.before,
                hits_before=_hits(before, texts, words),
                hits_after=_hits(after, texts, words),
                outcome_before=outcome(before, comp.k),
                outcome_after=outcome(after, comp.k),
            )
        )
    return tuple(out)


def compare_page(
    runs: Sequence[RunLog], comp: Comparison, change_metric: str = "mrr"
) -> ComparePage:
    """The page of a comparison (`harness compare`'s `Comparison` of `runs`): the runs, the
    settings that differ, metrics side by side at the shared k, each run's paired
    differences to the first with their intervals, and the questions whose change
    metric (`change_metric`, as given to `compare_runs`) moved, with every graded chunk of
    the first run (before) and the other (after).
    """
    k = comp.k
    index = {str(r.run_dir): i for i, r in enumerate(runs)}
    texts = TextTable()
    changes = _changes(runs, comp, texts)
    return ComparePage(
        kind="compare",
        title="compare " + " vs ".join(short_name(r.run_dir) for r in runs),
        k=k,
        change_metric=change_metric,
        shared_questions=comp.shared_questions,
        runs=tuple(
            ComparedRun(
                label=f"[{i}]",
                name=short_name(r.run_dir),
                run_dir=str(r.run_dir),
                status=effective_status(r.header),
                n_questions=len(r.questions),
                judge_calls=r.header.stats.judge_calls,
            )
            for i, r in enumerate(runs)
        ),
        settings=_differing_settings(runs),
        metrics=tuple(
            ComparedMetric(
                f"{m}@{k}", tuple(comp.metrics[str(r.run_dir)].get(f"{m}@{k}") for r in runs)
            )
            for m in (*METRIC_NAMES, *COUNTS)
        ),
        differences=tuple(
            RunDifference(
                metric=d.metric,
                run=index[d.run],
                mean=d.mean_diff,
                low=d.low,
                high=d.high,
                n=d.n_questions,
                significant=not d.low <= 0 <= d.high,
            )
            for d in comp.differences
        ),
        changes=changes,
        texts=tuple(texts.texts),
        notes=tuple(comp.notes),
    )


Page = RunPage | SweepPage | ComparePage
"""Any page of the report."""
