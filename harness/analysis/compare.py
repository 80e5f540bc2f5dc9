"""Compare runs (or trials of a sweep) that share questions: metrics side by side, paired
bootstrap intervals for the difference to the first run, and the questions that changed.

The questions that changed are those whose value of the runs' objective statistic moved:
the first run's `sweep.objective` (soft_mrr by default, the statistic that ranked
configurations best against labels, #22), unless another metric is asked for. Every
other metric, the hard counts (mrr, hit_rate) among them, keeps its paired difference."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.log import RunLog, as_run
from harness.metrics import METRIC_NAMES, METRICS, paired_bootstrap, parse_metric_id
from harness.types import JudgedHit, QuestionResult

_V = TypeVar("_V")

COMPARED = METRIC_NAMES
"""Metrics whose paired differences are reported: every registered metric."""


@dataclass(frozen=True)
class Difference:
    """Paired difference of one metric between a run and the first run, with its bootstrap
    interval (`low`, `high`) over the `n_questions` both answered.
    """

    metric: str
    run: str
    mean_diff: float
    low: float
    high: float
    n_questions: int


@dataclass(frozen=True)
class QuestionChange:
    """A question whose change metric differs between the first run (`before`) and `run`
    (`after`), with the first relevant-and-complete hit of each (None if there is none).
    """

    question_id: str
    text: str
    run: str
    before: float
    after: float
    first_hit_before: dict[str, Any] | None
    first_hit_after: dict[str, Any] | None


@dataclass(frozen=True)
class Comparison:
    """What `compare_runs` returns: per-run means at `k`, paired differences to the first run,
    and changed questions, worst first within each run.
    """

    runs: list[str]
    k: int
    metrics: dict[str, dict[str, float]]
    """run -> metric id -> mean (each run's own header values)."""
    differences: list[Difference] = field(default_factory=list)
    changes: list[QuestionChange] = field(default_factory=list)
    shared_questions: int = 0
    bounds: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    """run -> metric id -> (least, most): a lazily judged run's metrics that depend on
    chunks it left unjudged (never in `metrics`, never given a difference)."""
    change_metric: str = "mrr"
    """The metric the changed questions are read on (the objective's, unless asked)."""
    notes: list[str] = field(default_factory=list)
    """What a reader of the differences should know first, one line each (runs judged by
    different judges, `judge_note`)."""


DEFAULT_CHANGE_METRIC = "soft_mrr"
"""The statistic compared when the runs name no usable objective (sweep.objective's
default metric)."""


def objective_metric(run: RunLog) -> str:
    """The metric name of the run's first `sweep.objective` ("soft_mrr@k" -> "soft_mrr"),
    or DEFAULT_CHANGE_METRIC when it names none that is a per-question metric (a count,
    a size, a config recorded before objectives were)."""
    sweep = run.header.config.get("sweep") if isinstance(run.header.config, dict) else None
    objective = sweep.get("objective") if isinstance(sweep, dict) else None
    if isinstance(objective, (list, tuple)) and objective and isinstance(objective[0], str):
        try:
            name, _ = parse_metric_id(objective[0])
        except ValueError:
            return DEFAULT_CHANGE_METRIC
        if name in METRIC_NAMES and name != "context_chars":
            return name
    return DEFAULT_CHANGE_METRIC


def _first_answer(q: QuestionResult) -> JudgedHit | None:
    return next((h for h in q.hits if h.verdict.grade == 2), None)


def _hit_summary(h: JudgedHit | None) -> dict[str, Any] | None:
    if h is None:
        return None
    return {"rank": h.hit.rank, "chunk_id": h.chunk.chunk_id, "text": h.chunk.text}


@dataclass(frozen=True)
class _Shared:
    """What runs are compared on: their names, their questions by id, the k, the metric
    the changed questions are read on, and the questions every run has a value of it for."""

    names: list[str]
    by_q: list[dict[str, QuestionResult]]
    k: int
    change_metric: str
    questions: list[str]
    """Ids of the shared questions, in the first run's order."""

    @property
    def key(self) -> str:
        """The change metric's id at k."""
        return f"{self.change_metric}@{self.k}"


@dataclass(frozen=True)
class _Bootstrap:
    """The paired bootstrap's settings."""

    confidence: float
    n_resamples: int
    seed: int


NOT_JUDGING = ("base_url", "prompt_variant", "engine")
"""Judge spec fields that do not change a verdict: where the endpoint is, and how it was
reached (every other field, the cache identity's, may)."""


def _judging(run: RunLog) -> dict[str, Any]:
    """What decided a run's verdicts: its judge's name and spec fields (but NOT_JUDGING),
    and the criteria wording and calibration file of its experiment."""
    spec = run.header.components.get("judge")
    args = spec.args if spec is not None else {}
    judge = run.header.config.get("judge") if isinstance(run.header.config, dict) else None
    judge = judge if isinstance(judge, dict) else {}
    return {
        "judge": spec.name if spec is not None else None,
        **{name: v for name, v in args.items() if name not in NOT_JUDGING},
        "criteria": judge.get("criteria"),
        "criteria_preset": judge.get("criteria_preset"),
        "calibration": judge.get("calibration"),
    }


def judge_note(runs: Sequence[RunLog]) -> str | None:
    """One line when the runs' verdicts came from different judges (model, mode, prompt,
    few-shot examples, sampling, criteria or calibration), None when they were judged
    alike: a difference in a judged metric is then partly the judge's, not the
    retrieval's. A field some run's log does not hold (written by an older version) is
    not compared."""
    seen = [_judging(r) for r in runs]
    held = [name for name in seen[0] if all(name in s for s in seen)]
    differ = [
        name
        for name in held
        if len({repr(s.get(name)) for s in seen}) > 1 and name != "model_sha256"
    ]
    if not differ and "model_sha256" in held and len({repr(s["model_sha256"]) for s in seen}) > 1:
        differ = ["model file"]
    if not differ:
        return None
    shown = []
    for name in differ:
        values = [s.get(name) for s in seen] if name != "model file" else []
        short = all(isinstance(v, str | bool | None) and len(str(v)) <= 40 for v in values)
        shown.append(f"{name} {' / '.join(str(v) for v in values)}" if values and short else name)
    return (
        f"the runs were judged differently ({'; '.join(shown)}): a difference in a judged "
        "metric is partly the judge's, not the retrieval's; compare runs judged alike"
    )


def compare_runs(
    runs: Sequence[RunLog | str | os.PathLike[str]],
    *,
    k: int | None = None,
    change_metric: str | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare runs at a shared k (default: the largest k every run has); the changed
    questions on `change_metric` (default: the first run's objective, `objective_metric`).

    Differences use only questions that every run answered without judge errors at k.
    `runs` are runs (`read_run`) or run folders' paths.
    """
    if isinstance(runs, (str, os.PathLike)):
        raise TypeError("expected a list of runs or run folders, got one path")
    logs = [as_run(r) for r in runs]
    if len(logs) < 2:
        raise HarnessError("compare needs at least two runs")
    shared = _shared(logs, k, change_metric)
    k = shared.k
    metrics = {name: _at_k(r.header.metrics, k) for name, r in zip(shared.names, logs, strict=True)}
    bounds = {
        name: _at_k(r.header.metric_bounds, k) for name, r in zip(shared.names, logs, strict=True)
    }
    # a difference over the questions that happen to have a value would pass for complete
    bounded = {m for b in bounds.values() for m in b}
    bootstrap = _Bootstrap(confidence, n_resamples, seed)
    others = list(zip(shared.names[1:], shared.by_q[1:], strict=True))
    diffs = [
        d for name, other in others for d in _differences(shared, name, other, bounded, bootstrap)
    ]
    changes = [c for name, other in others for c in _changes(shared, name, other)]
    changes.sort(key=lambda c: (c.run, c.after - c.before))
    return Comparison(
        shared.names,
        k,
        metrics,
        diffs,
        changes,
        len(shared.questions),
        bounds,
        shared.change_metric,
        [n for n in (judge_note(logs),) if n],
    )


def _shared(runs: Sequence[RunLog], k: int | None, change_metric: str | None) -> _Shared:
    """The k and change metric checked (or defaulted) and the questions the runs share;
    HarnessError when either is out of range or no question is shared."""
    defaulted = change_metric is None
    if change_metric is None:
        change_metric = objective_metric(runs[0])
    if change_metric not in METRIC_NAMES:
        raise HarnessError(f"--metric: expected one of {list(METRIC_NAMES)}, got {change_metric!r}")
    common_k = (
        min(max(r.header.ks) for r in runs if r.header.ks) if all(r.header.ks for r in runs) else 0
    )
    if k is None:  # 0 is not "the default": it is refused below
        k = common_k
    if k < 1 or k > common_k:
        raise HarnessError(f"--k: expected 1..{common_k} (the largest k every run has), got {k}")
    by_q = [{q.question.question_id: q for q in r.questions} for r in runs]
    wanted = f"{change_metric}@{k}"
    if defaulted and not all(any(wanted in q.metrics for q in m.values()) for m in by_q):
        # a run judged lazily has the soft metric as bounds only, one judged without
        # probabilities none: read the hard one
        change_metric = METRICS[change_metric].hard or change_metric
    key = f"{change_metric}@{k}"
    questions = [qid for qid in by_q[0] if all(qid in m and key in m[qid].metrics for m in by_q)]
    if not questions:
        if not set(by_q[0]).intersection(*by_q[1:]):
            files = sorted({str(r.header.data.get("questions_file") or "?") for r in runs})
            raise HarnessError(
                "the runs asked no question in common (questions from "
                f"{' and '.join(files)}): compare runs of the same questions"
            )
        lacking = next(
            (
                r
                for r, m in zip(runs, by_q, strict=True)
                if not any(key in q.metrics for q in m.values())
            ),
            None,
        )
        if lacking is not None:
            raise HarnessError(f"{lacking.run_dir} has no {key} value: compare another --metric")
        raise HarnessError(f"the runs share no question with a {key} value in all of them")
    return _Shared([str(r.run_dir) for r in runs], by_q, k, change_metric, questions)


def _at_k(values: Mapping[str, _V], k: int) -> dict[str, _V]:
    """The values of the metric ids at `k`."""
    return {m: v for m, v in values.items() if m.endswith(f"@{k}")}


def _differences(
    shared: _Shared,
    name: str,
    other: dict[str, QuestionResult],
    bounded: set[str],
    bootstrap: _Bootstrap,
) -> list[Difference]:
    """Run `name`'s paired differences to the first run, one per compared metric that
    is no run's bounds and that both have on some shared question."""
    base = shared.by_q[0]
    diffs: list[Difference] = []
    for metric in COMPARED:
        mk = f"{metric}@{shared.k}"
        if mk in bounded:
            continue
        pairs = [
            (base[q].metrics[mk], other[q].metrics[mk])
            for q in shared.questions
            if mk in base[q].metrics and mk in other[q].metrics
        ]
        if not pairs:
            continue
        mean, low, high = paired_bootstrap(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            n_resamples=bootstrap.n_resamples,
            confidence=bootstrap.confidence,
            seed=bootstrap.seed,
        )
        diffs.append(Difference(mk, name, mean, low, high, len(pairs)))
    return diffs


def _changes(shared: _Shared, name: str, other: dict[str, QuestionResult]) -> list[QuestionChange]:
    """The shared questions whose change metric differs between the first run and `name`."""
    base, key = shared.by_q[0], shared.key
    return [
        QuestionChange(
            question_id=qid,
            text=base[qid].question.text,
            run=name,
            before=base[qid].metrics[key],
            after=other[qid].metrics[key],
            first_hit_before=_hit_summary(_first_answer(base[qid])),
            first_hit_after=_hit_summary(_first_answer(other[qid])),
        )
        for qid in shared.questions
        if base[qid].metrics[key] != other[qid].metrics[key]
    ]
