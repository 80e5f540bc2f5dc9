"""A sweep's bookkeeping: the best trial(s), the trials that tie with it, the
recommendation (harness.sweep.recommend) and the cost.

`SweepBook` takes each finished trial once, with its run already in memory, and keeps
what the summary needs (per-question objective values, summed stats, the set of
distinct verdicts), so rewriting sweep.json after a trial reads no earlier trial's log:
the work per trial does not grow with the number of trials before it. A resumed sweep
reads each earlier trial's log once, at start.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.log import (
    HEADER,
    BestTrial,
    Recommendation,
    RunLog,
    SweepStats,
    TrialCounts,
    TrialRecord,
    read_run,
)
from harness.metrics import (
    direction,
    metric_key,
    paired_bootstrap,
    paired_permutation_p,
    parse_metric_id,
    winner_warning,
)
from harness.metrics.ir import Direction
from harness.sweep.recommend import recommend

_STAT_KEYS = (
    "judge_calls",
    "judge_cache_hits",
    "judge_errors",
    "judge_retries",
    "prompt_tokens",
    "completion_tokens",
)


def directions(objective: Sequence[str]) -> list[Direction]:
    """Optuna directions: context size and failure counts are minimised, the rest maximised."""
    return [direction(parse_metric_id(m)[0]) for m in objective]


def best_trials(trials: Iterable[TrialRecord], objective: Sequence[str]) -> list[BestTrial]:
    """The best complete trial (one objective) or the Pareto front (two), best first."""
    done = [t for t in trials if t.state == "complete" and t.values]
    if not done:
        return []
    sign = [1.0 if d == "maximize" else -1.0 for d in directions(objective)]

    def key(t: TrialRecord) -> tuple[float, ...]:
        return tuple(s * v for s, v in zip(sign, t.values or [], strict=True))

    if len(objective) == 1:
        front = [max(done, key=lambda t: (key(t), -t.number))]
    else:
        front = [
            t
            for t in done
            if not any(
                all(a >= b for a, b in zip(key(o), key(t), strict=True)) and key(o) != key(t)
                for o in done
            )
        ]
        front.sort(key=lambda t: key(t), reverse=True)
    return [BestTrial(t.number, t.params, t.values, t.run_dir) for t in front]


def source_judge_disagreement(trials: dict[int, tuple[dict[str, float], int]]) -> str | None:
    """From complete trials (number -> (run metrics, k)): `winner_warning` of source_mrr@k
    against the judge's mrr@k over the trials that have both (two at least)."""
    names, source, judge = [], [], []
    for number, (metrics, k) in sorted(trials.items()):
        s, j = metrics.get(f"source_mrr@{k}"), metrics.get(f"mrr@{k}")
        if s is None or j is None:
            continue
        names.append(f"trial {number}")
        source.append(float(s))
        judge.append(float(j))
    if len(names) < 2:
        return None
    return winner_warning(source, judge, names)


