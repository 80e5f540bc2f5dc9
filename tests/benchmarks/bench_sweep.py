"""Benchmark: the same seeded sweep of the quick-start space twice, with the local judge.

    make bench-sweep   (or: .venv/bin/python tests/benchmarks/bench_sweep.py [--trials N])

Both sweeps share one fresh verdict/index cache (only the joined judge model is reused from
the user's cache), and both decide on mrr@k: lazy judging needs a yes/no objective (the
default objective, soft_mrr@k, reads every chunk's probability, so its sweep is judged
completely, which is the second row's cost). The first judges lazily (each question
stops once its objective is settled); the second is the same sweep judged completely
(`judge.lazy=false`): on the shared cache it pays only the verdicts lazy judging skipped,
so the calls without lazy judging are the two sweeps' calls together. Prints, per sweep:
trials completed and pruned, judge calls, cache hits, distinct verdicts, the calls a tool
without a cache would make (trials x questions x k x criteria) and their ratio to the
calls paid so far, wall seconds and the objective's best trial (it must be the same).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, fresh_cache, print_table, quiet

from harness.config import load_experiment
from harness.sweep import run_sweep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart-sweep.toml"))
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    quiet()
    sets = ['sweep.objective=["mrr@k"]', *args.set]
    config = load_experiment(args.experiment, sets)
    rows = []
    ran = ""
    with tempfile.TemporaryDirectory(prefix="harness-bench-sweep-") as tmp:
        cache = fresh_cache(Path(tmp))
        paid = 0
        for label, lazy in (("lazy", "true"), ("complete", "false")):
            t0 = time.perf_counter()
            swept = load_experiment(args.experiment, [*sets, f"judge.lazy={lazy}"])
            log = run_sweep(
                swept, results_dir=Path(tmp) / label, cache_dir=cache, trials=args.trials
            )
            wall = time.perf_counter() - t0
            c, st = log.summary.counts, log.summary.stats
            ran = f"{log.summary.n_trials_requested} trials ({log.summary.sampler.name})"
            best = log.summary.best[0] if log.summary.best else None
            paid += st.judge_calls
            rows.append(
                (
                    label,
                    c.complete,
                    c.pruned,
                    c.failed,
                    st.judge_calls,
                    paid,
                    st.judge_cache_hits,
                    st.distinct_verdicts,
                    st.naive_calls,
                    f"{st.naive_calls / paid:.1f}" if paid else "-",
                    f"{wall:.0f}",
                    best.number if best else "-",
                    best.values[0] if best and best.values else "-",
                    best.params if best else "",
                )
            )
    print_table(
        f"sweep benchmark: {config.name}, {ran}, seed {config.sweep.seed}, "
        f"objective {' & '.join(config.sweep.objective)}",
        (
            "sweep",
            "complete",
            "pruned",
            "failed",
            "judge_calls",
            "calls_so_far",
            "cache_hits",
            "distinct",
            "no_cache_calls",
            "naive/paid",
            "wall_s",
            "best_trial",
            "best",
            "best_params",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
