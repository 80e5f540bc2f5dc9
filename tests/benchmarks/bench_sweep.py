"""Benchmark: the same seeded sweep of the quick-start space twice, with the local judge.

    make bench-sweep   (or: .venv/bin/python tests/benchmarks/bench_sweep.py [--trials N])

Both sweeps share one fresh verdict/index cache (only the joined judge model is reused from
the user's cache). Prints, per sweep: trials completed and pruned, judge calls, cache hits,
distinct verdicts, the calls a tool without a cache would make (trials x questions x k x
criteria), and wall seconds. The second sweep should make zero judge calls.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from loguru import logger

from harness.config import load_experiment
from harness.pipeline import default_cache_dir
from harness.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart-sweep.toml"))
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    config = load_experiment(args.experiment, args.set)
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-sweep-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        models = default_cache_dir() / "models"
        models.mkdir(parents=True, exist_ok=True)
        os.symlink(models, cache / "models")
        for label in ("first", "second"):
            t0 = time.perf_counter()
            log = run_sweep(
                config, results_dir=Path(tmp) / label, cache_dir=cache, trials=args.trials
            )
            wall = time.perf_counter() - t0
            c, st = log.summary["counts"], log.summary["stats"]
            best = (log.summary["best"] or [{}])[0]
            rows.append(
                (
                    label,
                    c["complete"],
                    c["pruned"],
                    c["failed"],
                    st["judge_calls"],
                    st["judge_cache_hits"],
                    st["distinct_verdicts"],
                    st["naive_calls"],
                    f"{wall:.0f}",
                    f"{best.get('values', ['-'])[0]}",
                    str(best.get("params", "")),
                )
            )
    head = (
        "sweep",
        "complete",
        "pruned",
        "failed",
        "judge_calls",
        "cache_hits",
        "distinct",
        "no_cache_calls",
        "wall_s",
        "best",
        "best_params",
    )
    print(
        f"sweep benchmark: {config.name}, {args.trials} trials, seed {config.sweep.seed}, "
        f"objective {' & '.join(config.sweep.objective)}"
    )
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(str(h).rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
