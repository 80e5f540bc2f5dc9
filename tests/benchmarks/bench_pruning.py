"""Benchmark: does pruning throw away the setting that is best on all the questions?

    harness sweep experiments/quickstart-sweep.toml --set sweep.pruner=none --name grid-all
    .venv/bin/python tests/benchmarks/bench_pruning.py results/grid-all [--metric mrr]

Reads a sweep whose trials all ran to the end (sweep.pruner = "none"; a grid, so every
setting is there) and replays the rule a sweep prunes by over random trial orders: a
trial reports its running mean of the objective after each batch of questions
(sweep.batches), and stops when even its best report so far is below the median of the
complete trials' reports at the same batch, once 2 trials are complete (Optuna's
MedianPruner as `harness sweep` sets it up). For the sweep's questions and for their
first 12 (a short question set: batches after 3 and 6), and for each "no pruning before
n questions" rule: how often the best setting was pruned, the regret (the best's value
minus the best value among the trials that completed), and the share of questions judged
against a sweep without pruning. Verdicts are read from the trials' logs: no judge call.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

from common import print_table

from harness.log import read_run, read_sweep


def _batches(shares: list[float], n: int) -> list[int]:
    """Question counts after which a trial reports (as harness.sweep.study does)."""
    return sorted({max(1, math.ceil(s * n)) for s in shares} | {n})


def _replay(order: list[int], values: dict[int, list[float]], batches: list[int], warmup: int):
    """The trials that complete in this order, and the questions judged."""
    complete: list[dict[int, float]] = []
    kept: list[int] = []
    judged = 0
    for trial in order:
        reports: dict[int, float] = {}
        pruned = False
        for b in batches:
            reports[b] = sum(values[trial][:b]) / b
            judged_here = b
            if b == batches[-1] or len(complete) < 2 or b < warmup:
                continue
            if max(reports.values()) < statistics.median(c[b] for c in complete):
                pruned = True
                break
        judged += judged_here
        if not pruned:
            complete.append(reports)
            kept.append(trial)
    return kept, judged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", help="a sweep folder whose trials ran without pruning")
    parser.add_argument("--metric", default="", help="default: the sweep's objective")
    parser.add_argument("--orders", type=int, default=2000, help="random trial orders")
    args = parser.parse_args()
    sweep = read_sweep(Path(args.sweep))
    objective = sweep.summary.objective[0]
    metric = args.metric or objective.split("@")[0]
    values: dict[int, list[float]] = {}
    for t in sweep.trials:
        if t.state != "complete":
            continue
        run = read_run(Path(t.run_dir))
        key = f"{metric}@{t.params['k']}"
        values[t.number] = [float(q.metrics.get(key, 0.0)) for q in run.questions]
    if len(values) < 3:
        print(f"{args.sweep}: {len(values)} complete trials; run the sweep with pruner none")
        return 2
    shares = list(sweep.summary.config["sweep"]["batches"])
    n_all = min(len(v) for v in values.values())
    rows = []
    for n in sorted({min(12, n_all), n_all}):
        cut = {t: v[:n] for t, v in values.items()}
        final = {t: sum(v) / n for t, v in cut.items()}
        best = max(final.values())
        batches = _batches(shares, n)
        for warmup in sorted({w for w in (0, 10, 20) if w < n} | {n}):
            rng = random.Random(0)
            lost, regrets, judged = 0, [], []
            for _ in range(args.orders):
                order = list(cut)
                rng.shuffle(order)
                kept, cost = _replay(order, cut, batches, warmup)
                got = max(final[t] for t in kept)
                lost += got < best - 1e-12
                regrets.append(best - got)
                judged.append(cost / (n * len(order)))
            rows.append(
                (
                    n,
                    "/".join(map(str, batches)),
                    warmup,
                    f"{lost / args.orders:.2f}",
                    f"{statistics.mean(regrets):.4f}",
                    f"{max(regrets):.4f}",
                    f"{statistics.mean(judged):.2f}",
                )
            )
    print_table(
        f"pruning replayed: {sweep.summary.sweep_id}, {len(values)} settings, {metric}@k, "
        f"{args.orders} random trial orders",
        (
            "questions",
            "batches",
            "no_pruning_before",
            "best_lost",
            "mean_regret",
            "max_regret",
            "judged_share",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
