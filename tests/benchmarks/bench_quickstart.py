"""Benchmark: the quick-start experiment twice, cold then warm.

    make bench            (or: .venv/bin/python tests/benchmarks/bench_quickstart.py)

The first run starts from an empty verdict/index/embedding cache; the second reuses it and
should make zero judge calls and embed nothing. Only the joined judge model file is shared
with the user's cache, so its one-off assembly is not timed. Prints one row per run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import ROOT, fresh_cache, print_table, quiet

from harness.config import load_experiment
from harness.pipeline import run_experiment


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    quiet()
    config = load_experiment(args.experiment, args.set)
    k = config.retrieval.k
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        cache = fresh_cache(Path(tmp))
        for label in ("cold", "warm"):
            run = run_experiment(config, results_dir=Path(tmp) / "results", cache_dir=cache)
            s = run.header.stats
            median = s.get("judge_call_median_s")
            rows.append(
                (
                    label,
                    f"{s['index_s']:.2f}",
                    s["judge_calls"],
                    s["judge_cache_hits"],
                    f"{median:.3f}" if median is not None else "-",
                    f"{s['total_s']:.1f}",
                    s["embedded_texts"],
                    f"{run.header.metrics.get(f'mrr@{k}', float('nan')):.3f}",
                )
            )
    d = run.header.data
    print_table(
        f"quick-start benchmark: {config.name}, {d['n_questions']} questions, {d['n_chunks']} "
        f"chunks, k={k}, judge {run.header.components['judge'].args.get('model')}",
        (
            "run",
            "index_s",
            "judge_calls",
            "cache_hits",
            "median_call_s",
            "total_s",
            "embedded",
            f"mrr@{k}",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