@dataclass
class SweepBook:
    """Running totals of a sweep, fed one finished trial at a time."""

    objective: tuple[str, ...]
    confidence: float = 0.95
    trials: dict[int, TrialRecord] = field(default_factory=dict)
    per_question: dict[int, dict[str, float]] = field(default_factory=dict)
    """Complete trial -> question id -> its value of the (single) objective."""
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Trial -> its run's judge stats, questions and k (for the naive-call count)."""
    distinct: set[tuple[str, str, str]] = field(default_factory=set)
    _ties: dict[tuple[int, int], bool] = field(default_factory=dict)
    """(best, other) -> cannot be told apart; recomputed only for a new best."""
    metrics: dict[int, dict[str, float]] = field(default_factory=dict)
    """Complete trial -> its run header's metrics (context_chars for the recommendation)."""
    _pvalues: dict[tuple[int, int], tuple[float, int] | None] = field(default_factory=dict)
    """(best, other) -> (paired test p-value, questions), None if untestable; recomputed
    only for a new best."""

    def add(self, record: TrialRecord, run: RunLog | None) -> None:
        """Take a trial's (last) record and, when its run folder exists, its log."""
        self.trials[record.number] = record
        if run is None:
            return
        s = run.header.stats
        self.stats[record.number] = {
            **{k: int(getattr(s, k) or 0) for k in _STAT_KEYS},
            "cost_usd": float(s.cost_usd or 0.0),
            "naive_calls": len(run.questions) * run.header.k * 2,
        }
        for q in run.questions:
            for jh in q.hits:
                for cv in (jh.verdict.relevant, jh.verdict.complete):
                    if not cv.reason.startswith("not asked") and cv.error is None:
                        self.distinct.add((q.question.text, jh.chunk.text, cv.criterion))
        if record.state == "complete":
            self.metrics[record.number] = dict(run.header.metrics)
        if record.state == "complete" and len(self.objective) == 1:
            key = metric_key(self.objective[0], int(record.params["k"]))
            self.per_question[record.number] = {
                q.question.question_id: q.metrics[key] for q in run.questions if key in q.metrics
            }

    def add_from_disk(self, records: Iterable[TrialRecord]) -> None:
        """Take the trials of a resumed sweep, reading each run folder once."""
        for record in records:
            folder = Path(record.run_dir) if record.run_dir else None
            run = read_run(folder) if folder and (folder / HEADER).is_file() else None
            self.add(record, run)

    def source_judge_warning(self, default_k: int) -> str | None:
        """A warning when source_mrr@k (generated questions' source labels) and the
        judge's mrr@k pick different complete trials (#24); None when they agree or the
        sweep's questions have no source. `default_k` is k when the sweep does not vary it."""
        return source_judge_disagreement(
            {
                n: (m, int(self.trials[n].params.get("k", default_k)))
                for n, m in self.metrics.items()
                if n in self.trials
            }
        )

    def counts(self) -> TrialCounts:
        """Trials by final state."""
        states = [t.state for t in self.trials.values()]
        return TrialCounts(
            complete=states.count("complete"),
            pruned=states.count("pruned"),
            failed=states.count("failed"),
            repeats=states.count("repeat"),
        )

    def _tie(self, best: int, other: int) -> bool:
        if (best, other) not in self._ties:
            base, them = self.per_question.get(best, {}), self.per_question.get(other, {})
            shared = [q for q in base if q in them]
            tie = False
            if len(shared) >= 2:
                _, low, high = paired_bootstrap(
                    [base[q] for q in shared],
                    [them[q] for q in shared],
                    confidence=self.confidence,
                )
                tie = low <= 0 <= high
            self._ties[(best, other)] = tie
        return self._ties[(best, other)]

    def best(self) -> list[BestTrial]:
        """The best trial or Pareto front; for one objective, with the complete trials
        whose paired bootstrap interval (over shared questions) of the difference to the
        best contains 0."""
        front = best_trials(self.trials.values(), self.objective)
        if len(self.objective) != 1 or not front:
            return front
        top = front[0]
        ties = [
            n
            for n, t in sorted(self.trials.items())
            if t.state == "complete" and n != top.number and self._tie(top.number, n)
        ]
        return [
            BestTrial(top.number, top.params, top.values, top.run_dir, ties, self.confidence),
            *front[1:],
        ]

    def _p_value(self, best: int, other: int) -> tuple[float, int] | None:
        if (best, other) not in self._pvalues:
            base, them = self.per_question.get(best, {}), self.per_question.get(other, {})
            shared = [q for q in base if q in them]
            self._pvalues[(best, other)] = (
                (
                    paired_permutation_p([base[q] for q in shared], [them[q] for q in shared]),
                    len(shared),
                )
                if len(shared) >= 2
                else None
            )
        return self._pvalues[(best, other)]

    def recommendation(self) -> Recommendation | None:
        """The cheapest trial a paired test cannot separate from the best (see
        harness.sweep.recommend); None for two objectives or before a trial completes.
        Only tests against a new best are computed; the rest come from the cache."""
        if len(self.objective) != 1:
            return None
        sign = 1.0 if directions(self.objective)[0] == "maximize" else -1.0
        ranked = sorted(
            (t for t in self.trials.values() if t.state == "complete" and t.values),
            key=lambda t: (-sign * (t.values or [0.0])[0], t.number),
        )
        return recommend(self.objective[0], ranked, self.per_question, self.metrics, self._p_value)

    def sweep_stats(self, batch: dict[str, Any] | None = None) -> SweepStats:
        """Cost of the sweep, summed over the trials' logs (see SweepStats), plus what
        its batch jobs cost (`batch`: `harness.judge.batch.BatchState.stats`)."""
        total = {k: 0 for k in (*_STAT_KEYS, "naive_calls")}
        cost = 0.0
        for s in self.stats.values():
            for k in total:
                total[k] += s[k]
            cost += s["cost_usd"]
        extra: dict[str, Any] = {}
        if batch:
            cost += batch["batch_cost_usd"]
            total["prompt_tokens"] += batch["batch_prompt_tokens"]
            total["completion_tokens"] += batch["batch_completion_tokens"]
            extra = {
                "batch_verdicts": batch["batch_verdicts"],
                "batch_cost_usd": batch["batch_cost_usd"],
            }
        return SweepStats(
            cost_usd=round(cost, 6), distinct_verdicts=len(self.distinct), **total, **extra
        )
